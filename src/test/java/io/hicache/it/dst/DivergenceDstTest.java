package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deterministic simulation of divergent schedules (see {@link DstHarness}, divergence suite): CP groups of two to
 * four ranks in which, once per run, one rank skips the reservations of a request the others make or reserves them
 * with the draft flag flipped, and sealed backups have a time limit. No node may be committed on one rank only
 * (checked at every step and at the end); the divergent backups abort on every rank and the group degrades. Before
 * fingerprints were contributed, a skipped reservation committed a node on one rank only and left the next seqs
 * committing different nodes on each rank. Runs {@code -Dhicache.dst.divergeSeeds=N} seeds (default 300);
 * {@code -Dhicache.dst.seed=S} replays one.
 */
class DivergenceDstTest {

    static final String REPLAY = "./run-tests -pl integration-tests -am -Dtest=DivergenceDstTest "
        + "-Dhicache.dst.seed=%d -Dsurefire.failIfNoSpecifiedTests=false";

    @Test
    void divergentSchedulesNeverCommitANodeOnOneRankOnly() {
        DstSeeds.Totals totals = DstSeeds.run("divergence DST", false, false, true, "hicache.dst.divergeSeeds", 300L,
            REPLAY);
        if (!totals.single() && totals.seeds() >= 100) {
            assertThat(totals.counts().getOrDefault("diverge.skip", 0)).as("skipped reservations").isPositive();
            assertThat(totals.counts().getOrDefault("diverge.flipDraft", 0)).as("flipped draft flags").isPositive();
            assertThat(totals.counts().getOrDefault("aborted.DIVERGED", 0)).as("divergence aborts").isPositive();
            assertThat(totals.counts().getOrDefault("group.diverged", 0)).as("groups found diverged").isPositive();
            assertThat(totals.counts().getOrDefault("committed", 0)).isPositive();
        }
    }
}
