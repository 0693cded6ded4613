package io.hicache.it.dst;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The deterministic simulation of slot leases (see {@link DstHarness}, lease suite): several forwards open at once,
 * short leases, one to three forward slots. Leases expire while the forward thread goes on hooking its old handle
 * (every hook after the expiry must throw without touching the device), and the freed slot is taken by the next
 * forward right after; committed host bytes must still equal the device bytes at each hook. Before slot leases, an
 * expired forward's slot went back to the pool at its ack and the old handle's late hooks re-recorded the new
 * forward's layer events, so its copies ran after later writes and committed other bytes. Runs
 * {@code -Dhicache.dst.leaseSeeds=N} seeds (default 400); {@code -Dhicache.dst.seed=S} replays one.
 */
class LeaseDstTest {

    static final String REPLAY = "./run-tests -pl integration-tests -am -Dtest=LeaseDstTest "
        + "-Dhicache.dst.seed=%d -Dsurefire.failIfNoSpecifiedTests=false";

    @Test
    void severalForwardsOpenWithExpiringLeasesKeepEveryInvariant() {
        DstSeeds.Totals totals = DstSeeds.run("lease DST", false, true, "hicache.dst.leaseSeeds", 400L, REPLAY);
        if (!totals.single()) {
            assertThat(totals.counts().getOrDefault("lease.handleRevoked", 0)).as("leases expired under open forwards")
                .isPositive();
            assertThat(totals.counts().getOrDefault("lease.hookAfterRevoked", 0)).isPositive();
            assertThat(totals.counts().getOrDefault("committed", 0)).isPositive();
        }
    }
}
