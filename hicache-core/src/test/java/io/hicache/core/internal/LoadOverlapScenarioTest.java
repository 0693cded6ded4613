package io.hicache.core.internal;

import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import org.junit.jupiter.api.Test;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A forward over a 32-layer host-hit prefix, loaded back in the same forward: each layer's load is shorter than its
 * compute, so with a per-layer device wait only the first layer's load is exposed and the forward ends within one
 * layer's load time of the same forward without a load. Prints the figures (simulated device time).
 */
@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class LoadOverlapScenarioTest {
    private static final int LAYERS = 32;
    private static final long COMPUTE_NS = 60_000;

    @Test
    void sameForwardLoadCostsAboutOneLayersCopy() {
        try (SimRig rig = SimRig.builder().layers(LAYERS, 0).pages(16, 256, 256).bytesPerToken(512)
            .device(d -> d.hostToDeviceBytesPerSecond(25_000_000_000L)).build()) {
            SimulatedCudaRuntime rt = rig.rt[0];
            HiCacheController c = rig.ctl[0];
            int tokens = 32 * 16;
            LoadBackTest.backUpAndEvict(rig, tokens, 7);

            // the no-load forward: the same 32 layers of compute over a prefix already on the device
            long[] end = new long[1];
            rig.drain();
            long t0 = rt.nowNs();
            for (int l = 0; l < LAYERS; l++) {
                rt.simulateKernel(c.computeStream(), COMPUTE_NS);
            }
            rt.launchHostFunc(c.computeStream(), () -> end[0] = rt.nowNs());
            runUntil(rig, () -> end[0] != 0);
            long noLoadNs = end[0] - t0;

            // the same forward over the host hit: load issued right before it, each layer waits for its own copy
            MatchResult m = c.tree().match(tokens(0, tokens), 0, tokens, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(32);
            LoadOp op = c.loadBack(m, 1, Integer.MAX_VALUE, LoadBackTest.allocator(rig));
            assertThat(op).isNotNull();
            long[] loadEnd = new long[1];
            end[0] = 0;
            long t1 = rt.nowNs();
            long consumer = c.startLoading();
            rt.launchHostFunc(c.loadStream(), () -> loadEnd[0] = rt.nowNs());
            for (int l = 0; l < LAYERS; l++) {
                c.waitLayer(consumer, l);
                rt.simulateKernel(c.computeStream(), COMPUTE_NS);
            }
            rt.launchHostFunc(c.computeStream(), () -> end[0] = rt.nowNs());
            runUntil(rig, () -> end[0] != 0 && loadEnd[0] != 0);
            long withLoadNs = end[0] - t1;
            long loadNs = loadEnd[0] - t1;
            long perLayerLoadNs = loadNs / LAYERS;
            for (int i = 0; i < 1000 && c.loadsInFlight() > 0; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            // previous-batch behaviour for comparison: the whole load, then the forward
            long previousBatchNs = loadNs + noLoadNs;
            System.out.printf("32-layer host-hit forward: no load %.1f us, same-forward load %.1f us (+%.1f us), "
                    + "per-layer load %.1f us < compute %.1f us; whole load then forward (previous batch) %.1f us%n",
                noLoadNs / 1e3, withLoadNs / 1e3, (withLoadNs - noLoadNs) / 1e3, perLayerLoadNs / 1e3,
                COMPUTE_NS / 1e3, previousBatchNs / 1e3);
            assertThat(perLayerLoadNs).as("the scenario needs each layer's load shorter than its compute")
                .isLessThan(COMPUTE_NS);
            assertThat(withLoadNs).as("forward with its load vs without, within one layer's load time")
                .isLessThanOrEqualTo(noLoadNs + perLayerLoadNs);
            assertThat(withLoadNs).isGreaterThan(noLoadNs); // the first layer's copy is exposed
            c.tree().checkInvariants();
        }
    }

    private static void runUntil(SimRig rig, java.util.function.BooleanSupplier done) {
        for (int i = 0; i < 100_000 && !done.getAsBoolean(); i++) {
            rig.stepAll();
            if (!rig.advance()) {
                rig.stepAll();
            }
        }
        assertThat(done.getAsBoolean()).as("device work finished").isTrue();
    }
}
