package io.hicache.sim.engine;

import io.hicache.core.LoadOverlap;
import io.hicache.sim.SimConfig;
import io.hicache.sim.report.SimResult;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * {@code --load-overlap}: loading a host hit inside the forward that uses it keeps the hit ratios of loading it a
 * step ahead and shortens the host-hit requests' prefill.
 */
class LoadOverlapSimTest {

    @Test
    void sameForwardKeepsHitRatiosAndShortensHostHitPrefill() {
        SimConfig base = SimConfig.defaults(512);
        SimResult same = ServingEngineTest.run(base.withLoadOverlap(LoadOverlap.SAME_FORWARD), 500);
        SimResult previous = ServingEngineTest.run(base.withLoadOverlap(LoadOverlap.PREVIOUS_BATCH), 500);
        System.out.printf("500 requests: host-hit prefill p50 same-forward %.1f ms (%d requests), previous-batch %.1f ms"
                + " (%d); block hit ratio %.4f vs %.4f%n", same.serving().hostHitPrefillMs().p50(),
            same.serving().hostHitRequests(), previous.serving().hostHitPrefillMs().p50(),
            previous.serving().hostHitRequests(), same.blockHitRatio(), previous.blockHitRatio());
        assertThat(same.serving().loadOverlap()).isEqualTo("same-forward");
        assertThat(previous.serving().loadOverlap()).isEqualTo("previous-batch");
        assertThat(same.serving().hostHitRequests()).isPositive();
        assertThat(previous.serving().hostHitRequests()).isPositive();
        assertThat(same.blockHitRatio()).isCloseTo(previous.blockHitRatio(), within(0.01));
        assertThat(same.serving().hostHitPrefillMs().p50()).isLessThan(previous.serving().hostHitPrefillMs().p50());
        assertThat(same.serving().hostHitPrefillMs().mean()).isLessThan(previous.serving().hostHitPrefillMs().mean());
    }
}
