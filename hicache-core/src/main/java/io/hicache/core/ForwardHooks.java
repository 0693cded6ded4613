package io.hicache.core;

/**
 * The per-layer hooks of one forward pass, returned by {@link HiCache#beginForward} and carried by the
 * engine's forward thread.
 *
 * <p>Call {@link #targetLayerStored(int)} when the target model has written layer {@code l} of this forward's
 * KV, {@link #draftLayerStored(int)} when the draft/MTP model has written its layer {@code d}, and
 * {@link #endForward()} once at the end. In {@link BackupMode#LAYERED} mode each hook records an event on the
 * compute stream and hands (layer, event) to the submitter, so the copies of that layer overlap with the
 * following layers; in {@link BackupMode#ALL_LAYERS} mode the hooks only validate and {@code endForward}
 * starts every copy.
 *
 * <p><b>Thread:</b> one forward thread at a time per forward (not necessarily the scheduler). Hooks of different
 * forwards may run on different threads at once (each forward publishes on its own slot's lane; a thread stalled in a
 * hook when its lease expired cannot disturb the next forward). Hooks never block (if the submitter falls behind, the rest of the
 * forward is copied after its end), never touch the radix tree and allocate nothing.
 *
 * <p><b>Lease.</b> The hooks own their forward's slot from {@code beginForward} until {@code endForward} returns or
 * a hook throws because the lease expired; the cache reuses the slot only after that. It hands the same object out
 * again for a later forward once this one ended and was acknowledged: do not keep it after {@code endForward}.
 *
 * <p><b>Failures:</b> a layer out of range throws {@link IllegalArgumentException}; a hook after
 * {@code endForward}, a repeated hook, a draft hook without a draft layout, a hook on a handle whose lease
 * expired, or a hook after {@link HiCache#close()} throws {@link IllegalStateException}, and nothing is
 * recorded. A CUDA error while recording the event is rethrown as {@link io.hicache.cuda.CudaException}
 * after marking the layer missing, so the forward's backups are aborted rather than published. If
 * {@code endForward}'s record fails (a CUDA error or anything else the runtime throws), the forward still ends: its
 * backups are aborted with {@link AbortReason#CUDA_ERROR} at the next {@link HiCache#poll()}, the backups after it go
 * on, and the failure is rethrown.
 */
public interface ForwardHooks {
    /** The target model has stored layer {@code layer} of this forward's KV. */
    void targetLayerStored(int layer);

    /** The draft/MTP model has stored its layer {@code layer} of this forward's KV. */
    void draftLayerStored(int layer);

    /** Ends the forward: every declared layer must have been stored, else its backups are aborted. Once. */
    void endForward();

    /** True once {@link #endForward()} ran. */
    boolean ended();

    /** Number of backups this forward carries (0 for a forward with nothing to back up). */
    int backupCount();
}
