package io.hicache.core.metrics;




/** Why the controller copies every layer after the forward instead of layer by layer. */
public enum FallbackReason {
    /** Configured with {@code BackupMode.ALL_LAYERS}. */
    CONFIGURED,
    /** The engine declared per-layer hooks unavailable (e.g. it runs the forward as a CUDA graph). */
    HOOKS_UNAVAILABLE,
    /** A write-back backup: the forward is already over when the device evicts the node. */
    WRITE_BACK,
    /**
     * The hook ring to the submitter was full (the submitter fell behind): the forward's remaining layers are
     * copied after its end. Sized so that this is rare.
     */
    HOOK_RING_FULL;

}
