package io.hicache.core.internal.copy;

import io.hicache.cuda.CopyKind;

/** Which way a {@link CopyPlan} moves KV pages. Immutable; thread-safe. */
public enum CopyDirection {
    /** Backup (SGLang {@code write_through}/{@code write_back}): device pages to host pages. */
    DEVICE_TO_HOST(CopyKind.DEVICE_TO_HOST),
    /** Load-back (SGLang {@code load_back}): host pages to device pages. */
    HOST_TO_DEVICE(CopyKind.HOST_TO_DEVICE);

    private final CopyKind kind;

    CopyDirection(CopyKind kind) {
        this.kind = kind;
    }

    /** The CUDA copy kind. */
    public CopyKind kind() {
        return kind;
    }
}
