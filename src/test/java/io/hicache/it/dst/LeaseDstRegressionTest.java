package io.hicache.it.dst;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeds of {@link LeaseDstTest} that once failed, replayed on every build.
 *
 * <p>1,500,476 (CP 2, write-back, two forward slots) threw "submitter command queue full" out of {@code poll()}: a
 * lease that expired while a write-back's copies were queued sent its slot a cancel on top of the write-back's own
 * command. The queue holds two commands a slot (the current forward's and at most one left from the slot's previous
 * forward), so a third overflowed it. A write-back's slot has no forward to revoke and is no longer cancelled.
 */
class LeaseDstRegressionTest {

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {1_500_476L})
    void onceFailingSeedKeepsEveryInvariant(long seed) {
        DstHarness h = new DstHarness(seed, false, true);
        h.run();
        assertThat(h.stats).containsKeys("writeBack", "aborted.LEASE_EXPIRED", "committed");
    }
}
