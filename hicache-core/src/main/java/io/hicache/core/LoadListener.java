package io.hicache.core;

/**
 * Told how loads end. Called on the scheduler thread from {@link HiCache#poll()}; must not call back
 * into the cache.
 */
public interface LoadListener {
    /** The load's pages are now device hits; {@link LoadHandle#requestId()} names the request that asked for it. */
    default void onLoaded(LoadHandle op) {
    }

    /**
     * The load failed (a CUDA error on this or another rank, or, with {@link LoadOverlap#SAME_FORWARD}, the failure
     * of a load above it whose chain it continued): its device pages were freed, its nodes stay
     * host-only, and the request {@link LoadHandle#requestId()} lost the host hit it was promised; the engine must
     * compute those tokens instead.
     */
    default void onLoadFailed(LoadHandle op) {
    }
}
