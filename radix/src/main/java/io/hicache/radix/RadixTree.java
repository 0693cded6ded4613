package io.hicache.radix;

import java.util.function.LongSupplier;

/**
 * A page-aligned radix prefix tree over {@code int} token ids with a device tier and a host tier,
 * after SGLang's {@code RadixCache}/{@code HiRadixCache}.
 *
 * <p>Only whole pages of {@link #pageSize()} tokens are cached; a partial last page of a key is
 * ignored. Children are found by their first page. A node holds device page indices (one per page),
 * a committed {@link HostValue} and/or a {@link PendingBackup}. Differences from SGLang: a pending
 * backup is invisible to host matching and host eviction until {@link #commitHost} publishes it,
 * and a split tells the pending backup ({@link PendingBackup#onSplit}) so both fragments are published.
 *
 * <p>Invariants ({@link #checkInvariants()}): device-resident nodes form a prefix-closed subtree;
 * every non-root node holds device pages or a committed host value; a pending node holds device
 * pages and no host value; a node is marked pending only if its parent is the root or backed up.
 *
 * <p>Threading: single-threaded; the scheduler thread owns the tree and every node. Failure: bad
 * arguments throw {@link IllegalArgumentException}, illegal states {@link IllegalStateException};
 * either leaves the tree unchanged.
 */
public final class RadixTree {

    /**
     * Fluent configuration of a {@link RadixTree}; validated by {@link #build()}.
     * Cold path; not thread-safe.
     */
    public static final class Builder {
        int pageSize = 1;
        EvictionPolicy devicePolicy = EvictionPolicy.LRU;
        EvictionPolicy hostPolicy = EvictionPolicy.LRU;
        LongSupplier tickSource;

        Builder() {
        }

        /** @param pageSize tokens per page, a power of two >= 1 (default 1) */
        public Builder pageSize(int pageSize) {
            this.pageSize = pageSize;
            return this;
        }

        /** @param policy device-tier eviction order (default LRU) */
        public Builder devicePolicy(EvictionPolicy policy) {
            this.devicePolicy = policy;
            return this;
        }

        /** @param policy host-tier eviction order (default LRU) */
        public Builder hostPolicy(EvictionPolicy policy) {
            this.hostPolicy = policy;
            return this;
        }

        /**
         * @param tickSource source of access ticks, read once per match/insert; must not decrease.
         *     Default: an internal logical counter incremented per operation.
         */
        public Builder tickSource(LongSupplier tickSource) {
            this.tickSource = tickSource;
            return this;
        }

        /**
         * @return a new empty tree
         * @throws IllegalArgumentException if the page size is not a power of two >= 1 or a policy is null
         */
        public RadixTree build() {
            return new RadixTree(this);
        }
    }

    /** @return a builder with defaults (page size 1, LRU on both tiers, logical ticks) */
    public static Builder builder() {
        return new Builder();
    }

    private RadixTree(Builder b) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return tokens per page */
    public int pageSize() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return the root (empty key) */
    public RadixNode root() {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ match / insert

    /**
     * Finds the longest cached page-aligned prefix of {@code tokens[from, from + len)}. Splits a
     * node matched part-way so that the result ends on a node boundary, and touches the access
     * order of every matched node. Fills {@code out}: device-hit pages (pending nodes count as a
     * device hit only) with their page indices, the host-only extension beyond them, the last
     * device node and the last host node.
     *
     * @return {@code out}
     * @throws IllegalArgumentException on null arrays or a range outside {@code tokens}
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** Convenience: matches all of {@code tokens} into a new {@link MatchResult} (allocates). */
    public MatchResult match(int[] tokens) {
        return match(tokens, 0, tokens == null ? 0 : tokens.length, new MatchResult());
    }

    /**
     * Inserts the whole pages of {@code tokens[from, from + len)} with their device pages
     * {@code devicePages[pagesFrom, pagesFrom + len / pageSize)}. Along the path: nodes already on
     * device keep their pages (the caller's are duplicates); host-only nodes adopt the caller's pages
     * (as SGLang does on KV recomputation); the rest becomes new nodes owning the caller's pages.
     * Because device residency is prefix-closed, the duplicates are exactly the leading pages:
     * <b>the caller frees its pages {@code [pagesFrom, pagesFrom + r / pageSize)}, where r is the
     * return value; every later page is owned by the tree</b> ({@link #lastInsertAdoptedPages()} of
     * them by formerly host-only nodes). Hit counts of device nodes on the path and of new nodes are
     * incremented (write_through backs up at 1, write_through_selective at 2), and the path is touched.
     *
     * @return number of tokens already present on device (a multiple of the page size)
     * @throws IllegalArgumentException on null arrays or ranges outside the arrays
     */
    public int insert(int[] tokens, int from, int len, int[] devicePages, int pagesFrom) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return the node at the end of the path of the last {@link #insert} (the root if it held no whole page) */
    public RadixNode lastInsertNode() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return how many of the caller's pages the last {@link #insert} attached to formerly host-only nodes */
    public int lastInsertAdoptedPages() {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ protection

    /**
     * Increments the device lock of {@code node} and every ancestor (SGLang {@code inc_lock_ref}).
     * Locked nodes are never evicted. Locking the root is a no-op.
     */
    public void lock(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** Decrements the device lock of {@code node} and every ancestor; throws {@link IllegalStateException} on underflow. */
    public void unlock(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Increments the host protection of {@code node} and every ancestor; protected nodes are never
     * host-evicted (used during load-back and write-back). A no-op on the root.
     */
    public void protectHost(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** Decrements the host protection of {@code node} and every ancestor; throws {@link IllegalStateException} on underflow. */
    public void releaseHost(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    /** Sets the priority used by {@link EvictionPolicy#PRIORITY} (lower evicted first). */
    public void setPriority(RadixNode node, int priority) {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ backup state

    /**
     * Write-through contiguity rule: a node may be backed up only if its parent is the root or
     * already backed up (committed or pending).
     *
     * @return true if {@code node} holds device pages, has no host value or pending backup, and
     *     its parent is the root or {@link RadixNode#isBackedUp()}
     */
    public boolean canBackUp(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Marks a host backup in flight on {@code node}: it stays a device hit, becomes neither host
     * visible nor evictable until {@link #commitHost} or {@link #abortPending}.
     *
     * @throws IllegalStateException unless {@link #canBackUp(RadixNode)}
     */
    public void markPending(RadixNode node, PendingBackup handle) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Publishes the host value of a pending node and clears its pending state.
     *
     * @throws IllegalStateException if the node is not pending with {@code handle}
     * @throws IllegalArgumentException if {@code value.pageCount() != node.pageCount()}
     */
    public void commitHost(RadixNode node, PendingBackup handle, HostValue value) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Clears the pending state of {@code node} without publishing anything.
     *
     * @throws IllegalStateException if the node is not pending with {@code handle}
     */
    public void abortPending(RadixNode node, PendingBackup handle) {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ load-back

    /**
     * Load-back: attaches device pages {@code pages[from, from + node.pageCount())} to a host-only
     * node whose parent holds device pages (or is the root). The tree owns the pages afterwards.
     * Load a path top-down; lock it while copies run.
     *
     * @throws IllegalStateException if the node is not host-only or its parent is device evicted
     */
    public void attachDevice(RadixNode node, int[] pages, int from) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Undoes {@link #attachDevice} after a failed load: drops the node's device pages (the caller
     * frees them), leaving it host-only. Detach a path bottom-up.
     *
     * @throws IllegalStateException unless the node holds device pages and a committed host value,
     *     is unlocked, not pending and has no device-resident child
     */
    public void detachDevice(RadixNode node) {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ eviction

    /**
     * Evicts device leaves in policy order until at least {@code pages} pages are freed or nothing
     * is evictable. Never evicts a locked or pending node, nor a node with device-resident
     * children. A node with a committed host value becomes host-only; one without is removed (which
     * may expose its parent).
     *
     * @return pages evicted
     */
    public int evictDevice(int pages, DeviceEvictionListener listener) {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Evicts host-only leaves (device evicted, committed host value, no children, unprotected,
     * unlocked) in policy order until at least {@code pages} pages are freed; each is removed from
     * the tree, which may expose its parent.
     *
     * @return host pages evicted
     */
    public int evictHost(int pages, HostEvictionListener listener) {
        throw new UnsupportedOperationException("skeleton");
    }

    // ------------------------------------------------------------------ counters

    /** @return device pages held by nodes */
    public long devicePagesCached() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return device pages of nodes that are neither locked nor pending */
    public long devicePagesEvictable() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return device pages of locked nodes */
    public long devicePagesLocked() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return pages covered by committed host values */
    public long hostPagesCommitted() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return pages of nodes with a backup in flight */
    public long hostPagesPending() {
        throw new UnsupportedOperationException("skeleton");
    }

    /** @return non-root nodes */
    public int nodeCount() {
        throw new UnsupportedOperationException("skeleton");
    }

    /**
     * Walks the whole tree and verifies structure, invariants and counters. O(n); for tests and
     * debugging.
     *
     * @throws IllegalStateException describing the first violation found
     */
    public void checkInvariants() {
        throw new UnsupportedOperationException("skeleton");
    }
}
