package io.hicache.it.dst;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeds of {@link LeaseDstTest} that once failed, replayed on every build.
 *
 * <p>"submitter command queue full" out of {@code poll()}: a lease that expired while a write-back's copies were
 * queued sent its slot a cancel on top of the write-back's own command. The queue holds two commands a slot (the
 * current forward's and at most one left from the slot's previous forward), so a third overflowed it. A write-back's
 * slot has no forward to revoke and is no longer cancelled. Found as seed 1,500,476; since requests no longer share
 * pages an open forward still writes, seeds 1,510,656 (CP 2) and 1,537,362 (CP 1) are the ones that reach it
 * (both threw before the fix).
 */
class LeaseDstRegressionTest {

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1_510_656L, 1_537_362L})
    void onceFailingSeedKeepsEveryInvariant(long seed) {
        DstHarness h = new DstHarness(seed, false, true);
        h.run();
        assertThat(h.stats).containsKeys("writeBack", "aborted.LEASE_EXPIRED", "committed");
    }
}
