package io.hicache.core.metrics;

import io.hicache.core.BackupMode;

/** Why the controller copies every layer after the forward instead of layer by layer. */
public enum FallbackReason {
    /** Configured with {@code BackupMode.ALL_LAYERS}. */
    CONFIGURED,
    /** The engine declared per-layer hooks unavailable (e.g. it runs the forward as a CUDA graph). */
    HOOKS_UNAVAILABLE,
    /** A write-back backup: the forward is already over when the device evicts the node. */
    WRITE_BACK;

}
