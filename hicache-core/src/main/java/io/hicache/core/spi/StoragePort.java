package io.hicache.core.spi;

import io.hicache.core.BackupHandle;
import io.hicache.core.HiCache;
import io.hicache.core.memory.HostLayout;
import io.hicache.radix.TierListener;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The port a lower storage tier (the L3 tier of {@code io.hicache.storage}) attaches to one cache through: exactly
 * what a storage tier may do with the cache, and no way into its controller or its radix tree. Core implements it
 * over the controller and owns every check: the tree's invariants (host protection counts, page hashes, the shape a
 * prefetch publishes into) are kept inside core, which validates each call before it changes anything.
 * {@link HiCache#storagePort()} returns the port of an engine's cache.
 *
 * <p>What the tier does through it: learn the cache's geometry (rank, CP group, page size, host layout, host budget);
 * read and write the bytes of host pages in place ({@link #hostPageSegments}); read the pages and hashes of a
 * committed path (the {@link RadixNode} read accessors, {@link #hostCopy}) and set a node's page hashes once
 * ({@link #setPageHashes}); hold a node's committed host copy while it reads or serves it ({@link #protectHostCopy},
 * {@link #releaseHostCopy}); lease host pages for a prefetch and end each lease by inserting its landed prefix as a
 * host-only node or releasing it ({@link #reserveHost}, {@link #publishHost}, {@link #releaseHost}); learn of host
 * commits ({@link #committedNodes}) and host evictions ({@link #observeHostEvictions}); report its own L3
 * transitions to the cache's tier listener ({@link #storageTransitions}); and attach itself, so the cache's own
 * calls drive it ({@link #attach}). The CP group's agreement on prefetch completions is not here: it is the
 * engine's {@link io.hicache.core.cp.RankAgreement}, handed to the tier directly.
 *
 * <p><b>Threads.</b> Every method is the cache's scheduler thread's, like the cache's own, except those whose
 * documentation says "any thread". The callbacks of {@link Tier} and {@link EvictionObserver} come on that thread
 * too.
 *
 * <p><b>Failures.</b> As the cache's: a bad argument (a null, a lease of another cache) throws
 * {@link IllegalArgumentException}; a node removed from the tree, a call on a closed or stopped cache (except
 * {@link #isClosed()}, the geometry and the calls that end what the tier holds) and a call from another thread than
 * the scheduler thread where the cache checks its thread throw {@link IllegalStateException}. A call that throws
 * changes nothing.
 */
public interface StoragePort {

    // ------------------------------------------------------------------ the cache

    /** This cache's rank in its CP group (0 without a group). Any thread. */
    int rank();

    /** The CP group size (1 without a group). Any thread. */
    int cpSize();

    /** Tokens per page. Any thread. */
    int pageSize();

    /** The root of the cache's radix tree (a node's path ends there). Any thread. */
    RadixNode root();

    /** The clock of leases and latencies, in nanoseconds. Any thread. */
    LongSupplier clock();

    /** True once the cache closed. Any thread. */
    boolean isClosed();

    /**
     * Checks that the caller is the scheduler thread (the first scheduler call binds it); a no-op for a cache
     * without thread checks.
     *
     * @throws IllegalStateException naming both threads when it is not
     */
    void checkSchedulerThread();

    // ------------------------------------------------------------------ host memory

    /** The order of the host pools' bytes (part of a stored page's format). */
    HostLayout hostLayout();

    /** Whether the cache has draft/MTP layers: a draft host pool sharing the target pool's page ids 1:1. */
    boolean hasDraftPool();

    /** Host page ids of the target pool (and of the draft pool, which shares them). */
    int hostPageCount();

    /** Pages the host budget holds in all (the share a tier may lease is taken of this). */
    long hostBudgetCapacityPages();

    /**
     * The whole pinned memory of the target ({@code draft == false}) or draft host pool, for a store to register
     * once.
     *
     * @throws IllegalStateException for the draft pool of a cache without one
     */
    MemorySegment hostMemory(boolean draft);

    /**
     * Bytes of one host page of the target or draft pool, all layers and buffers.
     *
     * @throws IllegalStateException for the draft pool of a cache without one
     */
    long hostPageBytes(boolean draft);

    /**
     * Every byte of host page {@code hostPage} of the target or draft pool as slices of {@link #hostMemory}, in the
     * pool's memory order with adjacent ranges merged: their concatenation is the page's stored object. The slices
     * are views the caller may read and write while it holds the page (a lease, a host protection). Cold path: it
     * allocates; keep the result per page id.
     *
     * @throws IndexOutOfBoundsException if {@code hostPage} is outside the pool
     * @throws IllegalStateException     for the draft pool of a cache without one
     */
    MemorySegment[] hostPageSegments(boolean draft, int hostPage);

    // ------------------------------------------------------------------ prefetch leases

    /**
     * Reserves host pages for the positions this rank owns among {@code [startPage, startPage + pages)} of a
     * sequence of {@code totalPages}, charged to the host budget like a backup (one host eviction pass runs first
     * when there is no room). End it exactly once with {@link #publishHost} or {@link #releaseHost}; the cache's
     * close releases leases still open.
     *
     * @return the lease, or null when the host pool has no room
     * @throws IllegalArgumentException on a range outside {@code [0, totalPages)} or {@code pages < 1}
     */
    Lease reserveHost(int startPage, int pages, int totalPages);

    /**
     * Publishes the first {@code pages} positions of {@code lease} as a host-only node of the sequence
     * {@code tokens[from, from + (startPage + pages) * pageSize)} with the page hashes {@code hashes[hashOff, ...)}
     * (or none, if null), and frees the lease's other pages; with {@code withDraft} the pages also hold the draft KV
     * (same ids, draft pool), so the node's load-backs restore it. When the tree no longer fits (the path changed
     * meanwhile) nothing is published and every page is freed. Ends the lease either way. In a CP group every rank
     * makes the same call (the same agreed page count).
     *
     * @return the new node, or null when nothing was published
     * @throws IllegalArgumentException if {@code lease} is not one of this cache's, or {@code withDraft} without a
     *     draft pool
     * @throws IllegalStateException    if the lease already ended
     */
    RadixNode publishHost(Lease lease, int[] tokens, int from, int pages, byte[] hashes, int hashOff,
                          boolean withDraft);

    /**
     * Ends {@code lease} without publishing: frees its pages and budget. Allowed after the cache closed.
     *
     * @return false if it had already ended
     * @throws IllegalArgumentException if {@code lease} is not one of this cache's
     */
    boolean releaseHost(Lease lease);

    // ------------------------------------------------------------------ host commits and evictions

    /** The committed host copy of {@code node} on this rank, or null when it has none. */
    HostCopy hostCopy(RadixNode node);

    /**
     * Appends to {@code out} the nodes {@code committed} (a backup of this cache, just committed) published its host
     * copy on: its node, or the fragments the node split into while the backup was pending.
     *
     * @throws IllegalArgumentException if {@code committed} is not a backup of this cache
     */
    void committedNodes(BackupHandle committed, List<RadixNode> out);

    /** Sets the one observer of host evictions (null: none), replacing the one set before. */
    void observeHostEvictions(EvictionObserver observer);

    /**
     * Where the tier reports its L3 transitions: the cache's tier listener (its KV-event publisher) seen as the
     * {@link TierListener#STORAGE} tier. Null when the cache has no listener or is closed; ask again per
     * report, the listener may change between calls. The same object each time it is not null (no allocation).
     */
    StorageTransitions storageTransitions();

    // ------------------------------------------------------------------ the committed path

    /**
     * Sets the page hashes of {@code node} ({@link RadixNode#PAGE_HASH_BYTES} per page, {@code hashes[off, ...)}),
     * kept with the node and split with it; the first hashes set stay.
     *
     * @return false if the node already had hashes (nothing changed)
     * @throws IllegalArgumentException if {@code node} is null or the root, or the range is outside {@code hashes}
     * @throws IllegalStateException    if {@code node} was removed from the tree
     */
    boolean setPageHashes(RadixNode node, byte[] hashes, int off);

    /**
     * Protects the committed host copies of {@code node} and of every node on its path from host eviction until a
     * matching {@link #releaseHostCopy}; protections nest (the root's is a no-op).
     *
     * @throws IllegalArgumentException if {@code node} is null
     * @throws IllegalStateException    if {@code node} was removed from the tree
     */
    void protectHostCopy(RadixNode node);

    /**
     * Ends one {@link #protectHostCopy} of {@code node}'s path; a no-op on a node a failed load invalidated (its
     * protection was taken off its path then). Allowed after the cache closed.
     *
     * @throws IllegalArgumentException if {@code node} is null
     * @throws IllegalStateException    if {@code node} was removed from the tree, or a node on its path is not
     *     protected (nothing is changed then)
     */
    void releaseHostCopy(RadixNode node);

    // ------------------------------------------------------------------ attachment

    /** True while a tier is attached to the cache. */
    boolean hasTier();

    /**
     * Attaches {@code tier} (at most one per cache): from now on the cache's own calls drive it.
     *
     * @throws IllegalArgumentException if {@code tier} is null
     * @throws IllegalStateException    if a tier is already attached, or the cache is closed or stopped
     */
    void attach(Tier tier);

    /**
     * Detaches {@code tier} if it is the attached one (it closed itself); otherwise does nothing.
     *
     * @throws IllegalStateException if called from another thread than the scheduler thread
     */
    void detach(Tier tier);

    // ------------------------------------------------------------------ the port's types

    /**
     * The host pages one rank holds for a span of page positions (a node's, a lease's): the positions are node
     * offsets {@code [0, pageCount())}, of which this rank owns those {@link #ownedOffsets} lists; its host page
     * ids are, in order, the pages of those offsets. Immutable; the ids may be read on any thread.
     */
    interface OwnedPages {
        /** Positions covered (owned by any rank of the group). */
        int pageCount();

        /** The offsets this rank owns, ascending, into {@code out} (at least {@link #pageCount()} long). */
        int ownedOffsets(int[] out);

        /** Host page id of owned position {@code i}. */
        int hostPage(int i);
    }

    /** Host pages leased for a prefetch by {@link #reserveHost}, until published or released. */
    interface Lease extends OwnedPages {
    }

    /** The committed host copy of a node on this rank. */
    interface HostCopy extends OwnedPages {
        /** True when the pages hold the draft/MTP KV too (same host page ids, draft pool). */
        boolean hasDraft();
    }

    /**
     * The tier listener of the cache as the storage tier reports to it ({@link #storageTransitions}): each call is the
     * listener's {@code onPagesStored} or {@code onSequencePages} with {@link TierListener#STORAGE}.
     * Scheduler thread; like the listener, it must not be called with the cache's own calls on the stack in a way
     * that re-enters them.
     */
    interface StorageTransitions {
        /** Pages {@code [firstPage, firstPage + pages)} of {@code node} (from its first page) are now in L3. */
        void pagesStored(RadixNode node, int firstPage, int pages);

        /**
         * Pages {@code [firstPage, firstPage + pages)} of the sequence {@code tokens[from, ...)} (from the root) are
         * now in L3 ({@code stored}) or were found gone from it.
         */
        void sequencePages(boolean stored, int[] tokens, int from, int firstPage, int pages);
    }

    /** Told when committed host pages are about to leave the host tier. */
    @FunctionalInterface
    interface EvictionObserver {
        /**
         * Called synchronously while {@code pages} still hold their bytes; they are freed (and may be reused) as soon
         * as it returns. Must not call back into the cache.
         *
         * @param node  the host-only node being evicted, still attached (its path from the root can be read); the tree
         *              removes it when this returns
         * @param pages its committed host copy on this rank
         */
        void onHostEvicting(RadixNode node, HostCopy pages);
    }

    /**
     * A tier the cache's own calls drive once {@linkplain #attach attached}. Every method is called on the scheduler
     * thread, from inside the cache's calls: {@link #onCommitted} after the engine's listener heard of a commit,
     * {@link #onMatch} at the end of each match, {@link #poll} at the end of each poll (not after a sticky error
     * stopped the cache), {@link #close} first thing in the cache's close, while its host memory is live. Apart from
     * {@link #close}, none may call back into the cache's commit or poll, nor throw: a failure is the tier's own.
     */
    interface Tier {
        /** {@code backup} committed: its host copy is published on its nodes ({@link #committedNodes}). */
        void onCommitted(BackupHandle backup);

        /** A match of the engine just filled {@code match} (it touched the hit counts of its nodes). */
        void onMatch(MatchResult match);

        /** The cache's duty cycle ran: advance the tier's own work. */
        void poll();

        /**
         * The cache is closing: end everything that uses its host memory and let go of it. If this throws, the cache
         * is not closed and its close may be called again.
         */
        void close();
    }
}
