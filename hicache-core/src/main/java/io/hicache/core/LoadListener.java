package io.hicache.core;

/**
 * Told how loads end. Called on the scheduler thread from {@link HiCacheController#poll()}; must not call back
 * into the controller.
 */
public interface LoadListener {
    /** The load's pages are now device hits; {@link LoadOp#requestId()} names the request that asked for it. */
    default void onLoaded(LoadOp op) {
    }

    /**
     * The load failed (a CUDA error on this or another rank): its device pages were freed, its nodes stay
     * host-only, and the request {@link LoadOp#requestId()} lost the host hit it was promised; the engine must
     * compute those tokens instead.
     */
    default void onLoadFailed(LoadOp op) {
    }
}
