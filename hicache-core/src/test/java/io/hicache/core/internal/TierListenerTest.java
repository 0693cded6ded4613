package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.radix.RadixNode;
import io.hicache.radix.TierListener;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/** The KV-events port sees a CP group's host pages only once the group agreed, and never an aborted backup's. */
class TierListenerTest {

    private static final class Recorder implements TierListener {
        final List<String> seen = new ArrayList<>();

        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
            seen.add("gpu+" + (len - firstNewToken));
        }

        @Override
        public void onStored(int tier, RadixNode node) {
            seen.add((tier == HOST ? "cpu+" : "tier" + tier + "+") + node.tokenCount());
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
            seen.add((tier == HOST ? "cpu-" : tier == DEVICE ? "gpu-" : "tier" + tier + "-") + node.tokenCount());
        }
    }

    @Test
    void hostPagesAreAnnouncedOnlyAfterTheGroupAgreed() {
        try (SimRig rig = SimRig.builder().cp(2, OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0).pages(4, 64, 64).build()) {
            Recorder[] rec = {new Recorder(), new Recorder()};
            rig.ctl[0].tierObserver(rec[0]);
            rig.ctl[1].tierObserver(rec[1]);
            RadixNode[] a = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(a, false);
            rig.forward(b, 100, true);
            // rank 0's copies all complete and it polls, but rank 1 never reports: no agreement, no host event
            for (int i = 0; i < 200; i++) {
                rig.ctl[0].doAgentWork();
                rig.ctl[1].doAgentWork();
                if (!rig.advance()) {
                    rig.ctl[0].poll();
                }
                rig.ctl[0].poll();
            }
            assertThat(rig.ctl[0].completionAgent().inFlight()).isZero();
            assertThat(rec[0].seen).containsExactly("gpu+16");
            rig.drain();
            assertThat(rec[0].seen).containsExactly("gpu+16", "cpu+16");
            assertThat(rec[1].seen).containsExactly("gpu+16", "cpu+16");

            // a backup that fails on rank 1 aborts everywhere: neither rank announces its pages on the host
            RadixNode[] c = rig.insert(tokens(500, 12));
            List<List<Backup>> d = rig.reserveByPolicy(c, false);
            rig.rt[1].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.DEVICE_TO_HOST, CudaError.UNKNOWN);
            rig.forward(d, 100, true);
            rig.drain();
            assertThat(d.get(0).get(0).abortReason()).isEqualTo(AbortReason.RANK_FAILED);
            assertThat(rec[0].seen).containsExactly("gpu+16", "cpu+16", "gpu+12");
            assertThat(rec[1].seen).containsExactly("gpu+16", "cpu+16", "gpu+12");
        }
    }

    @Test
    void evictionsAreAnnouncedWhileTheNodeIsStillAttached() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            Recorder rec = new Recorder();
            List<Boolean> attached = new ArrayList<>();
            rig.ctl[0].tierObserver(new TierListener() {
                @Override
                public void onDeviceInserted(int[] t, int from, int len, int firstNew, RadixNode last) {
                    rec.onDeviceInserted(t, from, len, firstNew, last);
                }

                @Override
                public void onStored(int tier, RadixNode node) {
                    rec.onStored(tier, node);
                }

                @Override
                public void onRemoving(int tier, RadixNode node) {
                    attached.add(node.isAttached() && (node.parent().isRoot() || node.parent().isAttached()));
                    rec.onRemoving(tier, node);
                }
            });
            RadixNode[] a = rig.insert(tokens(0, 16));
            rig.forward(rig.reserveByPolicy(a, false), 100, true);
            rig.drain();
            rig.ctl[0].evictDevice(64, rig::freeDevicePages);
            rig.ctl[0].evictHost(64);
            assertThat(rec.seen).containsExactly("gpu+16", "cpu+16", "gpu-16", "cpu-16");
            assertThat(attached).containsExactly(true, true);
        }
    }
}
