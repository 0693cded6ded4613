package io.hicache.examples.jlama;

import io.hicache.cuda.simulated.HostThreadCudaRuntime;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The end-to-end scenario of scripts/jlama-demo, on one tiny seeded Llama served by Jlama:
 * <ol>
 *   <li>request A (a {@code --prompt-tokens} prompt) is prefilled with per-layer backups and generates
 *       {@code --generate} tokens; its backups commit;</li>
 *   <li>A's prefix is evicted from the device tier (its host copy stays);</li>
 *   <li>request B = A's prompt + {@code --suffix-tokens} new tokens: match (host hit), load-back, prefill of the
 *       suffix only, {@code --generate} tokens;</li>
 *   <li>B again on a fresh model instance with no cache: full prefill.</li>
 * </ol>
 * With {@code --load-overlap 1} (the default) B's prefill starts while its prefix loads, each layer waiting for
 * its own load; {@code 0} waits for the whole load first. Prints one JSON line comparing 3 with 4. Progress goes to stderr. Bad arguments: one line naming the flag and
 * its range, exit 2.
 */
public final class JlamaDemo {
    /** Vector API float reductions sum in an unspecified order, which differs between the interpreter and C2. */
    static final String DETERMINISM_FLAG = "-XX:DisableIntrinsic=_VectorReductionCoerced";

    private JlamaDemo() {
    }

    public static void main(String[] args) {
        int layers = 4;
        int promptTokens = 1024;
        int suffixTokens = 64;
        int generate = 16;
        long seed = 17;
        boolean overlap = true;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--layers" -> layers = intArg(a, v, 1, 16);
                case "--prompt-tokens" -> promptTokens = intArg(a, v, JlamaHiCacheEngine.PAGE_TOKENS, 4096);
                case "--suffix-tokens" -> suffixTokens = intArg(a, v, 1, 256);
                case "--generate" -> generate = intArg(a, v, 1, 256);
                case "--seed" -> seed = intArg(a, v, 0, Integer.MAX_VALUE);
                case "--load-overlap" -> overlap = intArg(a, v, 0, 1) == 1;
                default -> usage("unknown argument " + a);
            }
            i++;
        }
        if (promptTokens % JlamaHiCacheEngine.PAGE_TOKENS != 0) {
            usage("--prompt-tokens must be a multiple of " + JlamaHiCacheEngine.PAGE_TOKENS + ", was " + promptTokens);
        }
        if (!ManagementFactory.getRuntimeMXBean().getInputArguments().contains(DETERMINISM_FLAG)) {
            System.err.println("warning: run with -XX:+UnlockDiagnosticVMOptions " + DETERMINISM_FLAG
                + " or Jlama's Vector API sums may round differently before and after the JIT compiles them");
        }

        int total = promptTokens + suffixTokens;
        TinyLlama spec = TinyLlama.demo(layers, total + generate + JlamaHiCacheEngine.PAGE_TOKENS, seed);
        SplittableRandom r = new SplittableRandom(seed);
        int[] b = new int[total];
        for (int i = 0; i < total; i++) {
            b[i] = 3 + r.nextInt(spec.vocab() - 3);
        }
        int[] a = Arrays.copyOf(b, promptTokens);
        int pages = total / JlamaHiCacheEngine.PAGE_TOKENS + 1;

        Generation restored;
        long committed;
        int evicted;
        try (HostThreadCudaRuntime gpu = new HostThreadCudaRuntime();
             JlamaHiCacheEngine engine =
                 new JlamaHiCacheEngine(spec.newModel(), gpu, 2 * pages, 2 * pages, 2, overlap)) {
            progress("request A: %d-token prompt, %d layers", promptTokens, layers);
            Generation ga = engine.generate(a, generate);
            engine.awaitBackups();
            committed = engine.backupsCommitted();
            progress("A: TTFT %.1f ms, %d backups committed", ga.ttftNs() / 1e6, committed);
            evicted = engine.evictDevice(Integer.MAX_VALUE);
            progress("evicted %d device pages", evicted);
            restored = engine.generate(b, generate);
            progress("request B: %d restored + %d prefilled, TTFT %.1f ms", restored.restoredTokens(),
                restored.prefilledTokens(), restored.ttftNs() / 1e6);
        }
        Generation recomputed = Generation.recompute(spec.newModel(), b, generate);
        progress("request B recomputed on a fresh model: TTFT %.1f ms", recomputed.ttftNs() / 1e6);

        double diff = restored.maxAbsLogitDiff(recomputed);
        boolean same = Arrays.equals(restored.tokens(), recomputed.tokens());
        System.out.println(String.format(Locale.ROOT,
            "{\"layers\": %d, \"prompt_tokens\": %d, \"suffix_tokens\": %d, \"generated_tokens\": %d, "
                + "\"restored_tokens\": %d, \"prefilled_tokens_restored\": %d, \"device_pages_evicted\": %d, "
                + "\"load_overlap\": %b, \"backups_committed\": %d, \"max_abs_logit_diff\": %s, \"tokens_equal\": %b, "
                + "\"ttft_ms_restored\": %.3f, \"ttft_ms_recomputed\": %.3f}",
            layers, promptTokens, suffixTokens, generate, restored.restoredTokens(), restored.prefilledTokens(),
            evicted, overlap, committed, Double.toString(diff), same, restored.ttftNs() / 1e6, recomputed.ttftNs() / 1e6));
    }

    private static int intArg(String flag, String v, int min, int max) {
        try {
            int x = Integer.parseInt(v);
            if (x >= min && x <= max) {
                return x;
            }
        } catch (NumberFormatException | NullPointerException e) {
            // fall through to the usage line
        }
        usage(flag + " must be an integer in " + min + ".." + max + ", was " + v);
        return 0;
    }

    private static void usage(String message) {
        System.err.println("jlama-demo: " + message);
        System.exit(2);
    }

    private static void progress(String fmt, Object... args) {
        System.err.println("jlama-demo: " + String.format(Locale.ROOT, fmt, args));
    }
}
