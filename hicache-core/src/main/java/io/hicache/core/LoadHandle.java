package io.hicache.core;

import io.hicache.radix.RadixNode;

/**
 * One request's load of host-only pages back to the device, created by {@link HiCache#loadBack}.
 *
 * <p>The engine reads {@link #devicePage(int)} to build the request's KV page list; the pages hold valid KV
 * for layer {@code l} once the forward has waited on layer {@code l} ({@link HiCache#waitLayer}). The nodes
 * become device hits only when the load is acknowledged on every rank ({@link State#LOADED}, reported by
 * {@link LoadListener#onLoaded}); until then a match sees them as host-only. On {@link State#FAILED} its
 * device pages were already handed back to the engine's allocator.
 *
 * <p><b>Thread:</b> the scheduler thread that owns the cache; not thread-safe.
 */
public interface LoadHandle {
    /** States of a load. */
    enum State { QUEUED, ISSUED, LOADED, FAILED }

    /** The engine's id of the request this load serves. */
    long requestId();

    /** Current state. */
    State state();

    /** Pages loaded (the host-only chain's pages). */
    int pageCount();

    /**
     * Device page receiving chain page {@code i} (in sequence order after the device prefix).
     *
     * @throws IndexOutOfBoundsException if {@code i} is outside {@code [0, pageCount())}
     */
    int devicePage(int i);

    /** Nodes of the chain, top first. */
    int nodeCount();

    /** Chain node {@code i}, top first. */
    RadixNode node(int i);
}
