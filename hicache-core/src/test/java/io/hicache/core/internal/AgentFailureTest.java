package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.core.ThreadingMode;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Agents that survive: an unexpected exception in the submitter or the completion agent aborts the backups of the
 * forward it was handling (reason {@link AbortReason#AGENT_ERROR}), is counted, and the agent goes on, so later
 * forwards commit with the device's bytes and the forward thread never blocks. Before the fix, one exception in the
 * submitter left the hook event redelivered with a cleared slot (a NullPointerException every duty cycle) and the
 * forward thread blocked once the hook ring filled.
 */
@ExtendWith(LeakCheckExtension.class)
class AgentFailureTest {
    private static final int LAYERS = 8;
    private static final int FORWARDS = 40; // 40 x 9 hook messages: more than the hook ring holds

    @Test
    void submitterExceptionAbortsItsForwardAndLaterForwardsCommit() {
        FaultInjectingRuntime[] fault = new FaultInjectingRuntime[1];
        try (SimRig rig = SimRig.builder().layers(LAYERS, 0).pages(4, 64, 64)
            .wrapRuntime(rt -> fault[0] = new FaultInjectingRuntime(rt)).build()) {
            fault[0].failAt("streamWaitEvent", 3); // the submitter, at layer 2 of the first forward
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> runForwards(rig, ThreadingMode.INVOKER));
        }
    }

    @Test
    void submitterExceptionOnItsOwnThreadNeitherWedgesItNorBlocksTheForwardThread() {
        FaultInjectingRuntime[] fault = new FaultInjectingRuntime[1];
        try (SimRig rig = SimRig.builder().layers(LAYERS, 0).pages(4, 64, 64)
            .wrapRuntime(rt -> fault[0] = new FaultInjectingRuntime(rt))
            .controller(b -> b.threadingMode(ThreadingMode.DEDICATED)).build()) {
            fault[0].failAt("streamWaitEvent", 3);
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> runForwards(rig, ThreadingMode.DEDICATED));
        }
    }

    @Test
    void completionExceptionAbortsItsForwardAndLaterForwardsCommit() {
        FaultInjectingRuntime[] fault = new FaultInjectingRuntime[1];
        try (SimRig rig = SimRig.builder().layers(LAYERS, 0).pages(4, 64, 64)
            .wrapRuntime(rt -> fault[0] = new FaultInjectingRuntime(rt)).build()) {
            fault[0].failAt("queryEventStatus", 1); // the completion agent, polling the first forward
            assertTimeoutPreemptively(Duration.ofSeconds(60), () -> runForwards(rig, ThreadingMode.INVOKER));
        }
    }

    /**
     * With the hook ring smaller than one forward's messages and the submitter not stepped, the hooks neither block
     * nor lose a layer: the rest of the forward is copied after its end, counted as a fallback.
     */
    @Test
    void fullHookRingFallsBackToCopiesAfterTheEndWithoutBlocking() {
        try (SimRig rig = SimRig.builder().layers(LAYERS, 2).pages(4, 64, 64)
            .controller(b -> b.hookRingCapacity(4)).build()) {
            for (int round = 0; round < 3; round++) {
                RadixNode[] last = rig.insert(ControllerBasicTest.tokens(1_000 * round, 16));
                int[] dev = new int[4];
                last[0].copyDevicePages(dev, 0);
                writeAll(rig, dev, round + 1);
                List<List<Backup>> b = rig.reserveByPolicy(last, true);
                int[] fallbacksBefore = {(int) rig.ctl[0].metrics().fallbacksBy(FallbackReason.HOOK_RING_FULL)};
                // every hook and the end run with the submitter idle: the ring fills after 4 messages
                assertTimeoutPreemptively(Duration.ofSeconds(30), () -> rig.forward(b, 1_000, true));
                rig.drain();
                Backup backup = b.get(0).get(0);
                assertThat(backup.state()).isEqualTo(BackupState.COMMITTED);
                assertThat(rig.ctl[0].metrics().fallbacksBy(FallbackReason.HOOK_RING_FULL))
                    .isEqualTo(fallbacksBefore[0] + 1L);
                assertBytes(rig, dev, backup, true);
                rig.ctl[0].evictDevice(4, rig::freeDevicePages);
            }
            // a hook left out while the ring is full is still noticed: the backup is not published
            RadixNode[] last = rig.insert(ControllerBasicTest.tokens(50_000, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            ForwardHandle h = rig.ctl[0].beginForward(b.get(0));
            for (int l = 0; l < LAYERS; l++) {
                if (l != 6) {
                    h.targetLayerStored(l);
                }
            }
            h.endForward();
            rig.drain();
            assertThat(b.get(0).get(0).abortReason()).isEqualTo(AbortReason.TARGET_LAYER_MISSING);
        }
    }

    /** Forward 0 meets the injected fault and is aborted; every later one commits with the device's bytes. */
    private static void runForwards(SimRig rig, ThreadingMode mode) {
        HiCacheController c = rig.ctl[0];
        for (int f = 0; f < FORWARDS; f++) {
            RadixNode[] last = rig.insert(ControllerBasicTest.tokens(100_000 * (f + 1), 16));
            int[] dev = new int[4];
            last[0].copyDevicePages(dev, 0);
            writeAll(rig, dev, f + 1);
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            assertThat(b.get(0)).hasSize(1);
            Backup backup = b.get(0).get(0);
            rig.forward(b, 1_000, true);
            long deadlineNs = System.nanoTime() + 30_000_000_000L; // agent threads may be slow to get a core
            while (!backup.state().terminal() && System.nanoTime() < deadlineNs) {
                if (mode == ThreadingMode.INVOKER) {
                    c.doAgentWork();
                } else {
                    Thread.onSpinWait();
                }
                rig.rt[0].advanceToNextEvent();
                c.poll();
            }
            if (f == 0) {
                assertThat(backup.state()).as("forward 0").isEqualTo(BackupState.ABORTED);
                assertThat(backup.abortReason()).isEqualTo(AbortReason.AGENT_ERROR);
                assertThat(last[0].hostValue()).isNull();
                assertThat(c.metrics().get(Metric.AGENT_ERRORS)).isEqualTo(1);
            } else {
                assertThat(backup.state()).as("forward %d", f).isEqualTo(BackupState.COMMITTED);
                assertBytes(rig, dev, backup, false);
            }
            c.evictDevice(4, rig::freeDevicePages);
        }
        assertThat(c.metrics().get(Metric.AGENT_ERRORS)).isEqualTo(1);
        assertThat(c.metrics().get(Metric.BACKUPS_COMMITTED)).isEqualTo(FORWARDS - 1);
    }

    private static void writeAll(SimRig rig, int[] dev, int tag) {
        for (int l = 0; l < rig.layers; l++) {
            for (int p : dev) {
                rig.writeDevicePage(0, false, l, p, tag);
            }
        }
        for (int d = 0; d < rig.draftLayers; d++) {
            for (int p : dev) {
                rig.writeDevicePage(0, true, d, p, tag);
            }
        }
    }

    private static void assertBytes(SimRig rig, int[] dev, Backup backup, boolean draft) {
        for (int i = 0; i < dev.length; i++) {
            for (int l = 0; l < rig.layers; l++) {
                assertThat(rig.hostMatchesDevice(0, false, l, dev[i], backup.hostPage(i))).isTrue();
            }
            for (int d = 0; draft && d < rig.draftLayers; d++) {
                assertThat(rig.hostMatchesDevice(0, true, d, dev[i], backup.hostPage(i))).isTrue();
            }
        }
    }
}
