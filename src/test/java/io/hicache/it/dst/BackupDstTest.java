package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deterministic simulation suite of the backup controller (see {@link DstHarness}). Runs
 * {@code -Dhicache.dst.seeds=N} seeds (default 2,000) starting at {@code -Dhicache.dst.firstSeed} (default 1), or
 * exactly one with {@code -Dhicache.dst.seed=S}. A failure names the seed and the command that replays it.
 */
class BackupDstTest {

    static final String REPLAY = "./run-tests -pl integration-tests -am -Dtest=BackupDstTest "
        + "-Dhicache.dst.seed=%d -Dsurefire.failIfNoSpecifiedTests=false";

    @Test
    void seededSchedulesKeepEveryInvariant() {
        String one = System.getProperty("hicache.dst.seed");
        long first = one != null ? Long.parseLong(one) : Long.getLong("hicache.dst.firstSeed", 1L);
        long count = one != null ? 1 : Long.getLong("hicache.dst.seeds", 2_000L);
        Map<String, Integer> totals = new TreeMap<>();
        long startNs = System.nanoTime();
        for (long seed = first; seed < first + count; seed++) {
            runSeed(seed, totals, one != null);
        }
        long ms = (System.nanoTime() - startNs) / 1_000_000;
        System.out.printf("DST: %d seeds from %d in %d ms; %s%n", count, first, ms, totals);
        assertThat(totals.getOrDefault("reserved", 0)).isPositive();
    }

    private static void runSeed(long seed, Map<String, Integer> totals, boolean verbose) {
        DstHarness h = null;
        try {
            h = new DstHarness(seed);
            if (verbose) {
                System.out.println("DST seed " + seed + ": " + h.describe());
            }
            h.run();
            h.stats.forEach((k, v) -> totals.merge(k, v, Integer::sum));
        } catch (Throwable t) {
            String config = h == null ? "(construction failed)" : h.describe();
            String steps = h == null ? "" : "\nlast steps:" + h.recentSteps();
            if (h != null) {
                h.abandon();
            }
            throw new AssertionError("DST seed " + seed + " failed: " + t + "\nconfig: " + config + steps
                + "\nreplay: " + String.format(REPLAY, seed), t);
        }
    }
}
