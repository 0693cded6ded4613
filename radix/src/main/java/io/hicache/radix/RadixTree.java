package io.hicache.radix;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.spi.PendingLoad;
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
// The methods taking io.hicache.radix.spi types are for the cache (io.hicache.core), to which spi is exported.
@SuppressWarnings("exports")
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

    final int pageSize;
    final int pageShift;
    private final EvictionPolicy devicePolicy;
    private final EvictionPolicy hostPolicy;
    private final LongSupplier tickSource;
    final RadixNode root;
    final TierQueue deviceQueue;
    final TierQueue hostQueue;

    private long logicalTick;
    private long createSeq;
    /** The last {@link RadixNode#serial()} given. */
    private long nodeSerial;
    long devicePagesCached;
    long devicePagesLocked;
    long devicePagesUnevictable;
    long hostPagesCommitted;
    long hostPagesPending;
    int nodeCount;
    /** Nodes loading now ({@link RadixNode#isLoading()}): while 0, every device node is reported to the observer. */
    int loadingNodes;
    private RadixNode lastInsertNode;
    private int lastInsertAdoptedPages;
    /** Told of tier transitions (KV events), or null. */
    TierListener observer;

    private RadixTree(Builder b) {
        if (b.pageSize < 1 || Integer.bitCount(b.pageSize) != 1) {
            throw new IllegalArgumentException("pageSize " + b.pageSize + " must be a power of two >= 1");
        }
        if (b.devicePolicy == null || b.hostPolicy == null) {
            throw new IllegalArgumentException("eviction policies must not be null (device " + b.devicePolicy
                    + ", host " + b.hostPolicy + ")");
        }
        pageSize = b.pageSize;
        pageShift = Integer.numberOfTrailingZeros(pageSize);
        devicePolicy = b.devicePolicy;
        hostPolicy = b.hostPolicy;
        tickSource = b.tickSource;
        root = new RadixNode(nodeSerial++);
        root.attached = true;
        root.keyTokens = new int[0];
        lastInsertNode = root;
        deviceQueue = TierQueue.create(devicePolicy, true, this);
        hostQueue = TierQueue.create(hostPolicy, false, this);
    }

    /**
     * Sets the observer of tier transitions (null for none); see {@link TierListener}.
     * Scheduler thread.
     */
    public void tierObserver(TierListener tierObserver) {
        this.observer = tierObserver;
    }

    /** @return the observer of tier transitions, or null */
    public TierListener tierObserver() {
        return observer;
    }

    /** @return tokens per page */
    public int pageSize() {
        return pageSize;
    }

    /** @return the device-tier eviction policy */
    public EvictionPolicy devicePolicy() {
        return devicePolicy;
    }

    /** @return the host-tier eviction policy */
    public EvictionPolicy hostPolicy() {
        return hostPolicy;
    }

    /** @return the root (empty key) */
    public RadixNode root() {
        return root;
    }

    private long nextTick() {
        return tickSource != null ? tickSource.getAsLong() : ++logicalTick;
    }

    // ------------------------------------------------------------------ validation

    static void checkRange(int[] array, String name, int from, int len) {
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (from < 0 || len < 0 || from > array.length - len) {
            throw new IllegalArgumentException("range [" + from + ", " + from + " + " + len + ") of " + name
                    + " must lie within [0, " + array.length + ")");
        }
    }

    static void checkRange(byte[] array, String name, int from, int len) {
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (from < 0 || len < 0 || from > array.length - len) {
            throw new IllegalArgumentException("range [" + from + ", " + from + " + " + len + ") of " + name
                    + " must lie within [0, " + array.length + ")");
        }
    }

    void checkNode(RadixNode node, boolean allowRoot) {
        if (node == null) {
            throw new IllegalArgumentException("node must not be null");
        }
        if (!node.attached) {
            throw new IllegalStateException("node " + node + " was removed from the tree");
        }
        if (!allowRoot && node == root) {
            throw new IllegalArgumentException("operation is not defined on the root");
        }
    }

    // ------------------------------------------------------------------ child table

    int pageKey(int[] tokens, int off) {
        if (pageSize == 1) {
            return tokens[off];
        }
        int h = 0x9E3779B9;
        for (int i = 0; i < pageSize; i++) {
            h = (h ^ tokens[off + i]) * 0x01000193;
        }
        return h ^ (h >>> 15);
    }

    private boolean samePage(int[] a, int aOff, int[] b, int bOff) {
        for (int i = 0; i < pageSize; i++) {
            if (a[aOff + i] != b[bOff + i]) {
                return false;
            }
        }
        return true;
    }

    RadixNode findChild(RadixNode p, int[] tokens, int off) {
        int key = pageKey(tokens, off);
        int slot = ChildTable.findSlot(p, key);
        if (slot < 0) {
            return null;
        }
        RadixNode c = p.childVals[slot];
        if (pageSize == 1) {
            return c;
        }
        for (; c != null; c = c.hashNext) {
            if (samePage(c.keyTokens, c.keyOff, tokens, off)) {
                return c;
            }
        }
        return null;
    }

    // ------------------------------------------------------------------ eligibility and counters

    /** @return true if {@code n} is an evictable leaf of the tier (listener veto aside) */
    boolean eligible(RadixNode n, boolean device) {
        if (!n.attached || n == root) {
            return false;
        }
        if (device) {
            return n.devPages != null && n.deviceChildCount == 0 && n.lockRef == 0 && n.pending == null
                    && n.loading == null && (n.hostValue != null || (n.childCount == 0 && n.hostRef == 0));
        }
        return n.devPages == null && n.hostValue != null && n.childCount == 0 && n.hostRef == 0 && n.lockRef == 0;
    }

    void refresh(RadixNode n) {
        if (n == root) {
            return;
        }
        deviceQueue.refresh(n, eligible(n, true));
        hostQueue.refresh(n, eligible(n, false));
    }

    static int lockedPages(RadixNode n) {
        return n.devPages != null && n.lockRef > 0 ? n.pageCount : 0;
    }

    static int unevictablePages(RadixNode n) {
        return n.devPages != null && (n.lockRef > 0 || n.pending != null || n.loading != null) ? n.pageCount : 0;
    }

    private void touch(RadixNode n, long tick) {
        for (RadixNode x = n; x != root; x = x.parent) {
            x.lastAccessTick = tick;
            if (x.devPages != null) {
                deviceQueue.touch(x);
            } else {
                hostQueue.touch(x);
            }
        }
    }

    // ------------------------------------------------------------------ match / insert

    int matchPages(RadixNode node, int[] tokens, int pos, int pages) {
        int[] key = node.keyTokens;
        int koff = node.keyOff;
        int n = Math.min(node.keyLen, pages << pageShift);
        int i = pageSize; // the first page already matched through the child table
        while (i < n && key[koff + i] == tokens[pos + i]) {
            i++;
        }
        return i >> pageShift;
    }

    /** Splits {@code n} after {@code k} pages; returns the new prefix node (the parent of {@code n}). */
    RadixNode split(RadixNode n, int k) {
        HostValue hostHead = null;
        HostValue hostTail = null;
        if (n.hostValue != null) {
            hostHead = n.hostValue.head(k);
            hostTail = n.hostValue.tail(k);
            if (hostHead == null || hostTail == null || hostHead.pageCount() != k
                    || hostTail.pageCount() != n.pageCount - k) {
                throw new IllegalStateException("HostValue of " + n.pageCount + " pages split at " + k
                        + " returned parts of " + (hostHead == null ? "null" : hostHead.pageCount()) + " and "
                        + (hostTail == null ? "null" : hostTail.pageCount()) + " pages; they must be " + k + " and "
                        + (n.pageCount - k));
            }
        }
        RadixNode p = new RadixNode(nodeSerial++);
        RadixNode parent = n.parent;
        int tokensK = k << pageShift;
        p.attached = true;
        p.parent = parent;
        p.keyTokens = n.keyTokens;
        p.keyOff = n.keyOff;
        p.keyLen = tokensK;
        p.pageCount = k;
        p.childKey = n.childKey;
        ChildTable.replaceChild(parent, n, p);
        n.keyOff += tokensK;
        n.keyLen -= tokensK;
        n.pageCount -= k;
        n.childKey = pageKey(n.keyTokens, n.keyOff);
        n.parent = p;
        ChildTable.addChild(p, n);
        if (n.devPages != null) {
            p.devPages = n.devPages;
            p.devOff = n.devOff;
            n.devOff += k;
            p.deviceChildCount = 1;
        }
        p.hostValue = hostHead;
        n.hostValue = hostTail;
        if (n.hashBytes != null) {
            p.hashBytes = n.hashBytes;
            p.hashOff = n.hashOff;
            n.hashOff += k * RadixNode.PAGE_HASH_BYTES;
        }
        p.pending = n.pending;
        p.loading = n.loading;
        if (p.loading != null) {
            loadingNodes++;
        }
        p.lockRef = n.lockRef;
        p.hostRef = n.hostRef;
        p.hitCount = n.hitCount;
        p.lastAccessTick = n.lastAccessTick;
        p.createSeq = n.createSeq;
        p.priority = n.priority;
        nodeCount++;
        if (p.devPages != null) {
            deviceQueue.onSplit(n, p);
        } else {
            hostQueue.onSplit(n, p);
        }
        refresh(p);
        if (p.pending != null) {
            p.pending.onSplit(p, n);
        }
        return p;
    }

    /**
     * Finds the longest cached page-aligned prefix of {@code tokens[from, from + len)}. Splits a
     * node matched part-way so that the result ends on a node boundary, and touches the access
     * order of every matched node. Fills {@code out}: device-hit pages (pending nodes count as a
     * device hit only; nodes a load is still filling count too, and {@link MatchResult#readyPageCount()}
     * stops before the first of them) with their page indices, the host-only extension beyond them, the last
     * device node and the last host node. Hit counts are not changed.
     *
     * @return {@code out}
     * @throws IllegalArgumentException on null arrays or a range outside {@code tokens}
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out) {
        checkRange(tokens, "tokens", from, len);
        if (out == null) {
            throw new IllegalArgumentException("out must not be null");
        }
        out.reset(root, pageSize);
        int remaining = len >> pageShift;
        RadixNode node = root;
        int pos = from;
        while (remaining > 0) {
            RadixNode child = findChild(node, tokens, pos);
            if (child == null) {
                break;
            }
            int k = matchPages(child, tokens, pos, remaining);
            boolean partial = k < child.pageCount;
            if (partial) {
                child = split(child, k);
            }
            node = child;
            if (node.devPages != null) {
                out.appendDevicePages(node.devPages, node.devOff, k);
                out.lastDeviceNode = node;
                if (node.loading != null) {
                    out.loadingNode = node;
                } else if (out.loadingNode == null) {
                    out.readyPageCount += k;
                }
            } else {
                out.hostPageCount += k;
            }
            pos += k << pageShift;
            remaining -= k;
            if (partial) {
                break;
            }
        }
        out.lastHostNode = node;
        if (node != root) {
            touch(node, nextTick());
        }
        return out;
    }

    /**
     * Counts the pages of the longest cached prefix of {@code tokens[from, from + len)}, on the device (loading
     * included) or committed on the host, as {@link #match} would report them, without changing the tree: no node
     * is split and no access order or hit count moves. What a router asks of several caches before it picks one.
     * Allocation-free.
     *
     * @throws IllegalArgumentException on a null array or a range outside {@code tokens}
     */
    public int cachedPrefixPages(int[] tokens, int from, int len) {
        return prefixPages(tokens, from, len, false);
    }

    /**
     * Counts the leading pages of {@code tokens[from, from + len)} on the device (loading included): the device part
     * of {@link #cachedPrefixPages} (device residency is prefix-closed), without changing the tree. For a router that
     * weighs a device hit above a host hit. Allocation-free.
     *
     * @throws IllegalArgumentException on a null array or a range outside {@code tokens}
     */
    public int devicePrefixPages(int[] tokens, int from, int len) {
        return prefixPages(tokens, from, len, true);
    }

    private int prefixPages(int[] tokens, int from, int len, boolean deviceOnly) {
        checkRange(tokens, "tokens", from, len);
        int remaining = len >> pageShift;
        int pages = 0;
        RadixNode node = root;
        while (remaining > 0 && (node = findChild(node, tokens, from)) != null && (!deviceOnly || node.hasDeviceValue())) {
            int k = matchPages(node, tokens, from, remaining);
            pages += k;
            if (k < node.pageCount) {
                break;
            }
            from += k << pageShift;
            remaining -= k;
        }
        return pages;
    }

    /** Convenience: matches all of {@code tokens} into a new {@link MatchResult} (allocates). */
    public MatchResult match(int[] tokens) {
        return match(tokens, 0, tokens == null ? 0 : tokens.length, new MatchResult());
    }

    /**
     * Inserts the whole pages of {@code tokens[from, from + len)} with their device pages
     * {@code devicePages[pagesFrom, pagesFrom + len / pageSize)}. Along the path: nodes already on
     * device keep their pages (the caller's are duplicates); host-only nodes adopt the caller's pages
     * (as SGLang does on KV recomputation); the rest becomes a new node owning the caller's pages.
     * Because device residency is prefix-closed, the duplicates are exactly the leading pages:
     * <b>the caller frees its pages {@code [pagesFrom, pagesFrom + r / pageSize)}, where r is the
     * return value; every later page is owned by the tree</b> ({@link #lastInsertAdoptedPages()} of
     * them by formerly host-only nodes). Hit counts of device nodes on the path and of a new node
     * are incremented (write_through backs up at 1, write_through_selective at 2; adopted nodes are
     * not counted, as in SGLang), and the path is touched.
     *
     * @return number of tokens already present on device (a multiple of the page size)
     * @throws IllegalArgumentException on null arrays or ranges outside the arrays
     */
    public int insert(int[] tokens, int from, int len, int[] devicePages, int pagesFrom) {
        checkRange(tokens, "tokens", from, len);
        int pages = len >> pageShift;
        checkRange(devicePages, "devicePages", pagesFrom, pages);
        RadixNode node = root;
        int pos = from;
        int pi = pagesFrom;
        int remaining = pages;
        int presentPages = 0;
        int adopted = 0;
        while (remaining > 0) {
            RadixNode child = findChild(node, tokens, pos);
            if (child == null) {
                node = createNode(node, tokens, pos, remaining, devicePages, pi);
                break;
            }
            int k = matchPages(child, tokens, pos, remaining);
            if (k < child.pageCount) {
                child = split(child, k);
            }
            if (child.devPages != null) {
                child.hitCount++;
                presentPages += k;
            } else {
                adopt(child, devicePages, pi);
                adopted += k;
            }
            node = child;
            pos += k << pageShift;
            pi += k;
            remaining -= k;
        }
        lastInsertNode = node;
        lastInsertAdoptedPages = adopted;
        if (node != root) {
            touch(node, nextTick());
        }
        // pages inserted over a prefix still loading are reported when the load finishes, after the prefix
        if (observer != null && presentPages < pages && LoadTransitions.deviceReported(this, node)) {
            observer.onDeviceInserted(tokens, from, pages << pageShift, presentPages << pageShift, node);
        }
        return presentPages << pageShift;
    }

    private RadixNode createNode(RadixNode parent, int[] tokens, int pos, int pages, int[] devicePages, int pi) {
        int keyLen = pages << pageShift;
        int[] storage = new int[keyLen + pages];
        System.arraycopy(tokens, pos, storage, 0, keyLen);
        System.arraycopy(devicePages, pi, storage, keyLen, pages);
        RadixNode n = new RadixNode(nodeSerial++);
        n.attached = true;
        n.parent = parent;
        n.keyTokens = storage;
        n.keyOff = 0;
        n.keyLen = keyLen;
        n.pageCount = pages;
        n.childKey = pageKey(storage, 0);
        n.devPages = storage;
        n.devOff = keyLen;
        n.hitCount = 1;
        n.createSeq = ++createSeq;
        ChildTable.addChild(parent, n);
        parent.deviceChildCount++;
        nodeCount++;
        devicePagesCached += pages;
        deviceQueue.onResident(n, false);
        refresh(n);
        refresh(parent);
        return n;
    }

    void adopt(RadixNode n, int[] pages, int from) {
        int lockedBefore = lockedPages(n);
        int unevBefore = unevictablePages(n);
        n.devPages = java.util.Arrays.copyOfRange(pages, from, from + n.pageCount);
        n.devOff = 0;
        n.parent.deviceChildCount++;
        devicePagesCached += n.pageCount;
        devicePagesLocked += lockedPages(n) - lockedBefore;
        devicePagesUnevictable += unevictablePages(n) - unevBefore;
        hostQueue.onNonResident(n);
        deviceQueue.onResident(n, true);
        refresh(n);
        refresh(n.parent);
    }

    /** @return the node at the end of the path of the last {@link #insert} (the root if it held no whole page) */
    public RadixNode lastInsertNode() {
        return lastInsertNode;
    }

    /** @return how many of the caller's pages the last {@link #insert} attached to formerly host-only nodes */
    public int lastInsertAdoptedPages() {
        return lastInsertAdoptedPages;
    }

    /**
     * Storage prefetch: publishes pages {@code [startPage, len / pageSize)} of {@code tokens[from, from + len)}
     * as a new host-only node carrying {@code value} (and, if not null, its page hashes
     * {@code hashes[hashOff, hashOff + 32 * pages)}, which the tree then owns). The first {@code startPage}
     * pages must be in the tree, on a path that ends on a node boundary at a node that is the root or holds a
     * committed host value (contiguity: a host-only node's parent is backed up), and nothing may continue
     * there with the next page. The path is touched; the new node has hit count 0.
     *
     * @return the new node, or null when the tree does not fit (nothing changed; the caller keeps its pages)
     * @throws IllegalArgumentException on null arrays, ranges outside them, a {@code startPage} outside
     *     {@code [0, pages)}, or a value whose page count is not {@code pages - startPage}
     */
    public RadixNode insertHost(int[] tokens, int from, int len, int startPage, HostValue value, byte[] hashes,
                                int hashOff) {
        checkRange(tokens, "tokens", from, len);
        int pages = len >> pageShift;
        if (startPage < 0 || startPage >= pages) {
            throw new IllegalArgumentException("startPage " + startPage + " outside [0, " + pages + ")");
        }
        if (value == null || value.pageCount() != pages - startPage) {
            throw new IllegalArgumentException("host value of " + (value == null ? "null" : value.pageCount())
                    + " pages must cover pages [" + startPage + ", " + pages + ")");
        }
        if (hashes != null) {
            checkRange(hashes, "hashes", hashOff, (pages - startPage) * RadixNode.PAGE_HASH_BYTES);
        }
        RadixNode node = root;
        int pos = from;
        int remaining = startPage;
        while (remaining > 0) {
            RadixNode child = findChild(node, tokens, pos);
            if (child == null) {
                return null;
            }
            int k = matchPages(child, tokens, pos, remaining);
            if (k < child.pageCount) {
                if (k < remaining) {
                    return null;
                }
                child = split(child, k);
            }
            node = child;
            pos += k << pageShift;
            remaining -= k;
        }
        if (node != root && node.hostValue == null) {
            return null;
        }
        if (findChild(node, tokens, pos) != null) {
            return null;
        }
        int newPages = pages - startPage;
        int keyLen = newPages << pageShift;
        RadixNode n = new RadixNode(nodeSerial++);
        n.attached = true;
        n.parent = node;
        n.keyTokens = java.util.Arrays.copyOfRange(tokens, pos, pos + keyLen);
        n.keyOff = 0;
        n.keyLen = keyLen;
        n.pageCount = newPages;
        n.childKey = pageKey(n.keyTokens, 0);
        n.hostValue = value;
        n.hashBytes = hashes;
        n.hashOff = hashOff;
        n.createSeq = ++createSeq;
        ChildTable.addChild(node, n);
        nodeCount++;
        hostPagesCommitted += newPages;
        hostQueue.onResident(n, false);
        refresh(n);
        refresh(node);
        touch(n, nextTick());
        if (observer != null) {
            observer.onStored(TierListener.HOST, n);
        }
        return n;
    }

    /**
     * Stores the storage tier's page hashes of {@code node}: {@code hashes[off, off + 32 * pageCount)}, which the
     * tree owns afterwards and splits with the node. Hashes are computed once: a node that has them keeps them.
     *
     * @return true if set by this call, false if the node already had hashes
     * @throws IllegalArgumentException on a null array or a range outside it
     */
    public boolean setPageHashes(RadixNode node, byte[] hashes, int off) {
        checkNode(node, false);
        checkRange(hashes, "hashes", off, node.pageCount * RadixNode.PAGE_HASH_BYTES);
        if (node.hashBytes != null) {
            return false;
        }
        node.hashBytes = hashes;
        node.hashOff = off;
        return true;
    }

    // ------------------------------------------------------------------ protection

    /**
     * Increments the device lock of {@code node} and every ancestor (SGLang {@code inc_lock_ref}).
     * Locked nodes are never evicted. Locking the root is a no-op.
     */
    public void lock(RadixNode node) {
        checkNode(node, true);
        for (RadixNode x = node; x != root; x = x.parent) {
            if (x.lockRef == 0) {
                devicePagesLocked += lockedPagesIfLocked(x);
                devicePagesUnevictable -= unevictablePages(x);
                x.lockRef = 1;
                devicePagesUnevictable += unevictablePages(x);
                refresh(x);
            } else {
                x.lockRef++;
            }
        }
    }

    private static int lockedPagesIfLocked(RadixNode n) {
        return n.devPages != null ? n.pageCount : 0;
    }

    /**
     * Decrements the device lock of {@code node} and every ancestor; throws {@link IllegalStateException} on
     * underflow. A no-op on a node a failed load {@linkplain RadixNode#isInvalidated() invalidated}.
     */
    public void unlock(RadixNode node) {
        if (node != null && node.invalidated) {
            return; // a failed load removed it; its locks were taken off its ancestors then
        }
        checkNode(node, true);
        for (RadixNode x = node; x != root; x = x.parent) {
            if (x.lockRef <= 0) {
                throw new IllegalStateException("unlock of " + node + ": lockRef of " + x
                        + " on its path is 0; every unlock must follow a lock");
            }
        }
        for (RadixNode x = node; x != root; x = x.parent) {
            if (x.lockRef == 1) {
                devicePagesLocked -= lockedPages(x);
                devicePagesUnevictable -= unevictablePages(x);
                x.lockRef = 0;
                devicePagesUnevictable += unevictablePages(x);
                refresh(x);
            } else {
                x.lockRef--;
            }
        }
    }

    /**
     * Increments the host protection of {@code node} and every ancestor; protected nodes are never
     * host-evicted (used during load-back and write-back), and a protected node without a host
     * value is not removed by device eviction. A no-op on the root.
     */
    public void protectHost(RadixNode node) {
        checkNode(node, true);
        for (RadixNode x = node; x != root; x = x.parent) {
            x.hostRef++;
            if (x.hostRef == 1) {
                refresh(x);
            }
        }
    }

    /**
     * Decrements the host protection of {@code node} and every ancestor; throws {@link IllegalStateException}
     * on underflow. A no-op on a node a failed load {@linkplain RadixNode#isInvalidated() invalidated}.
     */
    public void releaseHost(RadixNode node) {
        if (node != null && node.invalidated) {
            return; // a failed load removed it; its protection was taken off its ancestors then
        }
        checkNode(node, true);
        for (RadixNode x = node; x != root; x = x.parent) {
            if (x.hostRef <= 0) {
                throw new IllegalStateException("releaseHost of " + node + ": hostRef of " + x
                        + " on its path is 0; every release must follow a protectHost");
            }
        }
        for (RadixNode x = node; x != root; x = x.parent) {
            x.hostRef--;
            if (x.hostRef == 0) {
                refresh(x);
            }
        }
    }

    /** Sets the priority used by {@link EvictionPolicy#PRIORITY} (lower evicted first). */
    public void setPriority(RadixNode node, int priority) {
        checkNode(node, false);
        node.priority = priority;
        deviceQueue.rekey(node);
        hostQueue.rekey(node);
    }

    // ------------------------------------------------------------------ backup state

    /**
     * Write-through contiguity rule: a node may be backed up only if its parent is the root or
     * already backed up (committed or pending). A node below a load still in flight may be backed
     * up too (its copies run in the forward that loads its prefix), but its backup must not be
     * published before the load finished ({@link #dependsOnLoad}); if the load fails, the backup
     * learns it through {@link PendingBackup#onInvalidated} and must never be published.
     *
     * @return true if {@code node} is a non-root node holding device pages, with no host value or
     *     pending backup, whose parent is the root or {@link RadixNode#isBackedUp()}
     */
    public boolean canBackUp(RadixNode node) {
        checkNode(node, true);
        return node != root && node.devPages != null && node.hostValue == null && node.pending == null
                && (node.parent == root || node.parent.isBackedUp());
    }

    /**
     * Whether the KV of {@code node} was computed over a prefix that is still loading: an ancestor
     * {@linkplain RadixNode#isLoading() is loading}. A backup of such a node may copy, but it is
     * published only once this turns false (the load finished); a failed load invalidates the node.
     * Walks the node's path; allocation-free.
     */
    public boolean dependsOnLoad(RadixNode node) {
        checkNode(node, true);
        return node != root && belowLoad(node);
    }

    /** @return true if an ancestor of {@code node} is still being loaded (its KV is not final) */
    private boolean belowLoad(RadixNode node) {
        for (RadixNode x = node.parent; x != root; x = x.parent) {
            if (x.loading != null) {
                return true;
            }
        }
        return false;
    }

    /**
     * Marks a host backup in flight on {@code node}: it stays a device hit, becomes neither host
     * visible nor evictable until {@link #commitHost} or {@link #abortPending}. Core should also
     * {@link #lock} the node while copies run (pending alone already blocks eviction).
     *
     * @throws IllegalStateException unless {@link #canBackUp(RadixNode)}
     */
    public void markPending(RadixNode node, PendingBackup handle) {
        checkNode(node, false);
        if (handle == null) {
            throw new IllegalArgumentException("pending backup handle must not be null");
        }
        if (!canBackUp(node)) {
            throw new IllegalStateException("cannot back up " + node + ": a backup needs device pages, no host value"
                    + " or pending backup, and a parent that is the root or backed up (parent " + node.parent + ")");
        }
        devicePagesUnevictable -= unevictablePages(node);
        node.pending = handle;
        devicePagesUnevictable += unevictablePages(node);
        hostPagesPending += node.pageCount;
        refresh(node);
    }

    private void checkPending(RadixNode node, PendingBackup handle, String op) {
        checkNode(node, false);
        if (handle == null) {
            throw new IllegalArgumentException("pending backup handle must not be null");
        }
        if (node.pending != handle) {
            throw new IllegalStateException(op + " of " + node + ": node must be pending with the given handle, but "
                    + (node.pending == null ? "it is not pending" : "it carries another backup"));
        }
    }

    /**
     * Publishes the host value of a pending node and clears its pending state.
     *
     * @throws IllegalStateException if the node is not pending with {@code handle}
     * @throws IllegalArgumentException if {@code value.pageCount() != node.pageCount()}
     */
    public void commitHost(RadixNode node, PendingBackup handle, HostValue value) {
        checkPending(node, handle, "commitHost");
        if (value == null) {
            throw new IllegalArgumentException("host value must not be null");
        }
        if (value.pageCount() != node.pageCount) {
            throw new IllegalArgumentException("host value of " + value.pageCount() + " pages must cover the node's "
                    + node.pageCount + " pages");
        }
        devicePagesUnevictable -= unevictablePages(node);
        node.pending = null;
        node.hostValue = value;
        devicePagesUnevictable += unevictablePages(node);
        hostPagesPending -= node.pageCount;
        hostPagesCommitted += node.pageCount;
        refresh(node);
        if (observer != null) {
            observer.onStored(TierListener.HOST, node);
        }
    }

    /**
     * Clears the pending state of {@code node} without publishing anything.
     *
     * @throws IllegalStateException if the node is not pending with {@code handle}
     */
    public void abortPending(RadixNode node, PendingBackup handle) {
        checkPending(node, handle, "abortPending");
        devicePagesUnevictable -= unevictablePages(node);
        node.pending = null;
        devicePagesUnevictable += unevictablePages(node);
        hostPagesPending -= node.pageCount;
        refresh(node);
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
        LoadTransitions.attachDevice(this, node, pages, from);
    }

    /**
     * Starts loading a host-only node: it takes device pages {@code pages[from, from + node.pageCount())}
     * and the state LOADING. It is then matched as a device prefix (the request that owns the load, and
     * any that join it, wait for the load's layers on the device), but {@link MatchResult#readyPageCount()}
     * stops before it; it is not evictable on either tier; inserts may pass through it and add nodes
     * below it, whose backups may copy but are not published until the load finishes
     * ({@link #dependsOnLoad}). The pages stay the load's until {@link #finishLoad}. Load a path top-down.
     *
     * @throws IllegalStateException unless the node is host-only, not loading, and its parent is the root
     *     or holds device pages (a loading parent included)
     */
    public void beginLoad(RadixNode node, int[] pages, int from, PendingLoad handle) {
        LoadTransitions.beginLoad(this, node, pages, from, handle);
    }

    /**
     * Ends the load of {@code node} successfully: its pages become the tree's and it is an ordinary
     * device node with a host value.
     *
     * @throws IllegalStateException if the node is not loading with {@code handle}
     */
    public void finishLoad(RadixNode node, PendingLoad handle) {
        LoadTransitions.finishLoad(this, node, handle);
    }

    /**
     * Ends the load of {@code node} in failure and invalidates the subtree whose KV depended on it.
     * The node drops the load's pages (they stay the load's: the caller frees them, once) and is
     * host-only again. Below it, every device node is invalidated: a node another load is filling
     * drops that load's pages (that load frees them when it ends); a node with a host value drops its
     * device pages to {@code sink} and stays host-only; a device-only node is removed with its subtree,
     * its pages going to {@code sink}, and marked {@linkplain RadixNode#isInvalidated() invalidated}
     * (later {@link #unlock} and {@link #releaseHost} on it are no-ops; its locks are taken off its
     * ancestors now). Descendants are dropped, not re-homed: their KV was computed over the bytes the
     * load failed to deliver. A removed node that carries a pending backup (always device-only) tells
     * it first ({@link PendingBackup#onInvalidated}); its pages then go to {@code sink} while
     * {@link RadixNode#pending()} still names the backup (a sink may hold them until the backup's
     * copies have drained), and then the node drops the handle.
     *
     * @return pages handed to {@code sink}
     * @throws IllegalStateException if the node is not loading with {@code handle}
     */
    public int failLoad(RadixNode node, PendingLoad handle, DeviceEvictionListener sink) {
        return LoadTransitions.failLoad(this, node, handle, sink);
    }

    /**
     * Undoes {@link #attachDevice} after a failed load: drops the node's device pages (the caller
     * frees them), leaving it host-only. Detach a path bottom-up.
     *
     * @throws IllegalStateException unless the node holds device pages and a committed host value,
     *     is unlocked, not pending and has no device-resident child
     */
    public void detachDevice(RadixNode node) {
        LoadTransitions.detachDevice(this, node);
    }

    /**
     * Withdraws {@code node} and everything below it from the device tier: for pages a request inserted whose KV
     * was never computed (it was cancelled or preempted before their forward was launched), so that no match
     * returns them. Like the invalidation of {@link #failLoad}: a device-only node is removed with its subtree,
     * its pages going to {@code sink}, its locks and host protection taken off its ancestors, and marked
     * {@linkplain RadixNode#isInvalidated() invalidated} (a pending backup on it is told first, {@link
     * PendingBackup#onInvalidated}, and its pages go to {@code sink} while {@link RadixNode#pending()} still names
     * the backup); a node with a committed host value keeps it and drops only its device pages, and so does each
     * such node below. The caller checks beforehand that nothing else uses the nodes (locks, loads).
     *
     * @return pages handed to {@code sink}
     * @throws IllegalArgumentException if {@code node} or {@code sink} is null, or {@code node} is the root
     * @throws IllegalStateException if {@code node} was removed from the tree, holds no device pages, or is loading
     */
    public int withdraw(RadixNode node, DeviceEvictionListener sink) {
        return LoadTransitions.withdraw(this, node, sink);
    }

    /**
     * The node of the cached path of {@code tokens[from, from + len)} that starts at page {@code page} of the
     * sequence, splitting the node that spans that page (as a match ending there would); no access order or hit
     * count moves. Null when the path holds fewer than {@code page + 1} whole pages of {@code tokens}.
     *
     * @throws IllegalArgumentException on a null array, a range outside {@code tokens} or a negative page
     */
    public RadixNode nodeStartingAt(int[] tokens, int from, int len, int page) {
        return LoadTransitions.nodeStartingAt(this, tokens, from, len, page);
    }

    /**
     * Calls {@code visitor} for {@code node} and every node below it, parents before children. The visitor must not
     * change the tree. Allocates (a stack); for cold paths.
     *
     * @throws IllegalArgumentException if {@code node} or {@code visitor} is null
     * @throws IllegalStateException if {@code node} was removed from the tree
     */
    public void forEachInSubtree(RadixNode node, java.util.function.Consumer<RadixNode> visitor) {
        checkNode(node, true);
        if (visitor == null) {
            throw new IllegalArgumentException("visitor must not be null");
        }
        LoadTransitions.forEachInSubtree(node, visitor);
    }

    void dropDevice(RadixNode n) {
        devicePagesCached -= n.pageCount;
        n.devPages = null;
        n.devOff = 0;
        n.parent.deviceChildCount--;
        deviceQueue.onNonResident(n);
        if (n.hostValue != null) {
            hostQueue.onResident(n, false);
        }
    }

    void removeNode(RadixNode n) {
        RadixNode p = n.parent;
        ChildTable.removeChild(p, n);
        deviceQueue.onNonResident(n);
        hostQueue.onNonResident(n);
        n.attached = false;
        n.parent = null;
        nodeCount--;
    }

    // ------------------------------------------------------------------ eviction

    /**
     * Evicts device leaves in policy order until at least {@code pages} pages are freed or nothing
     * is evictable. Never evicts a locked or pending node, a node with device-resident children, or
     * a node without host value that has children or host protection. A node with a committed host
     * value becomes host-only; one without is removed (which may expose its parent).
     *
     * @return pages evicted
     */
    public int evictDevice(int pages, DeviceEvictionListener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener must not be null");
        }
        if (pages <= 0) {
            return 0;
        }
        int evicted = 0;
        deviceQueue.beginScan();
        try {
            while (evicted < pages) {
                RadixNode n = deviceQueue.nextCandidate();
                if (n == null) {
                    break;
                }
                if (!eligible(n, true) || !listener.mayEvict(n)) {
                    continue;
                }
                int[] arr = n.devPages;
                int off = n.devOff;
                int count = n.pageCount;
                RadixNode parent = n.parent;
                if (observer != null && LoadTransitions.deviceReported(this, n)) {
                    observer.onRemoving(TierListener.DEVICE, n);
                }
                dropDevice(n);
                if (n.hostValue == null) {
                    removeNode(n);
                } else {
                    refresh(n);
                }
                refresh(parent);
                evicted += count;
                listener.onDeviceEvicted(n, arr, off, count);
            }
        } finally {
            deviceQueue.endScan();
        }
        return evicted;
    }

    /**
     * Evicts host-only leaves (device evicted, committed host value, no children, unprotected,
     * unlocked) in policy order until at least {@code pages} pages are freed; each is removed from
     * the tree, which may expose its parent. Host copies of device-resident nodes are not evicted
     * (as in SGLang).
     *
     * @return host pages evicted
     */
    public int evictHost(int pages, HostEvictionListener listener) {
        if (listener == null) {
            throw new IllegalArgumentException("listener must not be null");
        }
        if (pages <= 0) {
            return 0;
        }
        int evicted = 0;
        hostQueue.beginScan();
        try {
            while (evicted < pages) {
                RadixNode n = hostQueue.nextCandidate();
                if (n == null) {
                    break;
                }
                if (!eligible(n, false) || !listener.mayEvictHost(n)) {
                    continue;
                }
                HostValue value = n.hostValue;
                int count = n.pageCount;
                RadixNode parent = n.parent;
                if (observer != null) {
                    observer.onRemoving(TierListener.HOST, n);
                }
                hostPagesCommitted -= count;
                // before the removal: a listener may read the node's path (a write-back names its pages by it)
                listener.onHostEvicted(n, value);
                removeNode(n);
                refresh(parent);
                evicted += count;
            }
        } finally {
            hostQueue.endScan();
        }
        return evicted;
    }

    /**
     * Withdraws the committed host value of {@code node} outside eviction order: the CP group found that another rank
     * never committed it, so it must not be a host hit. A device-resident node keeps its device pages and becomes
     * device-only; a host-only node (a leaf, then) is removed from the tree, which may expose its parent. The
     * listener gets the value (to free its pages) before the change; the tier observer sees the host copy removed.
     * Refused (nothing changes) while the node is pending, loading, host-protected, or a child is backed up (its host
     * copy depends on this one: withdraw the child first), or while a host-only node is locked or has children.
     *
     * @return true if the host value was withdrawn
     * @throws IllegalArgumentException if {@code node} is null, the root, or has no host value
     */
    public boolean revokeHost(RadixNode node, HostEvictionListener listener) {
        return HostRevocation.revokeHost(this, node, listener);
    }

    // ------------------------------------------------------------------ counters

    /** @return device pages held by nodes */
    public long devicePagesCached() {
        return devicePagesCached;
    }

    /** @return device pages of nodes that are neither locked nor pending */
    public long devicePagesEvictable() {
        return devicePagesCached - devicePagesUnevictable;
    }

    /** @return device pages of locked nodes */
    public long devicePagesLocked() {
        return devicePagesLocked;
    }

    /** @return pages covered by committed host values */
    public long hostPagesCommitted() {
        return hostPagesCommitted;
    }

    /** @return pages of nodes with a backup in flight */
    public long hostPagesPending() {
        return hostPagesPending;
    }

    /** @return non-root nodes */
    public int nodeCount() {
        return nodeCount;
    }

    /**
     * Walks the whole tree and verifies structure, invariants, queues and counters. O(n); for
     * tests and debugging.
     *
     * @throws IllegalStateException describing the first violation found
     */
    public void checkInvariants() {
        TreeInvariants.check(this);
    }

    /**
     * Checks the two properties a cache that keeps host copies contiguous from the root relies on, which the tree
     * alone does not enforce (the order of commits and aborts is its caller's): every node with a committed host
     * value has a parent that is the root or holds one too, and {@link #devicePagesEvictable()} equals the pages
     * that repeated {@link #evictDevice} calls (no listener veto) would free. O(n); for tests and debugging.
     *
     * @throws IllegalStateException describing the first violation found
     */
    public void checkHostContiguity() {
        TreeInvariants.checkHostContiguity(this);
    }
}
