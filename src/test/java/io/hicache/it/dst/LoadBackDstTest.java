package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deterministic simulation suite with load-back in the schedule (see {@link DstHarness}, built with loads):
 * host hits loaded back after device evictions, with random quotas and thresholds, refusing device allocators,
 * batches issued at random points (and ring reuse provoked), forwards waiting per layer, H2D copy faults, CP
 * groups, host eviction pressure, aborts and evictions in between. Runs {@code -Dhicache.dst.loadSeeds=N} seeds
 * (default 1,000) from {@code -Dhicache.dst.firstSeed} (default 1), or exactly one with
 * {@code -Dhicache.dst.seed=S}. A failure names the seed and the command that replays it.
 */
class LoadBackDstTest {

    static final String REPLAY = "./run-tests -pl integration-tests -am -Dtest=LoadBackDstTest "
        + "-Dhicache.dst.seed=%d -Dsurefire.failIfNoSpecifiedTests=false";

    @Test
    void seededSchedulesWithLoadBackKeepEveryInvariant() {
        String one = System.getProperty("hicache.dst.seed");
        long first = one != null ? Long.parseLong(one) : Long.getLong("hicache.dst.firstSeed", 1L);
        long count = one != null ? 1 : Long.getLong("hicache.dst.loadSeeds", 1_000L);
        Map<String, Integer> totals = new TreeMap<>();
        long startNs = System.nanoTime();
        for (long seed = first; seed < first + count; seed++) {
            runSeed(seed, totals, one != null);
        }
        long ms = (System.nanoTime() - startNs) / 1_000_000;
        System.out.printf("DST with load-back: %d seeds from %d in %d ms; %s%n", count, first, ms, totals);
        if (one == null && count >= 200) {
            // the schedules reach every path the suite is meant to cover
            assertThat(totals).containsKeys("load.loaded", "load.failed", "load.forward", "load.ringReuseRefused",
                "load.allocationRefusedOnce", "load.faultInjected", "load.duplicatePageFreed",
                "load.hostEvictionWhileLoading", "committed");
        }
    }

    private static void runSeed(long seed, Map<String, Integer> totals, boolean verbose) {
        DstHarness h = null;
        try {
            h = new DstHarness(seed, true);
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
            throw new AssertionError("DST (load-back) seed " + seed + " failed: " + t + "\nconfig: " + config + steps
                + "\nreplay: " + String.format(REPLAY, seed), t);
        }
    }
}
