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
 * <p><b>Thread:</b> one forward thread at a time (not necessarily the scheduler). Hooks never block, never
 * touch the radix tree and allocate nothing.
 *
 * <p><b>Failures:</b> a layer out of range throws {@link IllegalArgumentException}; a hook after
 * {@code endForward}, a repeated hook, a draft hook without a draft layout, a hook on a handle whose lease
 * expired, or a hook after {@link HiCache#close()} throws {@link IllegalStateException}, and nothing is
 * recorded. A CUDA error while recording the event is rethrown as {@link io.hicache.cuda.CudaException}
 * after marking the layer missing, so the forward's backups are aborted rather than published.
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
