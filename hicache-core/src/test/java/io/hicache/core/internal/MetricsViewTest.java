package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link HiCache#metricsView()}: the live read-only view agrees with the snapshot, and the transfer bandwidth
 * histograms sample each forward's backup and each load batch with the simulated link's bandwidth.
 */
class MetricsViewTest {
    static final int LAYERS = 4;
    static final int PAGE = 16;
    static final int BYTES_PER_TOKEN = 256;
    static final long PAGE_BYTES = (long) PAGE * BYTES_PER_TOKEN * 2 * LAYERS; // K and V, every layer
    /** 0.25 GB/s device to host, 2 GB/s host to device, no launch latency: copy time is bytes over bandwidth. */
    final SimulatedCudaRuntime gpu = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().copyLaunchLatencyNs(0)
        .deviceToHostBytesPerSecond(250_000_000L).hostToDeviceBytesPerSecond(2_000_000_000L).build());
    final io.hicache.core.DevicePagePool pool = FacadeRig.pages();
    long base;
    HiCache cache;

    HiCache build(BackupMode mode) {
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(FacadeRig.DEVICE_PAGES);
        base = gpu.deviceMalloc(lb.packedBytes());
        cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(base).build()).hostPages(32)
            .writePolicy(WritePolicy.WRITE_THROUGH).backupMode(mode).threadingMode(ThreadingMode.INVOKER)
            .clock(gpu::nowNs).leaseNs(0).build();
        return cache;
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
            gpu.deviceFree(base);
        }
        gpu.close();
    }

    @Test
    void backupAndLoadBandwidthAreSampledPerForwardAndPerLoadBatch() {
        build(BackupMode.ALL_LAYERS);
        MetricsSnapshot.View view = cache.metricsView();
        assertThat(cache.metricsView()).isSameAs(view);
        assertThat(cache.pageSize()).isEqualTo(PAGE);

        prefill(0, 4);
        MetricsSnapshot.BandwidthView backup = view.backupBandwidth();
        assertThat(backup.count()).isEqualTo(1);
        // copied after the forward: 4 pages over the 0.25 GB/s link, a little slower for the forward's kernels
        assertThat(backup.sumGbps()).isBetween(0.2, 0.25);
        assertThat(backup.cumulativeCount(0)).as("le=0.1").isZero();
        assertThat(backup.cumulativeCount(1)).as("le=0.5").isEqualTo(1);
        assertThat(backup.cumulativeCount(backup.buckets() - 1)).isEqualTo(1);
        assertThat(view.loadBandwidth().count()).isZero();

        assertThat(cache.evictDevice(4, pool)).isEqualTo(4);
        MatchResult match = cache.match(tokens(0, 4 * PAGE), 0, 4 * PAGE, new MatchResult());
        assertThat(match.hostTokenCount()).isEqualTo(4 * PAGE);
        LoadHandle load = cache.loadBack(match, 1, 1 << 20, pool);
        cache.startLoading();
        run(() -> load.state() == LoadHandle.State.LOADED);
        MetricsSnapshot.BandwidthView loads = view.loadBandwidth();
        assertThat(loads.count()).isEqualTo(1);
        assertThat(loads.sumGbps()).as("4 pages over the 2 GB/s link").isGreaterThan(1.0).isLessThanOrEqualTo(2.0);
        assertThat(loads.cumulativeCount(2)).as("le=1").isZero();
        assertThat(loads.cumulativeCount(3)).as("le=5").isEqualTo(1);
        assertThat(view.get(Metric.H2D_BYTES)).isEqualTo(4 * PAGE_BYTES);
    }

    @Test
    void layeredBackupsSampleTheirThroughputAtMostTheLink() {
        build(BackupMode.LAYERED);
        prefill(0, 2);
        prefill(1000, 2);
        MetricsSnapshot.BandwidthView backup = cache.metricsView().backupBandwidth();
        assertThat(backup.count()).isEqualTo(2);
        assertThat(backup.sumGbps() / 2).isPositive().isLessThanOrEqualTo(0.25);
    }

    @Test
    void theViewReadsWhatTheSnapshotCopiesAndKeepsTheFinalValuesAfterClose() {
        build(BackupMode.LAYERED);
        prefill(0, 2);
        List<BackupHandle> aborted = reserve(1000, 2);
        assertThat(cache.abort(aborted.getFirst(), AbortReason.ENGINE)).isTrue();
        run(() -> aborted.getFirst().state().terminal());
        cache.declareHooksUnavailable("cuda graph");
        prefill(2000, 1);

        MetricsSnapshot.View view = cache.metricsView();
        MetricsSnapshot snap = cache.metrics();
        for (Metric m : Metric.values()) {
            assertThat(view.get(m)).as(m.name()).isEqualTo(snap.get(m));
        }
        for (AbortReason r : AbortReason.values()) {
            assertThat(view.abortedBy(r)).as(r.name()).isEqualTo(snap.abortedBy(r));
        }
        for (FallbackReason r : FallbackReason.values()) {
            assertThat(view.fallbacksBy(r)).as(r.name()).isEqualTo(snap.fallbacksBy(r));
        }
        for (WritePolicy.SkipReason r : WritePolicy.SkipReason.values()) {
            assertThat(view.skippedBy(r)).as(r.name()).isEqualTo(snap.skippedBy(r));
        }
        assertThat(view.abortedBy(AbortReason.ENGINE)).isEqualTo(1);
        assertThat(view.fallbacksBy(FallbackReason.HOOKS_UNAVAILABLE)).isEqualTo(1);
        MetricsSnapshot.LatencyView commit = view.commitLatency();
        assertThat(commit.count()).isEqualTo(snap.commitCount()).isEqualTo(2);
        assertThat(commit.quantileNs(0.5)).isEqualTo(snap.commitP50Ns());
        assertThat(commit.quantileNs(0.99)).isEqualTo(snap.commitP99Ns());
        assertThat(commit.maxNs()).isEqualTo(snap.commitMaxNs());
        assertThat(commit.sumNs()).isBetween(commit.maxNs(), 2 * commit.maxNs());

        long committed = view.get(Metric.BACKUPS_COMMITTED);
        long samples = view.backupBandwidth().count();
        cache.close();
        assertThat(view.get(Metric.BACKUPS_COMMITTED)).isEqualTo(committed);
        assertThat(view.backupBandwidth().count()).isEqualTo(samples);
        assertThat(view.commitLatency().count()).isEqualTo(2);
        assertThat(cache.pageSize()).isEqualTo(PAGE);
        assertThatThrownBy(() -> view.get(null)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("metric");
        assertThatThrownBy(() -> view.abortedBy(null)).isInstanceOf(IllegalArgumentException.class);
    }

    private List<BackupHandle> reserve(int start, int pages) {
        int[] dev = new int[pages];
        assertThat(pool.allocate(pages, dev, 0)).isTrue();
        int[] t = tokens(start, pages * PAGE);
        cache.insert(t, 0, t.length, dev, 0);
        List<BackupHandle> backups = new ArrayList<>();
        cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
        return backups;
    }

    private void prefill(int start, int pages) {
        List<BackupHandle> backups = reserve(start, pages);
        ForwardHooks hooks = cache.beginForward(backups);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(cache.computeStream(), 1_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        run(() -> backups.stream().allMatch(b -> b.state().terminal()));
        assertThat(backups).allMatch(b -> b.state() == BackupState.COMMITTED);
    }

    private void run(BooleanSupplier done) {
        for (int i = 0; i < 10_000; i++) {
            cache.doAgentWork();
            cache.poll();
            if (done.getAsBoolean()) {
                return;
            }
            gpu.advanceToNextEvent();
        }
        throw new AssertionError("the scripted run did not finish");
    }

    private static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }
}
