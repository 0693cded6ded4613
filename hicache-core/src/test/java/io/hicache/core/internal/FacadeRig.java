package io.hicache.core.internal;

import io.hicache.core.BackupHandle;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Test rig for the public facade: one simulated device (wrapped in a {@link FaultInjectingRuntime}), a packed device
 * KV area with a free-page pool, and helpers that drive a {@link HiCache} only through its public API, as an engine
 * would. The caches it builds step their agents in the test ({@link ThreadingMode#INVOKER}) unless a test says
 * otherwise.
 */
final class FacadeRig implements AutoCloseable {
    static final int LAYERS = 4;
    static final int DRAFT_LAYERS = 1;
    static final int PAGE = 4;
    static final int DEVICE_PAGES = 64;

    final SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
    final FaultInjectingRuntime fault = new FaultInjectingRuntime(gpu);
    final DeviceKvLayout target;
    final DeviceKvLayout draft;
    private final long targetBase;
    private final long draftBase;

    FacadeRig() {
        this(LAYERS);
    }

    /** A rig whose target KV has {@code layers} layers. */
    FacadeRig(int layers) {
        DeviceKvLayout.Builder tb = layout(layers);
        DeviceKvLayout.Builder db = layout(DRAFT_LAYERS);
        targetBase = gpu.deviceMalloc(tb.packedBytes());
        draftBase = gpu.deviceMalloc(db.packedBytes());
        target = tb.packedFrom(targetBase).build();
        draft = db.packedFrom(draftBase).build();
    }

    private static DeviceKvLayout.Builder layout(int layers) {
        return DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
    }

    /** A builder for a cache on this rig's (fault-injecting) device, agents stepped by the caller. */
    HiCache.Builder builder() {
        return HiCache.builder().runtime(fault).targetLayout(target).hostPages(32)
            .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs);
    }

    /** Inserts {@code pages} whole pages of tokens starting at {@code base}; returns the node the insert ended on. */
    static RadixNode insert(HiCache cache, DevicePagePool pool, int base, int pages) {
        int[] tokens = tokens(base, pages);
        int[] dev = new int[pages];
        assertThat(pool.allocate(pages, dev, 0)).isTrue();
        assertThat(cache.insert(tokens, 0, tokens.length, dev, 0)).isZero();
        return cache.lastInsertNode();
    }

    static int[] tokens(int base, int pages) {
        int[] t = new int[pages * PAGE];
        for (int i = 0; i < t.length; i++) {
            t[i] = base + i;
        }
        return t;
    }

    /** Reserves the backup of {@code node} (by policy) and returns it. */
    static BackupHandle reserve(HiCache cache, RadixNode node, boolean withDraft) {
        List<BackupHandle> out = new ArrayList<>();
        assertThat(cache.reserveByPolicy(node, withDraft, out)).isEqualTo(1);
        return out.getFirst();
    }

    /** Begins a forward carrying {@code backups} and calls every target (and draft) hook and the end. */
    void forward(HiCache cache, List<BackupHandle> backups) {
        ForwardHooks hooks = cache.beginForward(backups);
        for (int l = 0; l < cache.targetLayers(); l++) {
            gpu.simulateKernel(cache.computeStream(), 1_000);
            hooks.targetLayerStored(l);
        }
        for (int d = 0; d < cache.draftLayers(); d++) {
            hooks.draftLayerStored(d);
        }
        hooks.endForward();
    }

    /**
     * Steps {@code cache} (its agents in INVOKER mode, the device, {@code poll}) until {@code done}, at most
     * {@code steps} times; the agents of a DEDICATED cache run on their own threads meanwhile.
     *
     * @return whether {@code done} held
     */
    boolean pollUntil(HiCache cache, ThreadingMode mode, BooleanSupplier done, int steps) {
        for (int i = 0; i < steps && !done.getAsBoolean(); i++) {
            if (mode == ThreadingMode.INVOKER) {
                cache.doAgentWork();
            } else {
                Thread.onSpinWait();
            }
            gpu.advanceToNextEvent();
            cache.poll();
        }
        return done.getAsBoolean();
    }

    /** A host hit after the device copy is evicted: the tokens of {@code pages} pages from {@code base}. */
    static int hostHitTokens(HiCache cache, DevicePagePool pool, int base, int pages) {
        cache.evictDevice(pages, pool);
        int[] tokens = tokens(base, pages);
        return cache.match(tokens, 0, tokens.length, new MatchResult()).hostTokenCount();
    }

    @Override
    public void close() {
        if (gpu.stickyErrorCode() == 0) { // a poisoned context frees nothing
            gpu.deviceFree(targetBase);
            gpu.deviceFree(draftBase);
        }
        gpu.close();
    }

    /** The engine's device page pool: the library's free list of {@link #DEVICE_PAGES} pages. Scheduler thread. */
    static DevicePagePool pages() {
        return new DevicePagePool(DEVICE_PAGES);
    }
}
