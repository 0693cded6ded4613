package io.hicache.it.dst;

import java.util.Map;
import java.util.TreeMap;

/**
 * Runs a DST suite's seeds: {@code -Dhicache.dst.seed=S} replays exactly one (verbosely), otherwise
 * {@code countProperty} seeds (default {@code defaultCount}) from {@code -Dhicache.dst.firstSeed} (default 1). A
 * failure names the seed, the harness's setup, its last steps and the command that replays it.
 */
final class DstSeeds {
    /**
     * {@code -Dhicache.dst.digest=true}: print {@code DST-DIGEST suite seed fingerprint} after each seed that passed
     * ({@code scripts/dst --digest} collects them), so two builds can be shown to replay every seed the same.
     */
    static final boolean DIGESTS = Boolean.getBoolean("hicache.dst.digest");

    private DstSeeds() {
    }

    /** The seed statistics summed over the run, and whether it replayed a single seed. */
    record Totals(Map<String, Integer> counts, long seeds, boolean single) {
    }

    static Totals run(String suite, boolean loads, String countProperty, long defaultCount, String replayFormat) {
        return run(suite, loads, false, countProperty, defaultCount, replayFormat);
    }

    static Totals run(String suite, boolean loads, boolean leases, String countProperty, long defaultCount,
                      String replayFormat) {
        return run(suite, loads, leases, false, countProperty, defaultCount, replayFormat);
    }

    static Totals run(String suite, boolean loads, boolean leases, boolean diverge, String countProperty,
                      long defaultCount, String replayFormat) {
        String one = System.getProperty("hicache.dst.seed");
        long first = one != null ? Long.parseLong(one) : Long.getLong("hicache.dst.firstSeed", 1L);
        long count = one != null ? 1 : Long.getLong(countProperty, defaultCount);
        Map<String, Integer> totals = new TreeMap<>();
        long startNs = System.nanoTime();
        for (long seed = first; seed < first + count; seed++) {
            runSeed(suite, seed, loads, leases, diverge, totals, one != null, replayFormat);
        }
        long ms = (System.nanoTime() - startNs) / 1_000_000;
        System.out.printf("%s: %d seeds from %d in %d ms; %s%n", suite, count, first, ms, totals);
        return new Totals(totals, count, one != null);
    }

    private static void runSeed(String suite, long seed, boolean loads, boolean leases, boolean diverge,
                                Map<String, Integer> totals, boolean verbose, String replayFormat) {
        DstHarness h = null;
        try {
            h = new DstHarness(seed, loads, leases, diverge);
            if (verbose) {
                System.out.println(suite + " seed " + seed + ": " + h.describe());
            }
            h.run();
            if (DIGESTS) {
                System.out.println("DST-DIGEST " + suite + " " + seed + " " + h.digest());
            }
            h.stats.forEach((k, v) -> totals.merge(k, v, Integer::sum));
        } catch (Throwable t) {
            String config = h == null ? "(construction failed)" : h.describe();
            String steps = h == null ? "" : "\nlast steps:" + h.recentSteps();
            if (h != null) {
                h.abandon();
            }
            throw new AssertionError(suite + " seed " + seed + " failed: " + t + "\nconfig: " + config + steps
                + "\nreplay: " + String.format(replayFormat, seed), t);
        }
    }
}
