package io.hicache.core;

/**
 * When a load's pages may be used by a forward. Chosen once per cache with
 * {@link HiCache.Builder#loadOverlap(LoadOverlap, String)}.
 */
public enum LoadOverlap {
    /**
     * Default. {@link HiCache#loadBack} puts the chain in the LOADING state at once: it is a device prefix the
     * requesting request (and requests that {@link HiCache#joinLoad join} the load) compute on in the same forward,
     * waiting on the device for each layer ({@link HiCache#waitLayer}) before computing it, so a host hit costs about
     * one layer's copy. Inserts may go below it. Agreement decides only whether the whole load succeeded; on failure
     * the chain is host-only again and whatever was inserted below it is dropped.
     */
    SAME_FORWARD,
    /**
     * For engines that cannot wait per layer (e.g. a forward replayed as a CUDA graph): the chain stays host-only
     * until the load is agreed, so the request runs in a later batch. The cache logs the reason once. The agreed
     * chain is unlocked and as recently used as the request's match: an engine locks it for the request from the
     * poll that publishes it ({@link LoadHandle#state()} {@code LOADED}) until it is admitted, or any allocation
     * before that may evict it and the request computes its host hit again.
     */
    PREVIOUS_BATCH
}
