package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

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
        DstSeeds.Totals totals = DstSeeds.run("DST (load-back)", true, "hicache.dst.loadSeeds", 1_000L, REPLAY);
        if (!totals.single() && totals.seeds() >= 200) {
            // the schedules reach every path the suite is meant to cover
            assertThat(totals.counts()).containsKeys("load.loaded", "load.failed", "load.forward",
                "load.ringReuseRefused", "load.allocationRefusedOnce", "load.faultInjected", "load.duplicatePageFreed",
                "load.hostEvictionWhileLoading", "committed", "abort.parentWithChildrenInFlight",
                "aborted.PARENT_ABORTED", "request.cancelledBeforeForward");
        }
    }
}
