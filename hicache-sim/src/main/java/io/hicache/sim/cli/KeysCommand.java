package io.hicache.sim.cli;

import io.hicache.core.memory.HostLayout;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageKeys;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code hicache-sim keys}: the storage keys of a token sequence, one 64-hex key per line and nothing else on
 * standard output (an operator's tool for inspecting a store). Bad input is one line on standard error naming the
 * flag or the file, exit 2.
 */
@Command(name = "keys", mixinStandardHelpOptions = true,
        description = {"Print the L3 page keys of a file of whitespace-separated token ids, one per line.",
                "--namespace none gives exactly SGLang's keys; otherwise the chain is seeded with the namespace.",
                "A trace is not made of keys: 'convert --from token-ids' hashes token ids into a hicache trace by the "
                        + "same rule (its hash_ids number these keys; 'convert --keys-out' lists which is which)."})
final class KeysCommand implements Callable<Integer> {
    private final Main.Env env;

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--page-size", paramLabel = "N", required = true,
            description = "Tokens (with --bigram: id pairs) per page, >= 1.")
    int pageSize;

    @Option(names = "--bigram", description = "EAGLE bigram pages: the file holds n+1 ids making n (previous, next) pairs.")
    boolean bigram;

    @Option(names = "--namespace", paramLabel = "none|K=V,...", defaultValue = "none",
            description = "none (default: SGLang's keys), or model=ID,dtype=T[,layout=L][,role=target|draft]"
                    + "[,tp=N,tp-rank=R][,cp=N,cp-lane=L][,lora=ID][,salt=S]: the seed of the chain.")
    String namespace;

    @Parameters(index = "0", paramLabel = "FILE", description = "Whitespace-separated token ids (unsigned 32-bit).")
    Path file;

    KeysCommand(Main.Env env) {
        this.env = env;
    }

    @Override
    public Integer call() {
        CommandLine cl = spec.commandLine();
        if (pageSize < 1) {
            throw RunPlan.usage(cl, "--page-size must be >= 1, got " + pageSize);
        }
        KeyNamespace ns = parseNamespace(cl);
        Path path = env.workDir().resolve(file);
        String text;
        try {
            text = Files.readString(path, StandardCharsets.UTF_8);
        } catch (IOException | java.io.UncheckedIOException e) {
            throw RunPlan.usage(cl, "FILE: cannot read " + file + ": "
                    + (e instanceof java.nio.file.NoSuchFileException ? "no such file" : e.getMessage()));
        }
        String[] words = text.trim().isEmpty() ? new String[0] : text.trim().split("\\s+");
        int[] ids = new int[words.length];
        for (int i = 0; i < words.length; i++) {
            long v;
            try {
                v = Long.parseLong(words[i]);
            } catch (NumberFormatException e) {
                v = -1;
            }
            if (v < 0 || v > 0xFFFF_FFFFL) {
                throw RunPlan.usage(cl, "FILE: token " + (i + 1) + " of " + file + " is not an unsigned 32-bit id: '"
                        + (words[i].length() > 24 ? words[i].substring(0, 24) + "..." : words[i]) + "'");
            }
            ids[i] = (int) v;
        }
        PageKey seed = ns == null ? null : ns.seed();
        PageKey[] keys;
        if (bigram) {
            if (ids.length < 2) {
                throw RunPlan.usage(cl, "FILE: --bigram needs at least 2 token ids, " + file + " has " + ids.length);
            }
            keys = PageKeys.bigramChain(seed, ids, pageSize);
        } else {
            keys = PageKeys.chain(seed, ids, pageSize);
        }
        StringBuilder out = new StringBuilder(keys.length * 65);
        for (PageKey k : keys) {
            out.append(k.hex()).append('\n');
        }
        env.out().print(out);
        env.out().flush();
        return CommandLine.ExitCode.OK;
    }

    private KeyNamespace parseNamespace(CommandLine cl) {
        if (namespace.equals("none")) {
            return null;
        }
        KeyNamespace.Builder b = KeyNamespace.builder().pageSizeTokens(pageSize).hostLayout(HostLayout.LAYER_FIRST);
        int tp = 1;
        int tpRank = 0;
        int cp = 1;
        int cpLane = 0;
        for (String part : namespace.split(",")) {
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw RunPlan.usage(cl, "--namespace must be none or K=V pairs separated by commas, got a part without"
                        + " '=': '" + (part.startsWith("salt") ? "salt..." : part) + "'");
            }
            String k = part.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            String v = part.substring(eq + 1).trim();
            try {
                switch (k) {
                    case "model" -> b.modelId(v);
                    case "dtype" -> b.kvDtype(v);
                    case "layout" -> b.hostLayout(HostLayout.valueOf(v.toUpperCase(Locale.ROOT).replace('-', '_')));
                    case "role" -> b.role(KeyNamespace.Role.valueOf(v.toUpperCase(Locale.ROOT)));
                    case "tp" -> tp = Integer.parseInt(v);
                    case "tp-rank" -> tpRank = Integer.parseInt(v);
                    case "cp" -> cp = Integer.parseInt(v);
                    case "cp-lane" -> cpLane = Integer.parseInt(v);
                    case "lora" -> b.loraAdapterId(v);
                    case "salt" -> b.salt(v);
                    default -> throw RunPlan.usage(cl, "--namespace: unknown field '" + k + "'; valid: model, dtype, "
                            + "layout, role, tp, tp-rank, cp, cp-lane, lora, salt");
                }
            } catch (IllegalArgumentException e) {
                throw RunPlan.usage(cl, "--namespace: bad value for " + k
                        + (k.equals("salt") ? "" : ": '" + v + "'"));
            }
        }
        try {
            return b.tp(tp, tpRank).cp(cp, cpLane).build();
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, "--namespace: " + e.getMessage());
        }
    }
}
