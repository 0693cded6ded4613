package io.hicache.bench;

import io.hicache.core.internal.Backup;
import io.hicache.core.BackupState;
import io.hicache.core.BenchmarkDoor;
import io.hicache.core.DevicePageSink;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.HiCache;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.RadixNode;

import java.util.ArrayList;
import java.util.List;

/**
 * Controllers of one CP group (one per rank, each on its own runtime) stepped by the benchmark thread in
 * {@link ThreadingMode#INVOKER} mode, with a device page free list shared by the ranks (identical scheduling)
 * and fresh token ids per sequence. Mirrors the hicache-core test rig, for benchmarks. Not thread-safe.
 */
public final class ControllerRig implements AutoCloseable {
    /** Which runtime the controllers run on. */
    public enum Runtime {
        /** {@link SimulatedCudaRuntime}: virtual clock, a lock per call, real byte copies. */
        SIMULATED,
        /** {@link NoOpCudaRuntime}: nothing happens; the library's own cost. */
        NOOP
    }

    final int cp;
    final int pageSize;
    final CudaRuntime[] runtimes;
    /** The caches as an engine has them (built with the public builder), one per rank. */
    final HiCache[] caches;
    /** Their controllers (through the {@link BenchmarkDoor}), which the benchmarks drive directly. */
    final HiCacheController[] controllers;
    private final int[] freeDevicePages;
    private int freeDeviceCount;
    private int nextToken;
    private boolean scattered;
    private int[] tokens;
    private int[] pages;
    private final DevicePageSink toFreeList = this::free;
    private final DevicePageSink discard = (p, off, count) -> { };
    final List<List<Backup>> reserved = new ArrayList<>();
    private final List<Backup> started = new ArrayList<>();

    ControllerRig(Runtime kind, int cp, int layers, int draftLayers, int pageSize, int devicePages, int hostPages,
                  long bytesPerToken, int forwardsInFlight, boolean coalesce) {
        this.cp = cp;
        this.pageSize = pageSize;
        this.runtimes = new CudaRuntime[cp];
        this.caches = new HiCache[cp];
        this.controllers = new HiCacheController[cp];
        InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        for (int r = 0; r < cp; r++) {
            CudaRuntime rt = kind == Runtime.SIMULATED ? new SimulatedCudaRuntime() : new NoOpCudaRuntime();
            runtimes[r] = rt;
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers)
                .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(bytesPerToken).pageCount(devicePages);
            DeviceKvLayout target = tb.packedFrom(rt.deviceMalloc(tb.packedBytes())).build();
            DeviceKvLayout draft = null;
            if (draftLayers > 0) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                    .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(bytesPerToken).pageCount(devicePages);
                draft = db.packedFrom(rt.deviceMalloc(db.packedBytes())).build();
            }
            HiCache.Builder b = HiCache.builder().runtime(rt).targetLayout(target)
                .draftLayout(draft).hostPages(hostPages).threadingMode(ThreadingMode.INVOKER).leaseNs(0)
                .checkThread(false).maxForwardsInFlight(forwardsInFlight).coalesce(coalesce);
            if (rt instanceof SimulatedCudaRuntime sim) {
                b.clock(sim::nowNs);
            }
            if (cp > 1) {
                b.cpGroup(cp, r, OwnerLanes.Standard.ROUND_ROBIN, agreement);
            }
            caches[r] = b.build();
            controllers[r] = BenchmarkDoor.controller(caches[r]);
            reserved.add(new ArrayList<>());
        }
        freeDevicePages = new int[devicePages];
        for (int p = devicePages - 1; p >= 0; p--) {
            freeDevicePages[freeDeviceCount++] = p;
        }
        tokens = new int[pageSize];
        pages = new int[1];
    }

    /**
     * Inserts a fresh sequence of {@code pageCount} pages on every rank and reserves its backup, adding it to
     * {@link #reserved} per rank.
     */
    void insertAndReserve(int pageCount, boolean withDraft) {
        if (tokens.length < pageCount * pageSize) {
            tokens = new int[pageCount * pageSize];
            pages = new int[pageCount];
        }
        int len = pageCount * pageSize;
        for (int i = 0; i < len; i++) {
            tokens[i] = nextToken++;
        }
        if (freeDeviceCount < pageCount) {
            throw new IllegalStateException("out of device pages: evict after each round");
        }
        for (int i = 0; i < pageCount; i++) {
            pages[i] = freeDevicePages[--freeDeviceCount];
        }
        for (int r = 0; r < cp; r++) {
            controllers[r].tree().insert(tokens, 0, len, pages, 0);
            RadixNode node = controllers[r].tree().lastInsertNode();
            Backup b = controllers[r].reserve(node, withDraft);
            if (b == null) {
                throw new IllegalStateException("host pool has no room even after host eviction");
            }
            reserved.get(r).add(b);
        }
    }

    /** Starts one forward per rank over the backups reserved since the last forward. */
    ForwardHandle[] beginForward() {
        ForwardHandle[] h = new ForwardHandle[cp];
        for (int r = 0; r < cp; r++) {
            h[r] = controllers[r].beginForward(reserved.get(r));
            started.addAll(reserved.get(r));
            reserved.get(r).clear();
        }
        return h;
    }

    /** Hands out device pages in a fixed pseudo-random order from now on, so no two pages of a backup are adjacent. */
    void scatterDevicePages(long seed) {
        java.util.Random random = new java.util.Random(seed);
        for (int i = freeDeviceCount - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = freeDevicePages[i];
            freeDevicePages[i] = freeDevicePages[j];
            freeDevicePages[j] = t;
        }
        scattered = true;
    }

    /**
     * Runs {@code forwards} forwards, each backing up one fresh node of {@code pageCount} pages on every rank with
     * {@code layers} target-layer hooks, then steps the agents until all of them are acknowledged: what the commit
     * path's rows prepare before they time {@link #pollUntilRetired()}.
     */
    void forwardAndAck(int forwards, int pageCount, int layers) {
        for (int f = 0; f < forwards; f++) {
            insertAndReserve(pageCount, false);
            for (ForwardHandle handle : beginForward()) {
                for (int l = 0; l < layers; l++) {
                    handle.targetLayerStored(l);
                }
                handle.endForward();
            }
        }
        runAgentsUntilAcked();
    }

    /** Steps the agents and the simulated devices until every sealed forward is acknowledged to the scheduler. */
    void runAgentsUntilAcked() {
        for (int i = 0; i < 1_000_000; i++) {
            int work = 0;
            int pending = 0;
            for (HiCacheController c : controllers) {
                work += c.doAgentWork();
                pending += c.completionAgent().inFlight();
            }
            boolean advanced = false;
            for (CudaRuntime rt : runtimes) {
                if (rt instanceof SimulatedCudaRuntime sim) {
                    advanced |= sim.advanceToNextEvent();
                }
            }
            if (!advanced && work == 0 && pending == 0) {
                return;
            }
        }
        throw new IllegalStateException("agents did not finish");
    }

    /** Polls every rank until no backup is in flight. */
    void pollUntilRetired() {
        for (int i = 0; i < 64; i++) {
            int inFlight = 0;
            for (HiCacheController c : controllers) {
                c.poll();
                inFlight += c.backupsInFlight();
            }
            if (inFlight == 0) {
                return;
            }
        }
        throw new IllegalStateException("backups still in flight after 64 polls");
    }

    /** Checks the started backups committed, forgets them and evicts their device pages on every rank. */
    void retireAndEvict(int devicePages) {
        for (int i = 0; i < started.size(); i++) {
            if (started.get(i).state() != BackupState.COMMITTED) {
                throw new IllegalStateException("backup " + started.get(i) + " did not commit");
            }
        }
        started.clear();
        for (int r = 0; r < cp; r++) {
            controllers[r].evictDevice(devicePages, r == 0 ? toFreeList : discard);
        }
    }

    private void free(int[] p, int off, int count) {
        for (int i = count - 1; i >= 0; i--) {
            freeDevicePages[freeDeviceCount++] = p[off + i]; // reversed: popped again in ascending order
        }
        if (scattered) {
            scatterDevicePages(freeDeviceCount);
        }
    }

    @Override
    public void close() {
        for (int r = 0; r < cp; r++) {
            controllers[r].close();
            runtimes[r].close();
        }
    }
}
