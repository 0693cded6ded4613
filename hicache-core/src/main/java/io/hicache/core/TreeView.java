package io.hicache.core;

import io.hicache.radix.EvictionPolicy;
import io.hicache.radix.RadixNode;

/**
 * Read-only view of the cache's radix tree: sizes and the root, whose nodes are read-only handles. Owned by
 * the scheduler thread like the cache; not thread-safe.
 */
public interface TreeView {
    /** Tokens per page. */
    int pageSize();

    /** The root (it holds no tokens). */
    RadixNode root();

    /** Nodes in the tree, the root excluded. */
    int nodeCount();

    /** Device pages the tree holds. */
    long devicePagesCached();

    /**
     * Device pages {@link HiCache#evictDevice} could free now, asked for enough pages (under
     * {@link WritePolicy#WRITE_BACK}: once the write-backs it starts for pages without a host copy have committed).
     */
    long devicePagesEvictable();

    /** Device pages on locked paths. */
    long devicePagesLocked();

    /** Host pages holding committed backups. */
    long hostPagesCommitted();

    /** Host pages of backups in flight. */
    long hostPagesPending();

    /** Eviction policy of the device tier. */
    EvictionPolicy devicePolicy();

    /** Eviction policy of the host tier. */
    EvictionPolicy hostPolicy();

    /**
     * Walks the whole tree and checks its structure, eviction queues and page counters, that host copies are
     * contiguous from the root (no host copy under a node without one) and that {@link #devicePagesEvictable()}
     * is what device eviction can free: O(nodes), for tests, simulators and debugging. Changes nothing.
     *
     * @throws IllegalStateException describing the first violation found, or if the cache is closed
     */
    void checkInvariants();
}
