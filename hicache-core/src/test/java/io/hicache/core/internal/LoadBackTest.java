package io.hicache.core.internal;

import io.hicache.core.DevicePageAllocator;
import io.hicache.core.LoadListener;
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
class LoadBackTest {

    /** The rig's device page free list as the engine's allocator. */
    static DevicePageAllocator allocator(SimRig rig) {
        return new DevicePageAllocator() {
            @Override
            public boolean allocate(int count, int[] out, int offset) {
                if (rig.freeDevicePageCount() < count) {
                    return false;
                }
                System.arraycopy(rig.takeDevicePages(count), 0, out, offset, count);
                return true;
            }

            @Override
            public void free(int[] pages, int offset, int count) {
                rig.freeDevicePages(pages, offset, count);
            }
        };
    }

    /** Backs up tokens [0, n), then evicts them from the device; returns the original device pages. */
    static int[] backUpAndEvict(SimRig rig, int n, int tag) {
        RadixNode[] a = rig.insert(tokens(0, n));
        int[] dev = new int[n / rig.pageSize];
        a[0].copyDevicePages(dev, 0);
        for (int r = 0; r < rig.cp; r++) {
            for (int l = 0; l < rig.layers; l++) {
                for (int p : dev) {
                    rig.writeDevicePage(r, false, l, p, tag);
                }
            }
            for (int d = 0; d < rig.draftLayers; d++) {
                for (int p : dev) {
                    rig.writeDevicePage(r, true, d, p, tag);
                }
            }
        }
        rig.forward(rig.reserveByPolicy(a, rig.draftLayers > 0), 1_000, true);
        rig.drain();
        for (int r = 0; r < rig.cp; r++) {
            assertThat(a[r].isHostResident()).isTrue();
            rig.ctl[r].evictDevice(n / rig.pageSize, r == 0 ? rig::freeDevicePages : (p, o, c) -> { });
            assertThat(a[r].isDeviceEvicted()).isTrue();
        }
        return dev;
    }

    @Test
    void loadedBytesEqualBackedUpBytesAndNodesBecomeDeviceHitsOnlyAfterAck() {
        try (SimRig rig = SimRig.builder().layers(3, 1).pages(4, 64, 64).build()) {
            int[] original = backUpAndEvict(rig, 32, 5);
            // scribble over the old device pages so a stale read would show
            for (int p : original) {
                for (int l = 0; l < 3; l++) {
                    rig.writeDevicePage(0, false, l, p, 99);
                }
            }
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(m.devicePageCount()).isZero();
            assertThat(m.hostPageCount()).isEqualTo(8);
            List<LoadOp> done = new ArrayList<>();
            LoadOp op = c.loadBack(m, 42, 1 << 20, allocator(rig));
            assertThat(op).isNotNull();
            long consumer = c.startLoading();
            assertThat(consumer).isNotNegative();
            // before the ack the chain is a device prefix still loading: not ready for anyone who does not wait
            rig.stepAll();
            MatchResult again = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(again.devicePageCount()).isEqualTo(8);
            assertThat(again.readyPageCount()).isZero();
            assertThat(again.loadingNode()).isNotNull();
            assertThat(c.joinLoad(again)).isSameAs(op);
            assertThat(op.consumer()).isEqualTo(consumer);
            assertThat(c.tree().devicePagesEvictable()).isZero();
            rig.drain();
            for (int i = 0; i < 1000 && c.loadsInFlight() > 0; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            MatchResult after = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(after.devicePageCount()).isEqualTo(8);
            assertThat(after.readyPageCount()).isEqualTo(8);
            assertThat(after.loadingNode()).isNull();
            assertThat(c.metrics().get(Metric.LOAD_JOINS)).isEqualTo(1);
            HostPages hp = (HostPages) op.node(0).hostValue();
            for (int l = 0; l < 3; l++) {
                for (int i = 0; i < op.node(0).pageCount(); i++) {
                    assertThat(rig.hostMatchesDevice(0, false, l, op.devicePage(i), hp.hostPage(i))).isTrue();
                    assertThat(rig.hostMatchesDevice(0, true, 0, op.devicePage(i), hp.hostPage(i))).isTrue();
                }
            }
            assertThat(c.metrics().get(Metric.LOADS_COMPLETED)).isEqualTo(1);
            assertThat(c.metrics().get(Metric.LOAD_TOKENS)).isEqualTo(32);
            assertThat(op.node(op.nodeCount() - 1).hostRef()).isZero();
            c.tree().checkInvariants();
            assertThat(done).isEmpty();
        }
    }

    /** Steps the rig until no load is in flight on rank 0. */
    private static void finishLoads(SimRig rig) {
        rig.drain();
        for (int i = 0; i < 1000 && rig.ctl[0].loadsInFlight() > 0; i++) {
            rig.advance();
            rig.stepAll();
        }
    }

    @Test
    void matchesSplittingAChainNodeBeforeAndWhileItLoadsStillLoadAndAttachEveryPage() {
        try (SimRig rig = SimRig.builder().layers(2, 1).pages(4, 64, 64).build()) {
            backUpAndEvict(rig, 32, 5);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            LoadOp op = c.loadBack(m, 1, 1 << 20, allocator(rig));
            assertThat(op.nodeCount()).isEqualTo(1);
            // other requests' matches end inside the chain: its node is split before and after the copies are issued
            c.tree().match(tokens(0, 12), 0, 12, new MatchResult());
            c.startLoading();
            c.tree().match(tokens(0, 20), 0, 20, new MatchResult());
            finishLoads(rig);
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            assertThat(op.nodeCount()).isEqualTo(3);
            MatchResult after = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(after.devicePageCount()).isEqualTo(8);
            int start = 0;
            for (int k = 0; k < op.nodeCount(); k++) {
                HostPages hp = (HostPages) op.node(k).hostValue();
                for (int i = 0; i < op.node(k).pageCount(); i++) {
                    assertThat(after.devicePage(start + i)).isEqualTo(op.devicePage(start + i));
                    for (int l = 0; l < 2; l++) {
                        assertThat(rig.hostMatchesDevice(0, false, l, op.devicePage(start + i), hp.hostPage(i))).isTrue();
                    }
                    assertThat(rig.hostMatchesDevice(0, true, 0, op.devicePage(start + i), hp.hostPage(i))).isTrue();
                }
                start += op.node(k).pageCount();
            }
            c.tree().checkInvariants();
        }
    }

    @Test
    void previousBatchKeepsTheChainHostOnlyUntilTheAck() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(b -> b.loadOverlap(io.hicache.core.LoadOverlap.PREVIOUS_BATCH, "test engine")).build()) {
            backUpAndEvict(rig, 16, 1);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            LoadOp op = c.loadBack(m, 1, 1 << 20, allocator(rig));
            c.startLoading();
            rig.stepAll();
            MatchResult again = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(again.devicePageCount()).isZero();
            assertThat(again.hostPageCount()).isEqualTo(4);
            assertThat(c.joinLoad(again)).isNull();
            finishLoads(rig);
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            assertThat(c.tree().match(tokens(0, 16), 0, 16, new MatchResult()).readyPageCount()).isEqualTo(4);
            c.tree().checkInvariants();
        }
    }

    @Test
    void anInsertAdoptingTheChainWhileItLoadsKeepsItsPagesAndTheLoadsDuplicatesGoBack() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(b -> b.loadOverlap(io.hicache.core.LoadOverlap.PREVIOUS_BATCH, "test engine")).build()) {
            backUpAndEvict(rig, 16, 1);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            LoadOp op = c.loadBack(m, 1, 1 << 20, allocator(rig));
            c.startLoading();
            // another request computed the same tokens meanwhile: the host-only node adopts its pages
            int[] computed = rig.takeDevicePages(4);
            int freeAfterInsert = rig.freeDevicePageCount();
            assertThat(c.tree().insert(tokens(0, 16), 0, 16, computed, 0)).isZero();
            finishLoads(rig);
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            MatchResult after = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(after.devicePages()).startsWith(computed);
            assertThat(rig.freeDevicePageCount()).isEqualTo(freeAfterInsert + 4);
            c.tree().checkInvariants();
        }
    }

    @Test
    void forwardWaitingOnLayerNeverRunsBeforeThatLayersCopy() {
        try (SimRig rig = SimRig.builder().layers(4, 0).pages(16, 64, 64).bytesPerToken(4096)
            .device(d -> d.hostToDeviceBytesPerSecond(10_000_000_000L)).build()) {
            backUpAndEvict(rig, 64, 3);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 64), 0, 64, new MatchResult());
            c.loadBack(m, 1, 1 << 20, allocator(rig));
            long t0 = rig.rt[0].nowNs();
            long consumer = c.startLoading();
            long[] attentionStart = new long[4];
            // per layer: wait, then a marker kernel whose start we observe through a host function
            for (int l = 0; l < 4; l++) {
                int layer = l;
                c.waitLayer(consumer, l);
                rig.rt[0].launchHostFunc(c.computeStream(), () -> attentionStart[layer] = rig.rt[0].nowNs());
                rig.rt[0].simulateKernel(c.computeStream(), 10_000);
                rig.rt[0].launchHostFunc(c.loadStream(), () -> { });
            }
            long h2dBefore = rig.rt[0].bytesCopied(CopyKind.HOST_TO_DEVICE);
            rig.drain();
            for (int i = 0; i < 1000 && c.loadsInFlight() > 0; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(rig.rt[0].bytesCopied(CopyKind.HOST_TO_DEVICE)).isGreaterThanOrEqualTo(h2dBefore);
            // one layer's copy: 4 pages x 16 x 4096 x 2 = 512 KiB at 10 GB/s ~ 52 us: layer l's attention
            // cannot start before (l+1) copies have finished
            long perLayer = (4L * 16 * 4096 * 2 * 1_000_000_000L) / 10_000_000_000L;
            for (int l = 0; l < 4; l++) {
                assertThat(attentionStart[l] - t0).isGreaterThanOrEqualTo((l + 1) * perLayer);
            }
            // and layer l+1's copy overlaps layer l's compute: the whole thing ends well before serial time
            long serial = 4 * (perLayer + 2 * 2_000) + 4 * 10_000;
            System.out.printf("attention starts %s; per-layer copy %d ns; serial would end at %d ns, ran to %d ns%n",
                java.util.Arrays.toString(attentionStart), perLayer, t0 + serial, rig.rt[0].nowNs());
            assertThat(attentionStart[3] + 10_000 - t0).isLessThan(serial);
        }
    }

    @Test
    void reusingALoadEventSetStillInUseIsAnError() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 128, 128).controller(b -> b.loadThresholdTokens(1))
            .build()) {
            HiCacheController c = rig.ctl[0];
            for (int k = 0; k < 4; k++) {
                RadixNode[] a = rig.insert(tokens(1000 * (k + 1), 8));
                rig.forward(rig.reserveByPolicy(a, false), 100, true);
            }
            rig.drain();
            c.evictDevice(8, rig::freeDevicePages);
            int issued = 0;
            for (int k = 0; k < 3; k++) {
                MatchResult m = c.tree().match(tokens(1000 * (k + 1), 8), 0, 8, new MatchResult());
                if (c.loadBack(m, k, 1 << 20, allocator(rig)) != null) {
                    c.startLoading();
                    issued++;
                }
            }
            assertThat(issued).isEqualTo(3);
            c.evictDevice(2, rig::freeDevicePages);
            MatchResult m = c.tree().match(tokens(4000, 8), 0, 8, new MatchResult());
            assertThat(c.loadBack(m, 9, 1 << 20, allocator(rig))).isNotNull();
            assertThatThrownBy(c::startLoading).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("still in use");
            rig.drain();
            for (int i = 0; i < 100 && c.loadsInFlight() > 2; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(c.loadsInFlight()).isEqualTo(2); // the fourth load: queued and awaiting agreement
            assertThat(c.startLoading()).isNotNegative();
        }
    }

    @Test
    void failedLoadFreesPagesKeepsNodesHostOnlyAndTellsTheEngine() {
        List<LoadOp> failed = new ArrayList<>();
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(b -> b.loadListener(new LoadListener() {
                @Override
                public void onLoadFailed(io.hicache.core.LoadHandle op) {
                    failed.add((LoadOp) op);
                }
            })).build()) {
            backUpAndEvict(rig, 16, 1);
            HiCacheController c = rig.ctl[0];
            int freeBefore = rig.freeDevicePageCount();
            rig.rt[0].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.HOST_TO_DEVICE, CudaError.UNKNOWN);
            MatchResult m = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            LoadOp op = c.loadBack(m, 7, 1 << 20, allocator(rig));
            c.startLoading();
            rig.drain();
            for (int i = 0; i < 1000 && c.loadsInFlight() > 0; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(op.state()).isEqualTo(LoadOp.State.FAILED);
            assertThat(failed).containsExactly(op);
            assertThat(rig.freeDevicePageCount()).isEqualTo(freeBefore);
            MatchResult after = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(after.devicePageCount()).isZero();
            assertThat(after.hostPageCount()).isEqualTo(4);
            c.tree().checkInvariants();
        }
    }

    @Test
    void aLoadHungBelowAFailedLoadFailsTooAndGivesItsPagesBackOnce() {
        List<LoadOp> loaded = new ArrayList<>();
        List<LoadOp> failed = new ArrayList<>();
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64)
            .controller(b -> b.loadListener(new LoadListener() {
                @Override
                public void onLoaded(io.hicache.core.LoadHandle op) {
                    loaded.add((LoadOp) op);
                }

                @Override
                public void onLoadFailed(io.hicache.core.LoadHandle op) {
                    failed.add((LoadOp) op);
                }
            })).build()) {
            backUpAndEvict(rig, 32, 3);
            HiCacheController c = rig.ctl[0];
            int freeBefore = rig.freeDevicePageCount();
            // load A: the chain's head, issued with its host-to-device copies failing
            LoadOp a = c.loadBack(c.tree().match(tokens(0, 16), 0, 16, new MatchResult()), 1, 1 << 20, allocator(rig));
            rig.rt[0].failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.HOST_TO_DEVICE, CudaError.UNKNOWN);
            c.startLoading();
            while (rig.advance()) {
                // A's copies fail on the device; the controller has not seen it yet (nothing polled)
            }
            rig.rt[0].failCopiesMatching(null, null);
            // load B: a later request's match runs through A's loading head, so B loads the tail below it; its own
            // copies succeed, but that request computes over A's pages, and B is the only load it joins
            MatchResult m = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(m.loadingNode()).isNotNull();
            assertThat(m.hostPageCount()).isEqualTo(4);
            LoadOp b = c.loadBack(m, 2, 1 << 20, allocator(rig));
            assertThat(b).isNotNull();
            c.startLoading();
            assertThat(c.joinLoad(c.tree().match(tokens(0, 32), 0, 32, new MatchResult()))).isSameAs(b);
            finishLoads(rig);

            assertThat(a.state()).isEqualTo(LoadOp.State.FAILED);
            assertThat(b.state()).as("a load whose chain hung below a failed load").isEqualTo(LoadOp.State.FAILED);
            assertThat(failed).containsExactly(a, b);
            assertThat(loaded).isEmpty();
            assertThat(rig.freeDevicePageCount()).isEqualTo(freeBefore);
            MatchResult after = c.tree().match(tokens(0, 32), 0, 32, new MatchResult());
            assertThat(after.devicePageCount()).isZero();
            assertThat(after.hostPageCount()).isEqualTo(8);
            c.tree().checkInvariants();
        }
    }

    @Test
    void belowThresholdOrAboveQuotaIsSkipped() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            backUpAndEvict(rig, 8, 1);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 8), 0, 8, new MatchResult());
            assertThat(c.loadBack(m, 1, 1 << 20, allocator(rig))).isNull(); // 8 tokens < threshold 10
            assertThat(c.startLoading()).isEqualTo(-1);
            c.waitLayer(-1, 0); // no-op
        }
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 64).build()) {
            backUpAndEvict(rig, 16, 1);
            HiCacheController c = rig.ctl[0];
            MatchResult m = c.tree().match(tokens(0, 16), 0, 16, new MatchResult());
            assertThat(c.loadBack(m, 1, 15, allocator(rig))).isNull();
        }
    }

    @Test
    void cpRanksLoadOnlyTheirLanesAndAgree() {
        try (SimRig rig = SimRig.builder().cp(2, io.hicache.core.cp.OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0)
            .pages(4, 64, 64).build()) {
            backUpAndEvict(rig, 32, 4);
            LoadOp[] ops = new LoadOp[2];
            for (int r = 0; r < 2; r++) {
                MatchResult m = rig.ctl[r].tree().match(tokens(0, 32), 0, 32, new MatchResult());
                ops[r] = rig.ctl[r].loadBack(m, 1, 1 << 20, r == 0 ? allocator(rig) : new DevicePageAllocator() {
                    @Override
                    public boolean allocate(int count, int[] out, int offset) {
                        for (int i = 0; i < count; i++) {
                            out[offset + i] = i;
                        }
                        return true;
                    }

                    @Override
                    public void free(int[] pages, int offset, int count) {
                    }
                });
                rig.ctl[r].startLoading();
            }
            rig.drain();
            for (int i = 0; i < 100 && (rig.ctl[0].loadsInFlight() > 0 || rig.ctl[1].loadsInFlight() > 0); i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(ops[0].state()).isEqualTo(LoadOp.State.LOADED);
            assertThat(ops[1].state()).isEqualTo(LoadOp.State.LOADED);
            assertThat(rig.ctl[0].metrics().get(Metric.H2D_BYTES)).isEqualTo(rig.ctl[1].metrics().get(Metric.H2D_BYTES));
            assertThat(rig.ctl[0].metrics().get(Metric.H2D_BYTES)).isEqualTo(4L * 4 * 16 * 2 * 2);
        }
    }
}
