package io.hicache.core;

/** How a backup's device-to-host copies are scheduled relative to the forward pass. */
public enum BackupMode {
    /** Copies of layer l are issued when the engine has stored layer l, overlapping with layers l+1.... */
    LAYERED,
    /**
     * Every layer is copied after the forward (the upstream SGLang behaviour). Entered only explicitly, by
     * configuration or by {@link HiCache#declareHooksUnavailable(String)}; each entry
     * logs a rate-limited WARN and bumps a counter.
     */
    ALL_LAYERS;
}
