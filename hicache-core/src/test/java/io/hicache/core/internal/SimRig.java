package io.hicache.core.internal;

import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.RadixNode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Test rig: one simulated device per CP rank, a packed device KV area (target and optional draft) with a
 * free-page list, and a controller per rank stepped by hand ({@link ThreadingMode#INVOKER}).
 */
final class SimRig implements AutoCloseable {
    final int cp;
    final int layers;
    final int draftLayers;
    final int pageSize;
    final int devicePages;
    final long bytesPerToken;
    final SimulatedCudaRuntime[] rt;
    final DeviceKvLayout[] target;
    final DeviceKvLayout[] draft;
    final HiCacheController[] ctl;
    final long[] targetBase;
    final long[] draftBase;
    private final io.hicache.core.DevicePagePool freeDevicePages;

    static Builder builder() {
        return new Builder();
    }

    static final class Builder {
        int cp = 1;
        int layers = 4;
        int draftLayers;
        int pageSize = 4;
        int devicePages = 64;
        int hostPages = 64;
        long bytesPerToken = 16;
        OwnerLanes lanes = OwnerLanes.Standard.ROUND_ROBIN;
        long seed = 1;
        Consumer<SimulatedCudaConfig.Builder> device = b -> { };
        Consumer<ControllerBuilder> controller = b -> { };
        java.util.function.Function<io.hicache.cuda.CudaRuntime, io.hicache.cuda.CudaRuntime> wrap = r -> r;

        Builder cp(int cp, OwnerLanes lanes) {
            this.cp = cp;
            this.lanes = lanes;
            return this;
        }

        Builder layers(int layers, int draftLayers) {
            this.layers = layers;
            this.draftLayers = draftLayers;
            return this;
        }

        Builder pages(int pageSize, int devicePages, int hostPages) {
            this.pageSize = pageSize;
            this.devicePages = devicePages;
            this.hostPages = hostPages;
            return this;
        }

        Builder bytesPerToken(long b) {
            this.bytesPerToken = b;
            return this;
        }

        Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        Builder device(Consumer<SimulatedCudaConfig.Builder> c) {
            this.device = c;
            return this;
        }

        /** Wraps each rank's runtime before the controller gets it (fault injection); the rig keeps the raw one. */
        Builder wrapRuntime(java.util.function.Function<io.hicache.cuda.CudaRuntime, io.hicache.cuda.CudaRuntime> w) {
            this.wrap = w;
            return this;
        }

        Builder controller(Consumer<ControllerBuilder> c) {
            this.controller = c;
            return this;
        }

        SimRig build() {
            return new SimRig(this);
        }
    }

    private SimRig(Builder b) {
        this.cp = b.cp;
        this.layers = b.layers;
        this.draftLayers = b.draftLayers;
        this.pageSize = b.pageSize;
        this.devicePages = b.devicePages;
        this.bytesPerToken = b.bytesPerToken;
        rt = new SimulatedCudaRuntime[cp];
        target = new DeviceKvLayout[cp];
        draft = new DeviceKvLayout[cp];
        ctl = new HiCacheController[cp];
        targetBase = new long[cp];
        draftBase = new long[cp];
        RankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        for (int r = 0; r < cp; r++) {
            SimulatedCudaConfig.Builder cb = SimulatedCudaConfig.builder().seed(b.seed * 31 + r);
            b.device.accept(cb);
            rt[r] = new SimulatedCudaRuntime(cb.build());
            rt[r].checkUseAfterFree(true);
            LeakCheckExtension.track(rt[r]);
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers)
                .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(bytesPerToken).pageCount(devicePages);
            targetBase[r] = rt[r].deviceMalloc(tb.packedBytes());
            target[r] = tb.packedFrom(targetBase[r]).build();
            if (draftLayers > 0) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                    .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(bytesPerToken).pageCount(devicePages);
                draftBase[r] = rt[r].deviceMalloc(db.packedBytes());
                draft[r] = db.packedFrom(draftBase[r]).build();
            }
            SimulatedCudaRuntime runtime = rt[r];
            ControllerBuilder hb = HiCacheController.builder().runtime(b.wrap.apply(runtime)).targetLayout(target[r])
                .draftLayout(draft[r]).hostPages(b.hostPages).threadingMode(ThreadingMode.INVOKER)
                .clock(runtime::nowNs).leaseNs(0).checkThread(false);
            if (cp > 1) {
                hb.cpGroup(cp, r, b.lanes, agreement);
            }
            b.controller.accept(hb);
            ctl[r] = hb.build();
        }
        freeDevicePages = new io.hicache.core.DevicePagePool(devicePages);
    }

    /** Takes n free device pages (same ids on every rank: identical scheduling). */
    int[] takeDevicePages(int n) {
        if (freeDevicePages.freePages() < n) {
            throw new IllegalStateException("rig out of device pages");
        }
        return freeDevicePages.take(n);
    }

    void freeDevicePages(int[] pages, int off, int count) {
        freeDevicePages.free(pages, off, count);
    }

    int freeDevicePageCount() {
        return freeDevicePages.freePages();
    }

    /** Inserts tokens on every rank; returns the last node per rank; frees duplicate pages. */
    RadixNode[] insert(int[] tokens) {
        int pages = tokens.length / pageSize;
        int[] dev = takeDevicePages(pages);
        RadixNode[] last = new RadixNode[cp];
        int dup = 0;
        for (int r = 0; r < cp; r++) {
            dup = ctl[r].tree().insert(tokens, 0, tokens.length, dev, 0);
            last[r] = ctl[r].tree().lastInsertNode();
        }
        freeDevicePages(dev, 0, dup / pageSize);
        return last;
    }

    /** Writes a pattern derived from (tag, rank, layer, page) into one device page of a layer on one rank. */
    void writeDevicePage(int rank, boolean isDraft, int layer, int page, int tag) {
        DeviceKvLayout l = isDraft ? draft[rank] : target[rank];
        for (int buf = 0; buf < l.bufferCount(); buf++) {
            MemorySegment seg = rt[rank].deviceMemory(l.pageAddress(layer, buf, page), l.pageBytes());
            long words = l.pageBytes() / 8;
            for (long w = 0; w < words; w++) {
                seg.setAtIndex(ValueLayout.JAVA_LONG, w, pattern(tag, rank, isDraft, layer, buf, page, w));
            }
        }
    }

    static long pattern(int tag, int rank, boolean isDraft, int layer, int buf, int page, long word) {
        long h = tag * 0x9E3779B97F4A7C15L ^ (rank + 1) * 0xC2B2AE3D27D4EB4FL ^ (isDraft ? 0x165667B19E3779F9L : 0)
            ^ (layer + 1L) * 0x27D4EB2F165667C5L ^ (buf + 1L) * 0x94D049BB133111EBL ^ (page + 1L) * 0xBF58476D1CE4E5B9L
            ^ word * 0x85EBCA77C2B2AE63L;
        return h ^ (h >>> 29);
    }

    /** True if host page {@code hostPage} holds exactly the bytes of device page {@code devPage} for a layer. */
    boolean hostMatchesDevice(int rank, boolean isDraft, int layer, int devPage, int hostPage) {
        DeviceKvLayout l = isDraft ? draft[rank] : target[rank];
        var pool = isDraft ? ctl[rank].draftHostPool() : ctl[rank].hostPool();
        for (int buf = 0; buf < l.bufferCount(); buf++) {
            MemorySegment d = rt[rank].deviceMemory(l.pageAddress(layer, buf, devPage), l.pageBytes());
            MemorySegment h = rt[rank].hostMemory(pool.pageAddress(layer, buf, hostPage), l.pageBytes());
            if (d.mismatch(h) != -1) {
                return false;
            }
        }
        return true;
    }

    /** One round on every rank: agents, then poll. Returns total changes. */
    int stepAll() {
        int changes = 0;
        for (int r = 0; r < cp; r++) {
            ctl[r].doAgentWork();
        }
        for (int r = 0; r < cp; r++) {
            changes += ctl[r].poll();
        }
        return changes;
    }

    /** Advances every device to its next event (the earliest among ranks) and steps. */
    boolean advance() {
        long next = Long.MAX_VALUE;
        for (SimulatedCudaRuntime r : rt) {
            next = Math.min(next, r.nextEventTimeNs());
        }
        if (next == Long.MAX_VALUE) {
            return false;
        }
        for (SimulatedCudaRuntime r : rt) {
            r.advanceTo(Math.max(next, r.nowNs()));
        }
        return true;
    }

    /** Steps agents, devices and polls until nothing is in flight on any rank (bounded). */
    void drain() {
        for (int i = 0; i < 100_000; i++) {
            stepAll();
            boolean busy = false;
            for (HiCacheController c : ctl) {
                busy |= c.backupsInFlight() > 0;
            }
            if (!busy) {
                return;
            }
            if (!advance()) {
                stepAll();
            }
        }
        StringBuilder sb = new StringBuilder("rig did not drain:");
        for (HiCacheController c : ctl) {
            sb.append(" inFlight=").append(c.backupsInFlight()).append(" completionInFlight=").append(c.completionAgent().inFlight());
        }
        throw new AssertionError(sb.toString());
    }

    /** Runs one forward on every rank: per layer a kernel of computeNs, then the hooks; then endForward. */
    ForwardHandle[] forward(List<List<Backup>> perRank, long layerComputeNs, boolean hooks) {
        ForwardHandle[] h = new ForwardHandle[cp];
        for (int r = 0; r < cp; r++) {
            h[r] = ctl[r].beginForward(perRank.get(r));
        }
        for (int l = 0; l < layers; l++) {
            for (int r = 0; r < cp; r++) {
                if (layerComputeNs > 0) {
                    rt[r].simulateKernel(ctl[r].computeStream(), layerComputeNs);
                }
                if (hooks) {
                    h[r].targetLayerStored(l);
                }
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int r = 0; r < cp; r++) {
                if (hooks) {
                    h[r].draftLayerStored(d);
                }
            }
        }
        for (int r = 0; r < cp; r++) {
            h[r].endForward();
        }
        return h;
    }

    /** Reserves by policy on every rank for the given last nodes. */
    List<List<Backup>> reserveByPolicy(RadixNode[] last, boolean withDraft) {
        List<List<Backup>> out = new ArrayList<>();
        for (int r = 0; r < cp; r++) {
            List<Backup> l = new ArrayList<>();
            ctl[r].reserveByPolicy(last[r], withDraft, l);
            out.add(l);
        }
        return out;
    }

    @Override
    public void close() {
        for (int r = 0; r < cp; r++) {
            ctl[r].close();
            if (rt[r].stickyErrorCode() != 0) {
                continue; // a poisoned context frees nothing, as on a real device
            }
            rt[r].deviceFree(targetBase[r]);
            if (draftBase[r] != 0) {
                rt[r].deviceFree(draftBase[r]);
            }
        }
    }

    void closeRuntimes() {
        for (SimulatedCudaRuntime r : rt) {
            r.close();
        }
    }
}
