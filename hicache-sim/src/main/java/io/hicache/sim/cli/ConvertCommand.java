package io.hicache.sim.cli;

import io.hicache.sim.convert.BpeTokenizer;
import io.hicache.sim.convert.LogConverter;
import io.hicache.sim.convert.LogShape;
import io.hicache.sim.convert.Tokenizer;
import io.hicache.sim.convert.WhitespaceTokenizer;
import io.hicache.sim.trace.HicacheTraceReader;
import io.hicache.sim.trace.TraceTimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;

/**
 * {@code hicache-sim convert}: a request log of a shape people keep into a {@code hicache} trace the simulator replays
 * ({@link LogConverter}). Usage errors (a shape that needs a flag it lacks, flags that mean nothing for the shape)
 * exit 2 before anything is read; a log out of arrival order without {@code --sort}, or one of which no record
 * could be converted, exits 1; rejected records are listed on standard error with their lines and counted in the
 * report on standard output.
 */
@Command(name = "convert", mixinStandardHelpOptions = true,
        description = {"Convert your own request log into a hicache trace (replay it with --trace hicache:OUT).",
                "Blocks are hashed from token ids in prefix chains, as the L3 tier keys pages."},
        footer = {"",
                "Input shapes (--from; one JSON object per line unless said otherwise, timestamps in ms unless --time-unit):",
                "  token-ids:   {\"timestamp\", \"input_ids\": [ids], \"output_length\": n}; optional \"output_ids\": [ids]",
                "               (the answer, which the next turn can then hit) and \"conversation_id\".",
                "  sessions:    {\"timestamp\", \"conversation_id\", \"turn\", \"input_length\", \"output_length\"}: input_length",
                "               is the whole prompt, the previous turn's prompt and answer plus a new question; token ids are",
                "               made up, one stream per conversation, so turns share their history.",
                "  openai-chat: {\"timestamp\", \"messages\": [{\"role\", \"content\"}], \"completion\": \"...\"}; optional",
                "               \"conversation_id\". Rendered as ChatML (<|im_start|>role\\ncontent<|im_end|>\\n, then",
                "               <|im_start|>assistant\\n; the answer is the completion and <|im_end|>), each piece tokenized",
                "               on its own with --tokenizer FILE (a HuggingFace tokenizer.json: byte-level BPE, as GPT-2,",
                "               Llama 3, Qwen 2/3, DeepSeek V3 ship) or, labelled as an approximation, --whitespace-tokens.",
                "  azure-csv:   the Azure LLM inference trace, header TIMESTAMP,ContextTokens,GeneratedTokens (TIMESTAMP",
                "               yyyy-MM-dd HH:mm:ss.fraction, UTC). It has no prefix information: converted only with",
                "               --unique-prefixes (every prompt gets blocks of its own, labelled unique_prefixes; no hits).",
                "Rejected records: one line each on standard error (IN:LINE: rejected: why), counted in the report.",
                "Exit status: 0 converted (rejected records counted), 1 nothing converted, a record out of time order",
                "without --sort, or an I/O error (FILE:LINE: why), 2 usage error."})
final class ConvertCommand implements Callable<Integer> {
    private final Main.Env env;

    @Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--from", paramLabel = "SHAPE", required = true,
            description = "The log's shape: openai-chat, token-ids, sessions, azure-csv.")
    String from;

    @Parameters(index = "0", paramLabel = "IN", description = "The log (.gz read as gzip).")
    Path in;

    @Option(names = "--out", paramLabel = "OUT", required = true, description = "The hicache trace to write.")
    Path out;

    @Option(names = "--block-tokens", paramLabel = "N", defaultValue = "16",
            description = "Tokens per block of the trace (default 16, SGLang's usual page size).")
    int blockTokens;

    @Option(names = "--tokenizer", paramLabel = "FILE",
            description = "openai-chat: a HuggingFace tokenizer.json (byte-level BPE).")
    Path tokenizer;

    @Option(names = "--whitespace-tokens",
            description = "openai-chat without a tokenizer file: count whitespace-separated words as tokens (an "
                    + "approximation; the records and the replay say so).")
    boolean whitespaceTokens;

    @Option(names = "--unique-prefixes",
            description = "azure-csv: the log says nothing about shared prefixes; give every prompt blocks of its own "
                    + "(labelled: such a trace measures no reuse).")
    boolean uniquePrefixes;

    @Option(names = "--time-unit", paramLabel = "s|ms|us",
            description = "Unit of the log's numeric timestamps (default ms).")
    String timeUnit;

    @Option(names = "--sort",
            description = "Convert a log whose timestamps go backwards in timestamp order (counted); without it such a "
                    + "log is refused with the line.")
    boolean sort;

    @Option(names = "--keys-out", paramLabel = "FILE",
            description = "Also write each hash id's L3 page key, 'ID HEX' per line (the keys 'keys --namespace none' "
                    + "prints for the same tokens).")
    Path keysOut;

    ConvertCommand(Main.Env env) {
        this.env = env;
    }

    @Override
    public Integer call() {
        CommandLine cl = spec.commandLine();
        LogShape shape;
        try {
            shape = LogShape.byName(from);
        } catch (IllegalArgumentException e) {
            throw RunPlan.usage(cl, "--from: " + e.getMessage());
        }
        if (blockTokens < 1 || blockTokens > HicacheTraceReader.MAX_BLOCK_TOKENS) {
            throw RunPlan.usage(cl, "--block-tokens must be in [1, " + HicacheTraceReader.MAX_BLOCK_TOKENS + "], got "
                    + blockTokens);
        }
        TraceTimeUnit unit = TraceTimeUnit.MS;
        if (timeUnit != null) {
            try {
                unit = TraceTimeUnit.byName(timeUnit);
            } catch (IllegalArgumentException e) {
                throw RunPlan.usage(cl, "--time-unit: " + e.getMessage());
            }
        }
        if (shape.needsTokenizer() && tokenizer == null && !whitespaceTokens) {
            throw RunPlan.usage(cl, "--from " + shape + " holds text: give --tokenizer FILE (a HuggingFace "
                    + "tokenizer.json) or, for an approximation labelled as such, --whitespace-tokens");
        }
        if (tokenizer != null && whitespaceTokens) {
            throw RunPlan.usage(cl, "--tokenizer and --whitespace-tokens exclude each other; choose one");
        }
        if (!shape.needsTokenizer() && (tokenizer != null || whitespaceTokens)) {
            throw RunPlan.usage(cl, (tokenizer != null ? "--tokenizer" : "--whitespace-tokens") + " has no effect with "
                    + "--from " + shape + " (it has no text to tokenize)");
        }
        if (!shape.hasPrefixInformation() && !uniquePrefixes) {
            throw RunPlan.usage(cl, "--from " + shape + ": the log has no prefix information (no token ids, texts or "
                    + "conversations), so which prompts share blocks cannot be known; pass --unique-prefixes to give "
                    + "every prompt blocks of its own (the trace then measures no reuse, and says so)");
        }
        if (shape.hasPrefixInformation() && uniquePrefixes) {
            throw RunPlan.usage(cl, "--unique-prefixes is for logs without prefix information (azure-csv); --from "
                    + shape + " has it");
        }
        Path input = env.workDir().resolve(in);
        if (!Files.isRegularFile(input)) {
            throw RunPlan.usage(cl, "IN: no such file: " + input);
        }
        Path output = env.workDir().resolve(out);
        RunPlan.requireDirectoryOf(cl, env, out);
        RunPlan.requireDirectoryOf(cl, env, keysOut);
        if (output.toAbsolutePath().normalize().equals(input.toAbsolutePath().normalize())) {
            throw RunPlan.usage(cl, "--out is the input file; write the trace elsewhere");
        }
        Tokenizer tok = null;
        if (whitespaceTokens) {
            tok = new WhitespaceTokenizer();
        } else if (tokenizer != null) {
            Path file = env.workDir().resolve(tokenizer);
            if (!Files.isRegularFile(file)) {
                throw RunPlan.usage(cl, "--tokenizer: no such file: " + file);
            }
            try {
                tok = BpeTokenizer.load(file);
            } catch (IllegalArgumentException e) {
                throw RunPlan.usage(cl, "--tokenizer: " + e.getMessage());
            } catch (IOException e) {
                throw RunPlan.usage(cl, "--tokenizer: cannot read " + file + ": " + e.getMessage());
            }
        }
        LogConverter.Result r;
        try {
            r = LogConverter.convert(input, output, new LogConverter.Options(shape, blockTokens, tok, uniquePrefixes,
                    unit, sort, keysOut == null ? null : env.workDir().resolve(keysOut)), env.err());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot convert " + input + ": " + e.getMessage(), e);
        }
        report(shape, tok, r);
        if (r.converted() == 0) {
            env.err().println("hicache-sim: error: " + input + ": no record could be converted (" + r.rejected()
                    + " rejected" + (r.read() == 0 ? "; the log is empty" : "") + ")");
            return CommandLine.ExitCode.SOFTWARE;
        }
        return CommandLine.ExitCode.OK;
    }

    private void report(LogShape shape, Tokenizer tok, LogConverter.Result r) {
        var o = env.out();
        o.printf(Locale.ROOT, "converted %,d of %,d records of %s (%s) into %s: hicache trace, %d-token blocks%n",
                r.converted(), r.read(), in, shape, out, blockTokens);
        if (r.rejected() > 0) {
            o.printf(Locale.ROOT, "rejected %,d records (each listed above with its line)%n", r.rejected());
        }
        if (r.sorted() > 0) {
            o.printf(Locale.ROOT, "%,d records came earlier than a record before them: written in timestamp order"
                    + " (--sort)%n", r.sorted());
        }
        String tokens = switch (shape) {
            case TOKEN_IDS -> "the log's input_ids";
            case OPENAI_CHAT -> tok.label();
            case SESSIONS -> "made up, one stream per conversation (each turn repeats its history)";
            case AZURE_CSV -> "made up, every prompt its own (--unique-prefixes: the log has no prefix information,"
                    + " so this trace measures no reuse)";
        };
        o.printf(Locale.ROOT, "tokens: %s%n", tokens);
        double share = r.promptTokens() == 0 ? 0 : (double) r.repeatedTokens() / r.promptTokens();
        o.printf(Locale.ROOT, "%,d prompt tokens, %,d distinct blocks; %,d prompt tokens (%.4f) lie in leading blocks"
                        + " an earlier record has: what an unlimited cache can hit%n", r.promptTokens(),
                r.distinctBlocks(), r.repeatedTokens(), share);
        if (keysOut != null) {
            o.println("wrote " + keysOut + " (hash id -> L3 page key)");
        }
        o.println("replay it: hicache-sim replay --trace hicache:" + out);
    }
}
