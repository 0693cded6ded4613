package io.hicache.core;

import io.hicache.radix.RadixNode;

/**
 * One request's load of host-only pages back to the device, created by {@link HiCache#loadBack}.
 *
 * <p>The engine reads {@link #devicePage(int)} to build the request's KV page list; the pages hold valid KV
 * for layer {@code l} once the forward has waited on layer {@code l} ({@link HiCache#waitLayer} with
 * {@link #consumer()}). With {@link LoadOverlap#SAME_FORWARD} (the default) its nodes are LOADING device nodes
 * from {@link HiCache#loadBack} on: a match counts them as device pages beyond
 * {@link io.hicache.radix.MatchResult#readyPageCount()}, and a forward may use them only by waiting per layer.
 * They become ordinary device hits when the load is acknowledged on every rank ({@link State#LOADED}, reported
 * by {@link LoadListener#onLoaded}). With {@link LoadOverlap#PREVIOUS_BATCH} a match sees them as host-only until
 * then. On {@link State#FAILED} its device pages were already handed back to the engine's allocator, together
 * with those of nodes inserted below them.
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

    /**
     * The token to pass to {@link HiCache#waitLayer} for this load's layers: set by the {@link HiCache#startLoading()}
     * that issued it, -1 while it is {@link State#QUEUED}.
     */
    long consumer();

    /** Pages loaded (the host-only chain's pages). */
    int pageCount();

    /**
     * Where the load starts in the request's sequence, in pages from the root: {@link #devicePage(int) devicePage(i)}
     * receives sequence page {@code firstPage() + i}, so the request's page list is the device prefix's pages
     * {@code [0, firstPage())} (those of the match), then this load's, then the pages it computes. Usually the
     * match's {@link io.hicache.radix.MatchResult#devicePageCount()}; more when the head of the host-only chain was
     * already being loaded by another request (the load starts below it).
     */
    int firstPage();

    /**
     * Pages of this load whose host copy a storage prefetch published and no earlier load read: tokens served from
     * the L3 tier (which counts them), not from host memory. 0 without a storage tier.
     */
    int storagePageCount();

    /**
     * Device page receiving sequence page {@code firstPage() + i}.
     *
     * @throws IndexOutOfBoundsException if {@code i} is outside {@code [0, pageCount())}
     */
    int devicePage(int i);

    /** Nodes of the chain, top first. */
    int nodeCount();

    /** Chain node {@code i}, top first. */
    RadixNode node(int i);
}
