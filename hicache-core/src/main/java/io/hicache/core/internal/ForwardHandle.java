package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupMode;
import com.lmax.disruptor.RingBuffer;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.util.function.LongSupplier;

/**
 * The per-layer hooks of one forward pass, carried by the engine's forward thread.
 *
 * <p>Call {@link #targetLayerStored(int)} when the target model has written layer {@code l} of the KV of
 * this forward, {@link #draftLayerStored(int)} when the draft/MTP model has written its layer {@code d},
 * and {@link #endForward()} once at the end. In {@link BackupMode#LAYERED} mode each hook records an event
 * on the compute stream and publishes (layer, event) to the submitter; the copies of that layer are then
 * ordered after the event on the backup stream and overlap with the following layers. In all-layer mode
 * the hooks only validate and {@code endForward} starts every copy.
 *
 * <p><b>Thread:</b> one forward thread at a time. Hooks never block, never touch the radix tree and
 * allocate nothing. <b>Failures:</b> a layer out of range throws {@link IllegalArgumentException}; a hook
 * after {@code endForward}, a repeated hook, or a draft hook when no draft layout is configured throws
 * {@link IllegalStateException}; in each case nothing is recorded or published. A CUDA error while
 * recording the event is rethrown as {@link io.hicache.cuda.CudaException} after marking the layer missing,
 * so the forward's backups are aborted at its end rather than published.
 */
public final class ForwardHandle implements io.hicache.core.ForwardHooks {
    private final ForwardSlot slot;
    private final long generation;
    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final RingBuffer<HookEvent> ring;
    private final LongSupplier clock;
    private final int targetLayers;
    private final int draftLayers;
    private final long[] targetSeen;
    private final long[] draftSeen;
    private boolean ended;
    private long endNs;

    ForwardHandle(ForwardSlot slot, long generation, CudaRuntime runtime, CudaStream computeStream,
                  RingBuffer<HookEvent> ring, LongSupplier clock, int targetLayers, int draftLayers) {
        this.slot = slot;
        this.generation = generation;
        this.runtime = runtime;
        this.computeStream = computeStream;
        this.ring = ring;
        this.clock = clock;
        this.targetLayers = targetLayers;
        this.draftLayers = draftLayers;
        this.targetSeen = new long[(targetLayers + 63) >>> 6];
        this.draftSeen = new long[Math.max(1, (draftLayers + 63) >>> 6)];
    }

    /** Hook: the target model has stored layer {@code layer} of this forward's KV. Forward thread. */
    public void targetLayerStored(int layer) {
        checkOpen("targetLayerStored");
        if (layer < 0 || layer >= targetLayers) {
            throw new IllegalArgumentException("target layer " + layer + " outside [0, " + targetLayers + ")");
        }
        if (!ForwardSlot.testAndSet(targetSeen, layer)) {
            throw new IllegalStateException("target layer " + layer + " was already reported stored for this forward");
        }
        if (slot != null && !slot.allLayers) {
            runtime.recordEvent(slot.targetEvents[layer], computeStream);
            publish(HookEvent.TARGET, layer);
        }
    }

    /** Hook: the draft/MTP model has stored its layer {@code layer} of this forward's KV. Forward thread. */
    public void draftLayerStored(int layer) {
        checkOpen("draftLayerStored");
        if (draftLayers == 0) {
            throw new IllegalStateException("draftLayerStored(" + layer + ") but no draft KV layout is configured");
        }
        if (layer < 0 || layer >= draftLayers) {
            throw new IllegalArgumentException("draft layer " + layer + " outside [0, " + draftLayers + ")");
        }
        if (!ForwardSlot.testAndSet(draftSeen, layer)) {
            throw new IllegalStateException("draft layer " + layer + " was already reported stored for this forward");
        }
        if (slot != null && !slot.allLayers && slot.hasDraft) {
            runtime.recordEvent(slot.draftEvents[layer], computeStream);
            publish(HookEvent.DRAFT, layer);
        }
    }

    /**
     * Ends the forward: the submitter checks every declared layer was stored (else the backups are aborted
     * with {@link AbortReason#TARGET_LAYER_MISSING} or {@link AbortReason#DRAFT_LAYER_MISSING}) and seals it.
     * Forward thread; once.
     */
    public void endForward() {
        checkOpen("endForward");
        ended = true;
        endNs = clock.getAsLong();
        if (slot != null) {
            runtime.recordEvent(slot.endEvent, computeStream);
            publish(HookEvent.END, 0);
        }
    }

    /** True once {@link #endForward()} ran. */
    public boolean ended() {
        return ended;
    }

    /** Number of backups this forward carries (0 for a forward with nothing to back up). */
    public int backupCount() {
        return slot == null ? 0 : slot.backupCount;
    }

    private void checkOpen(String call) {
        if (ended) {
            throw new IllegalStateException(call + " after endForward: a forward handle is finished once ended");
        }
    }

    private void publish(int kind, int layer) {
        long seq = ring.next();
        try {
            HookEvent e = ring.get(seq);
            e.slot = slot;
            e.generation = generation;
            e.kind = kind;
            e.layer = layer;
        } finally {
            ring.publish(seq);
        }
    }
}
