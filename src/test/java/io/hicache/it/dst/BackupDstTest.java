package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

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
        DstSeeds.Totals totals = DstSeeds.run("DST", false, "hicache.dst.seeds", 2_000L, REPLAY);
        assertThat(totals.counts().getOrDefault("reserved", 0)).isPositive();
        if (!totals.single() && totals.seeds() >= 200) {
            // cancelling a backup with backups reserved below it, and a request before its forward, are reached
            assertThat(totals.counts()).containsKeys("abort.parentWithChildrenInFlight", "aborted.PARENT_ABORTED",
                "request.cancelledBeforeForward");
        }
    }
}
