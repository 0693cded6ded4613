package io.hicache.core.internal;

import io.hicache.core.HiCache;

/**
 * The builder of a {@link HiCacheController} for the project's own modules (the engine-facing builder is {@link
 * HiCache.Builder}): the settings, their defaults and their validation are {@link HiCache.Settings}', written once
 * for both. {@link #build()} resolves them into an immutable {@link ControllerConfig} and leaves the builder as it
 * was, so it can build again. Cold path; not thread-safe.
 */
public final class ControllerBuilder extends HiCache.Settings<ControllerBuilder> {
    private int hookRingCapacity;

    ControllerBuilder() {
    }

    /**
     * Entries of each slot's hook lane (a power of two; default: twice what a forward can publish, so it fills
     * only when the submitter falls behind). Package-private: tests shrink it to reach the ring-full
     * fallback.
     */
    ControllerBuilder hookRingCapacity(int entries) {
        this.hookRingCapacity = entries;
        return this;
    }

    /**
     * Validates and builds; allocates the host pool, streams and events (released again if any step fails).
     *
     * @throws IllegalArgumentException naming the bad setting
     * @throws io.hicache.cuda.CudaException if the runtime fails
     */
    public HiCacheController build() {
        ControllerConfig config = FacadeAccess.conclude(this);
        return HiCacheController.create(hookRingCapacity == 0 ? config : config.withHookRingCapacity(hookRingCapacity));
    }
}
