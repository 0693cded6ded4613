package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class ControllerScenariosTest {

    @Test
    void draftAndTargetCommitTogetherWithDraftBytes() {
        try (SimRig rig = SimRig.builder().layers(3, 2).pages(2, 32, 32).build()) {
            RadixNode[] last = rig.insert(tokens(0, 8));
            int[] dev = new int[4];
            last[0].copyDevicePages(dev, 0);
            for (int p : dev) {
                for (int l = 0; l < 3; l++) {
                    rig.writeDevicePage(0, false, l, p, 1);
                }
                for (int d = 0; d < 2; d++) {
                    rig.writeDevicePage(0, true, d, p, 2);
                }
            }
            List<List<Backup>> b = rig.reserveByPolicy(last, true);
            rig.forward(b, 500, true);
            rig.drain();
            Backup backup = b.get(0).get(0);
            assertThat(backup.state()).isEqualTo(BackupState.COMMITTED);
            for (int i = 0; i < 4; i++) {
                for (int d = 0; d < 2; d++) {
                    assertThat(rig.hostMatchesDevice(0, true, d, dev[i], backup.hostPage(i))).isTrue();
                }
            }
            assertThat(rig.ctl[0].metrics().get(Metric.D2H_DRAFT_BYTES)).isEqualTo(4L * 2 * 2 * 2 * 16);
        }
    }

    @Test
    void draftLayerNeverStoredAbortsWithThatReason() {
        try (SimRig rig = SimRig.builder().layers(3, 2).pages(2, 32, 32).build()) {
            RadixNode[] last = rig.insert(tokens(0, 8));
            List<List<Backup>> b = rig.reserveByPolicy(last, true);
            ForwardHandle h = rig.ctl[0].beginForward(b.get(0));
            for (int l = 0; l < 3; l++) {
                h.targetLayerStored(l);
            }
            h.draftLayerStored(0);
            h.endForward();
            rig.drain();
            assertThat(b.get(0).get(0).abortReason()).isEqualTo(AbortReason.DRAFT_LAYER_MISSING);
            assertThat(last[0].hostValue()).isNull();
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
        }
    }

    @Test
    void copyFaultAbortsAndNothingIsPublished() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64).build()) {
            rig.rt[0].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.DEVICE_TO_HOST,
                CudaError.LAUNCH_OUT_OF_RESOURCES);
            List<Backup> seen = new ArrayList<>();
            RadixNode[] last = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            rig.forward(b, 100, true);
            rig.drain();
            assertThat(b.get(0).get(0).abortReason()).isEqualTo(AbortReason.CUDA_ERROR);
            assertThat(last[0].hostValue()).isNull();
            assertThat(rig.ctl[0].metrics().get(Metric.CUDA_ERRORS)).isPositive();
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
            assertThat(seen).isEmpty();
        }
    }

    @Test
    void stickyErrorStopsTheControllerCleanly() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            RadixNode[] last = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            rig.forward(b, 100, true);
            rig.rt[0].injectStickyError(CudaError.ILLEGAL_ADDRESS);
            rig.stepAll();
            rig.stepAll();
            assertThat(rig.ctl[0].stickyError()).isNotNull();
            assertThat(rig.ctl[0].stickyError().sticky()).isTrue();
            assertThat(b.get(0).get(0).state()).isEqualTo(BackupState.ABORTED);
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
            RadixNode[] more = rig.insert(tokens(100, 8));
            assertThatThrownBy(() -> rig.ctl[0].reserve(more[0], false))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("sticky");
        }
    }

    @Test
    void leaseExpiryAbortsAStalledForward() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64)
            .controller(c -> c.leaseNs(10_000)).build()) {
            RadixNode[] last = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(last, false);
            ForwardHandle h = rig.ctl[0].beginForward(b.get(0));
            h.targetLayerStored(0);
            rig.stepAll();
            rig.rt[0].simulateKernel(rig.ctl[0].backupStream(), 50_000); // time passes; forward stalls
            rig.advance();
            rig.drain();
            Backup backup = b.get(0).get(0);
            assertThat(backup.abortReason()).isEqualTo(AbortReason.LEASE_EXPIRED);
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
            assertThat(last[0].lockRef()).isZero();
            // the stalled forward's next hook learns of the expiry and touches nothing; so does every later call
            long recordsBefore = rig.rt[0].opsIssued();
            assertThatThrownBy(() -> h.targetLayerStored(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lease expired");
            assertThatThrownBy(h::endForward).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lease expired");
            assertThat(rig.rt[0].opsIssued()).isEqualTo(recordsBefore);
            rig.stepAll();
            assertThat(last[0].hostValue()).isNull();
        }
    }

    @Test
    void noRoomAfterOneHostEvictionIsCountedNotThrown() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 4).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(a, false);
            assertThat(b.get(0)).hasSize(1);
            RadixNode[] c = rig.insert(tokens(1000, 8));
            assertThat(rig.ctl[0].reserve(c[0], false)).isNull();
            assertThat(rig.ctl[0].metrics().get(Metric.RESERVE_NO_ROOM)).isEqualTo(1);
        }
    }

    @Test
    void hostEvictionMakesRoomForANewBackup() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 4).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            rig.forward(rig.reserveByPolicy(a, false), 100, true);
            rig.drain();
            assertThat(a[0].isHostResident()).isTrue();
            rig.ctl[0].evictDevice(4, rig::freeDevicePages);
            assertThat(a[0].isDeviceEvicted()).isTrue();
            RadixNode[] c = rig.insert(tokens(1000, 8));
            Backup fresh = rig.ctl[0].reserve(c[0], false);
            assertThat(fresh).isNotNull();
            assertThat(a[0].isAttached()).isFalse();
            assertThat(rig.ctl[0].metrics().get(Metric.HOST_PAGES_EVICTED)).isEqualTo(4);
        }
    }

    @Test
    void misuseIsRefusedAndChangesNothing() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            Backup b = rig.ctl[0].reserve(a[0], false);
            assertThatThrownBy(() -> rig.ctl[0].reserve(a[0], false))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("pending");
            assertThatThrownBy(() -> rig.ctl[0].reserve(a[0], true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("draft");
            ForwardHandle h = rig.ctl[0].beginForward(List.of(b));
            assertThatThrownBy(() -> rig.ctl[0].beginForward(List.of(b)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("RESERVED");
            assertThatThrownBy(() -> h.targetLayerStored(2)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> h.draftLayerStored(0)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("draft");
            h.targetLayerStored(0);
            assertThatThrownBy(() -> h.targetLayerStored(0)).isInstanceOf(IllegalStateException.class);
            h.targetLayerStored(1);
            h.endForward();
            assertThatThrownBy(() -> h.targetLayerStored(1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("endForward");
            assertThatThrownBy(h::endForward).isInstanceOf(IllegalStateException.class);
            rig.drain();
            assertThat(b.state()).isEqualTo(BackupState.COMMITTED);
            assertThatThrownBy(() -> rig.ctl[0].tree().commitHost(a[0], b, a[0].hostValue()))
                .isInstanceOf(IllegalStateException.class);
            assertThat(rig.ctl[0].abort(b, AbortReason.ENGINE)).isFalse();
            assertThat(a[0].isHostResident()).isTrue();
        }
    }

    @Test
    void closeIsIdempotentAndLaterCallsFail() {
        SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build();
        RadixNode[] a = rig.insert(tokens(0, 16));
        List<List<Backup>> b = rig.reserveByPolicy(a, false);
        rig.forward(b, 100, true);
        rig.close();
        rig.ctl[0].close();
        assertThat(b.get(0).get(0).abortReason()).isEqualTo(AbortReason.SHUTDOWN);
        assertThatThrownBy(rig.ctl[0]::poll).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(rig.rt[0].liveEvents()).isZero();
        assertThat(rig.rt[0].liveStreams()).isZero();
        assertThat(rig.rt[0].liveHostAllocations()).isZero();
        assertThat(rig.rt[0].liveDeviceAllocations()).isZero();
        rig.closeRuntimes();
    }

    @Test
    void writeBackCopiesOnDeviceEvictionThenEvicts() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(c -> c.writePolicy(WritePolicy.WRITE_BACK)).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            assertThat(rig.reserveByPolicy(a, false).get(0)).isEmpty();
            assertThat(rig.ctl[0].evictDevice(4, rig::freeDevicePages)).isZero();
            assertThat(a[0].pending()).isNotNull();
            rig.drain();
            assertThat(a[0].isHostResident()).isTrue();
            assertThat(rig.ctl[0].metrics().fallbacksBy(FallbackReason.WRITE_BACK)).isEqualTo(1);
            assertThat(rig.ctl[0].evictDevice(4, rig::freeDevicePages)).isEqualTo(4);
            MatchResult m = rig.ctl[0].tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(4);
        }
    }

    @Test
    void writeBackOfADeepLeafBacksUpItsAncestorsTopDown() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(c -> c.writePolicy(WritePolicy.WRITE_BACK)).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            RadixNode[] b = rig.insert(tokens(0, 32));
            assertThat(b[0].parent()).isSameAs(a[0]);
            assertThat(rig.ctl[0].evictDevice(4, rig::freeDevicePages)).isZero();
            assertThat(a[0].pending()).isNotNull();
            assertThat(b[0].pending()).isNotNull();
            rig.drain();
            assertThat(a[0].isHostResident()).isTrue();
            assertThat(b[0].isHostResident()).isTrue();
            assertThat(rig.ctl[0].evictDevice(8, rig::freeDevicePages)).isEqualTo(8);
            MatchResult m = rig.ctl[0].tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(8);
            rig.ctl[0].tree().checkInvariants();
        }
    }

    @Test
    void cpRanksCommitTheSameBackupsAndARankFailureAbortsEverywhere() {
        try (SimRig rig = SimRig.builder().cp(2, OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0).pages(4, 64, 64).build()) {
            RadixNode[] a = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(a, false);
            assertThat(b.get(0).get(0).ownedPageCount()).isEqualTo(2);
            assertThat(b.get(1).get(0).ownedPageCount()).isEqualTo(2);
            rig.forward(b, 100, true);
            rig.drain();
            assertThat(a[0].isHostResident()).isTrue();
            assertThat(a[1].isHostResident()).isTrue();

            RadixNode[] c = rig.insert(tokens(500, 12));
            List<List<Backup>> d = rig.reserveByPolicy(c, false);
            rig.rt[1].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.DEVICE_TO_HOST, CudaError.UNKNOWN);
            rig.forward(d, 100, true);
            rig.drain();
            assertThat(d.get(1).get(0).abortReason()).isEqualTo(AbortReason.CUDA_ERROR);
            assertThat(d.get(0).get(0).abortReason()).isEqualTo(AbortReason.RANK_FAILED);
            assertThat(c[0].hostValue()).isNull();
            assertThat(c[1].hostValue()).isNull();
            assertThat(rig.ctl[0].allocator().allocatedPages()).isEqualTo(2);
            assertThat(rig.ctl[1].allocator().allocatedPages()).isEqualTo(2);
        }
    }

    @Test
    void layeredCopiesOverlapComputeWhileAllLayersCommitsAfterEveryCopy() {
        long layerNs = 60_000; // per-layer compute >= per-layer copy (~46 us)
        long[] latency = new long[2];
        long[] exposed = new long[2];
        for (BackupMode mode : BackupMode.values()) {
            try (SimRig rig = SimRig.builder().layers(8, 0).pages(16, 256, 256).bytesPerToken(4096)
                .device(d -> d.copyLaunchLatencyNs(2_000).deviceToHostBytesPerSecond(25_000_000_000L))
                .controller(c -> c.backupMode(mode)).build()) {
                RadixNode[] a = rig.insert(tokens(0, 16 * 8));
                List<List<Backup>> b = rig.reserveByPolicy(a, false);
                rig.forward(b, layerNs, true);
                rig.drain();
                assertThat(b.get(0).get(0).state()).isEqualTo(BackupState.COMMITTED);
                latency[mode.ordinal()] = rig.ctl[0].metrics().commitLatencyNs().max();
                exposed[mode.ordinal()] = rig.ctl[0].metrics().get(Metric.EXPOSED_BACKUP_NS);
            }
        }
        // one layer: 8 pages x 16 tokens x 4096 B x 2 buffers = 1 MiB at 25 GB/s ~ 42 us, plus at most one
        // launch per buffer
        long layerDataNs = (8L * 16 * 4096 * 2 * 1_000_000_000L) / 25_000_000_000L;
        long layerCopyNs = 2 * 2_000 + layerDataNs;
        System.out.printf("layered: commit latency %d ns, exposed %d ns; all-layers: commit latency %d ns, "
            + "exposed %d ns; one layer's copy %d ns%n", latency[0], exposed[0], latency[1], exposed[1], layerCopyNs);
        assertThat(latency[0]).isPositive().isLessThanOrEqualTo(layerCopyNs + layerCopyNs / 8);
        assertThat(latency[1]).isGreaterThanOrEqualTo(8 * layerDataNs);
        assertThat(exposed[0]).isPositive().isLessThan(exposed[1]);
    }

    @Test
    void aRefusedCopySubmissionReleasesPagesOnlyAfterTheCopiesAlreadyQueuedDrained() {
        long[] d2hBytesAtAbort = {-1};
        SimRig[] holder = new SimRig[1];
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(4, 64, 64).bytesPerToken(1024)
            .device(d -> d.deviceToHostBytesPerSecond(1_000_000_000L))
            .wrapRuntime(rt -> new FailingSubmissionRuntime(rt, 3))
            .controller(c -> c.listener(new BackupListener() {
                    @Override
                    public void onAborted(io.hicache.core.BackupHandle backup, AbortReason reason) {
                        d2hBytesAtAbort[0] = holder[0].rt[0].bytesCopied(CopyKind.DEVICE_TO_HOST);
                    }
                })).build()) {
            holder[0] = rig;
            RadixNode[] a = rig.insert(tokens(0, 16));
            List<List<Backup>> b = rig.reserveByPolicy(a, false);
            ForwardHandle h = rig.ctl[0].beginForward(b.get(0));
            for (int l = 0; l < 4; l++) {
                h.targetLayerStored(l);
                rig.ctl[0].doAgentWork(); // layers 0 and 1 are queued; layer 2's submission is refused
            }
            h.endForward();
            rig.drain();
            Backup backup = b.get(0).get(0);
            assertThat(backup.abortReason()).isEqualTo(AbortReason.CUDA_ERROR);
            // two layers x 4 pages x 4 tokens x 1 KiB x 2 buffers were queued before the refusal, and all of them
            // had landed before the pages were handed back
            assertThat(d2hBytesAtAbort[0]).isEqualTo(2L * 4 * 4 * 1024 * 2);
            assertThat(rig.ctl[0].allocator().allocatedPages()).isZero();
        }
    }
}
