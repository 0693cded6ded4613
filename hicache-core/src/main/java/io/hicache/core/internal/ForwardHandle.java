package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupMode;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;



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
 * <p><b>Lease.</b> The handle owns its forward slot (events, layer masks) from {@code beginForward} until
 * {@code endForward} returns, or until a hook throws because the forward was revoked: its lease expired before
 * it was sealed, or the controller closed. Such a hook throws {@link IllegalStateException} naming the lease expiry
 * (or "closed") without recording or publishing anything, and so does every later call; the controller reuses the
 * slot only after that. The controller hands the same handle object out again for a later forward once this one
 * ended and was acknowledged: do not keep a handle after {@code endForward} (an invalidated handle is never
 * handed out again).
 *
 * <p><b>Thread:</b> one forward thread at a time per handle. Handles of one controller may run their hooks on
 * different threads at once: each publishes into its own slot's lane of the hook ring, so a hook stalled in its event
 * record when its lease was revoked, which still publishes, cannot disturb the next forward. Hooks never block, never touch the radix tree and
 * allocate nothing; with the slot's hook lane full (the submitter fell behind) the forward's remaining layers are
 * copied after its end, counted as {@code FallbackReason.HOOK_RING_FULL}. <b>Failures:</b> a layer out of range
 * throws {@link IllegalArgumentException}; a hook after {@code endForward}, a repeated hook, or a draft hook when
 * no draft layout is configured throws {@link IllegalStateException}; in each case nothing is recorded or
 * published. A CUDA error while recording the event is rethrown as {@link io.hicache.cuda.CudaException} after
 * marking the layer missing, so the forward's backups are aborted at its end rather than published.
 */
public final class ForwardHandle implements io.hicache.core.ForwardHooks {
    private final ForwardSlot slot;
    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final HookRing ring;
    private final int targetLayers;
    private final int draftLayers;
    private final long[] targetSeen;
    private final long[] draftSeen;
    private long generation;
    private int backupCount;
    private int targetSeenCount;
    private int draftSeenCount;
    private boolean ended;
    private boolean revoked;
    private boolean overflowed;
    /** Forward thread → scheduler for handles without a slot: free for the next forward without backups. */
    private volatile boolean released = true;

    ForwardHandle(ForwardSlot slot, CudaRuntime runtime, CudaStream computeStream, HookRing ring,
                  int targetLayers, int draftLayers) {
        this.slot = slot;
        this.runtime = runtime;
        this.computeStream = computeStream;
        this.ring = ring;
        this.targetLayers = targetLayers;
        this.draftLayers = draftLayers;
        this.targetSeen = new long[(targetLayers + 63) >>> 6];
        this.draftSeen = new long[Math.max(1, (draftLayers + 63) >>> 6)];
    }

    /** Scheduler: starts a new forward on this handle (its slot already reset to {@code generation}). */
    void begin(long generation) {
        this.generation = generation;
        this.backupCount = slot == null ? 0 : slot.backupCount;
        java.util.Arrays.fill(targetSeen, 0L);
        java.util.Arrays.fill(draftSeen, 0L);
        targetSeenCount = 0;
        draftSeenCount = 0;
        ended = false;
        overflowed = false;
        released = false;
    }

    /** Scheduler: whether a handle without a slot may be handed out again. */
    boolean released() {
        return released;
    }

    /** Hook: the target model has stored layer {@code layer} of this forward's KV. Forward thread. */
    @Override
    public void targetLayerStored(int layer) {
        checkOpen("targetLayerStored");
        if (layer < 0 || layer >= targetLayers) {
            throw new IllegalArgumentException("target layer " + layer + " outside [0, " + targetLayers + ")");
        }
        if (!ForwardSlot.testAndSet(targetSeen, layer)) {
            throw new IllegalStateException("target layer " + layer + " was already reported stored for this forward");
        }
        targetSeenCount++;
        if (slot != null && !slot.allLayers && !overflowed) {
            runtime.recordEvent(slot.targetEvents[layer], computeStream);
            publish(HookEvent.TARGET, layer);
        }
    }

    /** Hook: the draft/MTP model has stored its layer {@code layer} of this forward's KV. Forward thread. */
    @Override
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
        draftSeenCount++;
        if (slot != null && !slot.allLayers && slot.hasDraft && !overflowed) {
            runtime.recordEvent(slot.draftEvents[layer], computeStream);
            publish(HookEvent.DRAFT, layer);
        }
    }

    /**
     * Ends the forward: the submitter checks every declared layer was stored (else the backups are aborted
     * with {@link AbortReason#TARGET_LAYER_MISSING} or {@link AbortReason#DRAFT_LAYER_MISSING}) and seals it.
     * If recording the end event fails (a {@link CudaException} or anything else the runtime throws), the forward
     * is still ended and handed to the submitter, which aborts its backups with {@link AbortReason#CUDA_ERROR} at
     * once; then the failure is rethrown. Forward thread; once. The handle gives its slot back when this returns.
     */
    @Override
    public void endForward() {
        checkOpen("endForward");
        ended = true;
        if (slot == null) {
            released = true;
            return;
        }
        Throwable failed = null;
        try {
            slot.hookMissingTarget = targetSeenCount != targetLayers;
            slot.hookMissingDraft = slot.hasDraft && draftSeenCount != draftLayers;
            try {
                runtime.recordEvent(slot.endEvent, computeStream);
                slot.endError = 0;
            } catch (RuntimeException | Error e) {
                // the END still goes to the submitter, marked failed: the forward is aborted at once with its own
                // error instead of waiting for its lease, and the backups agreed after it go on
                failed = e;
                slot.endError = e instanceof CudaException ce && ce.code() != 0 ? ce.code() : CudaError.UNKNOWN.code();
            }
            if (!ring.tryPublish(slot, generation, HookEvent.END, 0)) {
                slot.overflowGeneration = generation;
                slot.endPendingGeneration = generation;
                ring.endPending();
            }
        } finally {
            slot.releasedGeneration = generation;
        }
        if (failed instanceof Error e) {
            throw e;
        } else if (failed != null) {
            throw (RuntimeException) failed;
        }
    }

    /** True once {@link #endForward()} ran. */
    @Override
    public boolean ended() {
        return ended;
    }

    /** Number of backups this forward carries (0 for a forward with nothing to back up). */
    @Override
    public int backupCount() {
        return backupCount;
    }

    private void checkOpen(String call) {
        if (ring.closed()) {
            if (!ended) {
                revoke();
            }
            throw new IllegalStateException(call + " on a closed controller: the forward was abandoned at close");
        }
        if (ended) {
            throw new IllegalStateException(call + " after endForward: a forward handle is finished once ended");
        }
        if (revoked) {
            throw revokedError(call);
        }
        if (slot != null && slot.revokedGeneration == generation) {
            revoke();
            throw revokedError(call);
        }
    }

    private void revoke() {
        revoked = true;
        if (slot != null) {
            slot.releasedGeneration = generation;
        } else {
            released = true;
        }
    }

    private IllegalStateException revokedError(String call) {
        return new IllegalStateException(call + ": this forward's backup lease expired (or the controller closed) "
            + "before it was sealed; its backups were aborted and the handle no longer owns its slot");
    }

    private void publish(int kind, int layer) {
        if (!ring.tryPublish(slot, generation, kind, layer)) {
            // the submitter fell behind: the rest of this forward is copied after its end
            overflowed = true;
            slot.overflowGeneration = generation;
        }
    }
}
