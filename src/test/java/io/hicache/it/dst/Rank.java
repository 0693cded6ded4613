package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.RadixTree;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;

import static io.hicache.it.dst.DstHarness.BYTES_PER_TOKEN;
import static io.hicache.it.dst.DstHarness.UNSET;
import static io.hicache.it.dst.DstHarness.pattern;

/**
 * One CP rank of {@link DstHarness}: its simulated device, KV layouts, controller and the byte models (the tag of
 * the newest write of each device page and layer, the expected content of each host page). Built and owned by the
 * harness; single-threaded.
 */
final class Rank {
    final int r;
    final SimulatedCudaRuntime rt;
    final DeviceKvLayout target;
    final DeviceKvLayout draft;
    final long targetBase;
    final long draftBase;
    final MemorySegment targetDev;
    final MemorySegment draftDev;
    final HiCache cache;
    final RadixTree tree;
    /** Tag of the newest write queued for (layer, device page); the bytes follow once it runs. */
    final int[][] devTagT;
    final int[][] devTagD;
    /** Expected content of (host page, layer): (tag << 32 | device page) when the layer's hook fired. */
    final long[][] expT;
    final long[][] expD;
    final boolean[] hostDraft;
    final List<Long> committedSeqs = new ArrayList<>();
    /** Device pages this rank's engine holds free (rank 0's also sit, in order, in {@link DevicePages#freeDevice}). */
    final BitSet freeModel = new BitSet();
    final HarnessAllocator allocator;
    /** Load batches whose load-stream operations the op listener times. */
    final List<Batch> timedBatches = new ArrayList<>();
    final long loadStream;
    long polls;

    Rank(DstHarness h, int r, InProcessRankAgreement agreement, boolean coalesce, boolean batched,
         boolean batchedSupported) {
        this.r = r;
        this.allocator = new HarnessAllocator(h, this);
        SimulatedCudaConfig.Builder cb = SimulatedCudaConfig.builder().seed(h.seed * 31 + r)
            .batchedCopySupported(batchedSupported);
        if (h.copyFailureProbability > 0) {
            cb.copyFailureProbability(h.copyFailureProbability, CudaError.UNKNOWN);
        }
        if (h.delayProbability > 0) {
            cb.delayedCompletions(h.delayProbability, 20_000);
        }
        rt = new SimulatedCudaRuntime(cb.build());
        rt.checkUseAfterFree(true);
        boolean traceOps = Boolean.getBoolean("hicache.dst.trace");
        if (traceOps || h.loads) {
            rt.setOpListener((op, type, stream, startNs, endNs, err) -> {
                if (traceOps) {
                    h.trace("  rank " + r + " device op " + op + " type " + type + " stream " + stream + " " + startNs
                        + ".." + endNs + (err != 0 ? " ERROR " + err : ""));
                }
                h.loadSteps.onDeviceOp(this, op, type, stream, endNs);
            });
        }
        DeviceKvLayout.Builder tb = DeviceKvLayout.builder(h.attention).layerCount(h.layers)
            .pageSizeTokens(h.pageSize).bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(h.devicePages);
        long tBytes = tb.packedBytes();
        targetBase = rt.deviceMalloc(tBytes);
        target = tb.packedFrom(targetBase).build();
        targetDev = rt.deviceMemory(targetBase, tBytes);
        if (h.draftLayers > 0) {
            DeviceKvLayout.Builder db = DeviceKvLayout.builder(h.attention).layerCount(h.draftLayers)
                .pageSizeTokens(h.pageSize).bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(h.devicePages);
            long dBytes = db.packedBytes();
            draftBase = rt.deviceMalloc(dBytes);
            draft = db.packedFrom(draftBase).build();
            draftDev = rt.deviceMemory(draftBase, dBytes);
        } else {
            draftBase = 0;
            draft = null;
            draftDev = null;
        }
        HiCache.Builder hb = HiCache.builder().runtime(rt).targetLayout(target)
            .draftLayout(draft).hostPages(h.hostPages).hostLayout(h.hostLayout).threadingMode(ThreadingMode.INVOKER)
            .clock(rt::nowNs).leaseNs(h.leaseNs).checkThread(false).writePolicy(h.policy).backupMode(h.mode)
            .coalesce(coalesce).batchedCopies(batched).listener(h.checks.listener(this))
            .maxForwardsInFlight(h.maxForwardsInFlight);
        if (h.cp > 1) {
            hb.cpGroup(h.cp, r, h.lanes, agreement);
        }
        if (h.sealedLimitNs > 0) {
            hb.sealedTimeLimitNs(h.sealedLimitNs);
        }
        if (h.loads) {
            // this harness models loads that become device hits at agreement; LoadOverlapDstTest covers the
            // same-forward LOADING state
            hb.loadThresholdTokens(h.loadThresholdTokens).loadListener(h.loadSteps.listener(this))
                .loadOverlap(io.hicache.core.LoadOverlap.PREVIOUS_BATCH, "DST model of batch-ahead loads");
        }
        try {
            cache = hb.build();
        } catch (RuntimeException e) {
            rt.close();
            throw e;
        }
        loadStream = cache.loadStream().handle();
        tree = CacheInternals.tree(cache);
        devTagT = new int[h.layers][h.devicePages];
        devTagD = new int[Math.max(h.draftLayers, 0)][h.devicePages];
        expT = new long[h.hostPages][h.layers];
        expD = new long[h.hostPages][Math.max(h.draftLayers, 0)];
        hostDraft = new boolean[h.hostPages];
        for (long[] row : expT) {
            Arrays.fill(row, UNSET);
        }
        for (long[] row : expD) {
            Arrays.fill(row, UNSET);
        }
        for (int pg = 0; pg < h.devicePages; pg++) {
            for (int l = 0; l < h.layers; l++) {
                devTagT[l][pg] = 1;
                writeDevice(false, l, pg, 1);
            }
            for (int d = 0; d < h.draftLayers; d++) {
                devTagD[d][pg] = 1;
                writeDevice(true, d, pg, 1);
            }
        }
    }

    void writeDevice(boolean isDraft, int layer, int page, int tag) {
        DeviceKvLayout l = isDraft ? draft : target;
        MemorySegment seg = isDraft ? draftDev : targetDev;
        long base = isDraft ? draftBase : targetBase;
        long words = l.pageBytes() / 8;
        for (int buf = 0; buf < l.bufferCount(); buf++) {
            long off = l.pageAddress(layer, buf, page) - base;
            for (long w = 0; w < words; w++) {
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + w * 8, pattern(tag, r, isDraft, layer, buf, page, w));
            }
        }
    }

    /**
     * Null when host page {@code hostPage} holds the copy of device page {@code devPage} written with {@code tag};
     * else a description of the first differing word.
     */
    String hostMismatch(boolean isDraft, int layer, int hostPage, long expected) {
        if (expected == UNSET) {
            return "rank " + r + (isDraft ? " draft" : " target") + " layer " + layer + " host page " + hostPage
                + ": published although its hook never fired";
        }
        int tag = (int) (expected >>> 32);
        int devPage = (int) expected;
        DeviceKvLayout l = isDraft ? draft : target;
        HostKvPool pool = isDraft ? CacheInternals.hostPool(cache, true) : CacheInternals.hostPool(cache, false);
        MemorySegment seg = pool.segment();
        long base = pool.baseAddress();
        long words = l.pageBytes() / 8;
        for (int buf = 0; buf < l.bufferCount(); buf++) {
            long off = pool.pageAddress(layer, buf, hostPage) - base;
            long pitch = pool.tokenPitchBytes();
            for (long w = 0; w < words; w++) {
                long want = pattern(tag, r, isDraft, layer, buf, devPage, w);
                long byteInPage = w * 8;
                long at = off + (byteInPage / BYTES_PER_TOKEN) * pitch + byteInPage % BYTES_PER_TOKEN;
                long got = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
                if (got != want) {
                    return "rank " + r + (isDraft ? " draft" : " target") + " layer " + layer + " host page "
                        + hostPage + " buf " + buf + " word " + w + ": expected the copy of device page " + devPage
                        + " with tag " + tag + " but found other bytes";
                }
            }
        }
        return null;
    }

    /** True when layer {@code layer} of device page {@code devPage} holds the bytes of host page {@code hostPage}. */
    boolean deviceEqualsHost(boolean isDraft, int layer, int devPage, int hostPage) {
        DeviceKvLayout l = isDraft ? draft : target;
        MemorySegment dev = isDraft ? draftDev : targetDev;
        long devBase = isDraft ? draftBase : targetBase;
        HostKvPool pool = isDraft ? CacheInternals.hostPool(cache, true) : CacheInternals.hostPool(cache, false);
        MemorySegment host = pool.segment();
        long hostBase = pool.baseAddress();
        long pitch = pool.tokenPitchBytes();
        long words = l.pageBytes() / 8;
        for (int buf = 0; buf < l.bufferCount(); buf++) {
            long devOff = l.pageAddress(layer, buf, devPage) - devBase;
            long hostOff = pool.pageAddress(layer, buf, hostPage) - hostBase;
            for (long w = 0; w < words; w++) {
                long byteInPage = w * 8;
                long at = hostOff + (byteInPage / BYTES_PER_TOKEN) * pitch + byteInPage % BYTES_PER_TOKEN;
                if (dev.get(ValueLayout.JAVA_LONG_UNALIGNED, devOff + byteInPage)
                    != host.get(ValueLayout.JAVA_LONG_UNALIGNED, at)) {
                    return false;
                }
            }
        }
        return true;
    }

    void closeQuietly() {
        try {
            cache.close();
        } catch (RuntimeException ignored) {
            // cleanup after a failed construction
        }
        rt.close();
    }
}
