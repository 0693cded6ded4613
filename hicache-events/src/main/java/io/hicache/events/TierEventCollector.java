package io.hicache.events;

import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.spi.KeyTokensReader;


/**
 * One cache's side of the publisher: turns the cache's tier transitions into page and run records in its
 * {@link EventRing}. Runs on the cache's scheduler thread (the ring's one producer); allocates nothing once its
 * scratch arrays have grown to the deepest path seen, takes no lock.
 *
 * <p>A page's hash needs the hash of the page before it, and a removal or a later tier's store names the hashes an
 * insert computed: a direct-mapped cache keeps each page's hash, keyed by its node's {@link RadixNode#serial()}
 * and its place counted from the node's end. That key names the same page for the tree's life: a split keeps the
 * node as the tail (its pages keep their places from the end) and gives the head a new serial, and a serial is
 * never reused, so a hit is always right. A node's pages take consecutive entries (a node's events read
 * consecutive memory). A miss hashes the page from the one before it (a missing first page walks up to the nearest
 * cached ancestor, or the root, and hashes down), and keeps what it computed. An insert hashes only from the first
 * node that holds a new page. The cache holds numbers only, no node: storing one costs no GC barrier and keeps
 * nothing the tree has let go of reachable.
 *
 * <p>Into a ring, a store (after the insert's) or removal of two or more of a node's pages is one run record: the
 * hash before its first page and where its tokens are in the node's own token array, which is never written again
 * (handed out by {@link RadixNode#readKeyTokens}); the publisher's thread hashes and copies the pages. An insert's
 * pages are hashed here anyway (the next insert chains from them), so they go into the ring one page at a time
 * with their hashes.
 */
final class TierEventCollector implements TierListener {
    /** The cache's size: 2^14 pages (256 KiB), small enough to stay in a core's L2 cache. */
    static final int CACHE_BITS = 14;
    /** Bits of a key that hold the page's place from its node's end; the serial takes the rest. */
    private static final int PLACE_BITS = 20;
    /** Serials at or past this bound (and places past {@link #PLACE_BITS}) are not cached: their keys would clash. */
    private static final long MAX_SERIAL = 1L << (Long.SIZE - 1 - PLACE_BITS);
    /**
     * Fewest pages a node's store or removal must have to go into the ring as one run. A single page's hash is
     * usually cached, so its own record costs the scheduler no more and spares the publisher hashing it again.
     */
    static final int MIN_RUN_PAGES = 2;
    /** Why this module cannot read a node's tokens (null when it can). */
    private static final String NO_ACCESS = RadixNode.class.getModule().isExported("io.hicache.radix.spi",
            TierEventCollector.class.getModule()) ? null : "io.hicache.radix.spi is not exported to "
            + TierEventCollector.class.getModule();

    final EventRing ring;
    /** Puts run records into the ring. */
    private final RunRecord run = new RunRecord();
    /** Where blocks go instead of the ring (an in-process consumer), or null. */
    private final BlockEventSink sink;
    final int dataParallelRank;
    private final int pageSize;
    private final long seed;
    /** Entry {@code e}'s key ({@link #key}; -1: empty) at {@code 2e}, its page's hash at {@code 2e + 1}. */
    private final long[] cache;
    private final int cacheBits;
    /** Scratch: the ancestors {@link #startHash} hashes down from. */
    private RadixNode[] path = new RadixNode[64];
    /** Scratch: an insert's nodes from its last up to the first that holds a new page. */
    private RadixNode[] nodes = new RadixNode[64];
    /** Scratch: one page's tokens, hashed where the cache misses. */
    private final int[] page;
    private volatile boolean enabled = true;
    /** Pages hashed so far (tests: what each transition costs in hashing). */
    private long pagesHashed;

    /**
     * @throws IllegalStateException if this module cannot read a node's tokens (io.hicache.events on the class
     *                               path while io.hicache.radix is a named module that exports its SPI only to
     *                               named modules)
     */
    TierEventCollector(EventRing ring, int dataParallelRank, long extraKey) {
        if (NO_ACCESS != null) {
            throw new IllegalStateException("KV events need to read radix nodes' tokens: put io.hicache.events and "
                    + "io.hicache.radix both on the module path (io.hicache.radix exports its SPI to "
                    + "io.hicache.events) or both on the class path (" + NO_ACCESS + ")");
        }
        this.ring = ring;
        this.sink = null;
        this.dataParallelRank = dataParallelRank;
        this.pageSize = ring.pageSize;
        this.seed = BlockHasher.root(extraKey);
        this.page = new int[pageSize];
        this.cacheBits = CACHE_BITS;
        this.cache = new long[2 << CACHE_BITS];
        clearCache();
    }

    /** A collector that hands each block to {@code sink} instead of a ring, with a cache of 2^cacheBits pages. */
    TierEventCollector(BlockEventSink sink, int pageSize, long extraKey, int cacheBits) {
        if (cacheBits < 1 || cacheBits > 24) {
            throw new IllegalArgumentException("cacheBits must be in [1, 24], got " + cacheBits);
        }
        this.ring = null;
        this.sink = sink;
        this.dataParallelRank = 0;
        this.pageSize = pageSize;
        this.seed = BlockHasher.root(extraKey);
        this.page = new int[pageSize];
        this.cacheBits = cacheBits;
        this.cache = new long[2 << cacheBits];
        clearCache();
    }

    /** Empties the cache, as a reset does (tests too: later events must hash the same from the tokens alone). */
    void clearCache() {
        for (int i = 0; i < cache.length; i += 2) {
            cache[i] = -1;
        }
    }

    /** Stops recording (the publisher closed or this cache detached). Any thread. */
    void disable() {
        enabled = false;
    }

    /** True once {@link #disable()} was called. */
    boolean disabled() {
        return !enabled;
    }

    @Override
    public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
        if (!enabled) {
            return;
        }
        int pages = len / pageSize;
        int firstNew = firstNewToken / pageSize;
        // The path root..last holds exactly the inserted pages: walk up to the node holding the first new page
        // and hash from there rather than from the root (a long shared prefix costs nothing).
        int depth = 0;
        int start = pages;
        RadixNode top = last;
        while (top != null && !top.isRoot()) {
            if (depth == nodes.length) {
                nodes = java.util.Arrays.copyOf(nodes, depth * 2);
            }
            nodes[depth++] = top;
            start -= top.pageCount();
            if (start <= firstNew) {
                break;
            }
            top = top.parent();
        }
        long h;
        if (depth > 0 && start >= 0 && start <= firstNew) {
            h = startHash(nodes[depth - 1]);
        } else { // not the path the tree reports: hash the whole sequence, remember nothing
            while (depth > 0) {
                nodes[--depth] = null;
            }
            start = 0;
            h = seed;
        }
        int nodeEnd = depth > 0 ? start + nodes[depth - 1].pageCount() : pages;
        for (int p = start; p < pages; p++) {
            int off = from + p * pageSize;
            long parent = h;
            h = hash(h, tokens, off, pageSize);
            if (p >= firstNew) {
                emit(EventRing.STORED, DEVICE, h, parent, tokens, off);
            }
            if (depth > 0) { // a page of a node on the path: remember its hash
                RadixNode n = nodes[depth - 1];
                remember(n, nodeEnd - 1 - p, h);
                if (p + 1 == nodeEnd) {
                    nodes[--depth] = null;
                    nodeEnd = depth > 0 ? nodeEnd + nodes[depth - 1].pageCount() : pages;
                }
            }
        }
        flush();
    }

    @Override
    public void onStored(int tier, RadixNode node) {
        if (enabled) {
            emitNode(EventRing.STORED, tier, node);
        }
    }

    @Override
    public void onRemoving(int tier, RadixNode node) {
        if (enabled) {
            emitNode(EventRing.REMOVED, tier, node);
        }
    }

    @Override
    public void onCleared() {
        if (!enabled) {
            return;
        }
        if (sink != null) {
            sink.cleared();
        } else {
            int i = ring.claim();
            ring.set(i, EventRing.CLEARED, 0, 0, 0);
            ring.publish(i);
            ring.flush();
        }
        clearCache();
    }

    @Override
    public void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
        if (enabled && firstPage >= 0 && pages > 0 && firstPage + pages <= node.pageCount()) {
            emitNode(EventRing.STORED, tier, node, firstPage, firstPage + pages);
        }
    }

    @Override
    public void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
        if (!enabled || firstPage < 0 || pages <= 0) {
            return;
        }
        byte kind = stored ? EventRing.STORED : EventRing.REMOVED;
        long h = seed;
        int end = firstPage + pages;
        for (int p = 0; p < end; p++) {
            int off = from + p * pageSize;
            long parent = h;
            h = hash(h, tokens, off, pageSize);
            if (p >= firstPage) {
                emit(kind, tier, h, parent, tokens, off);
            }
        }
        flush();
    }

    private void emitNode(byte kind, int tier, RadixNode node) {
        if (!node.isRoot()) {
            emitNode(kind, tier, node, 0, node.pageCount());
        }
    }

    /**
     * Records pages {@code [first, end)} of {@code node}: into the ring as one run when there are at least
     * {@link #MIN_RUN_PAGES} (only the hash before its first page is needed here), else page by page (to the sink
     * always), each page's hash from the cache; a miss hashes it from the page before (found the same way) and
     * keeps it.
     */
    private void emitNode(byte kind, int tier, RadixNode node, int first, int end) {
        if (sink == null && end - first >= MIN_RUN_PAGES) { // one record; the publisher hashes and copies the pages
            run.put(node, kind == EventRing.STORED ? EventRing.STORED_RUN : EventRing.REMOVED_RUN, tier,
                    hashBefore(node, first), first, end - first);
            ring.flush();
            return;
        }
        int pages = node.pageCount();
        // the hash of page first - 1 (the start hash when first is 0): a stored page's parent; a removal needs it
        // only where it misses the cache
        long prev = kind == EventRing.STORED ? hashBefore(node, first) : -1;
        for (int p = first; p < end; p++) {
            long h = lookup(node, pages - 1 - p);
            if (h < 0) {
                if (prev < 0) {
                    prev = hashBefore(node, p);
                }
                h = hashAndKeep(node, p, prev);
            }
            emit(kind, tier, h, prev, node, p);
            prev = h;
        }
        flush();
    }

    /** The hash of page {@code p - 1} of {@code node} (the start hash for page 0), hashing what the cache lacks. */
    private long hashBefore(RadixNode node, int p) {
        int pages = node.pageCount();
        long h = -1;
        int q = p - 1;
        while (q >= 0 && (h = lookup(node, pages - 1 - q)) < 0) { // the nearest earlier page the cache holds
            q--;
        }
        if (q < 0) {
            h = startHash(node);
        }
        for (int r = q + 1; r < p; r++) {
            h = hashAndKeep(node, r, h);
        }
        return h;
    }

    /** Hashes page {@code p} of {@code node} below {@code parent} and keeps the hash in the cache. */
    private long hashAndKeep(RadixNode node, int p, long parent) {
        node.copyTokens(p * pageSize, pageSize, page, 0);
        long h = hash(parent, page, 0, pageSize);
        remember(node, node.pageCount() - 1 - p, h);
        return h;
    }

    /** Records page {@code p} of {@code node}, copying a stored page's tokens straight from the node. */
    private void emit(byte kind, int tier, long h, long parent, RadixNode node, int p) {
        if (sink != null) {
            toSink(kind, tier, h, parent);
            return;
        }
        int i = ring.claim();
        if (kind == EventRing.STORED) {
            node.copyTokens(p * pageSize, pageSize, ring.tokens(), i * pageSize);
        }
        ring.set(i, kind, tier, h, parent);
        ring.publish(i);
    }

    /** Records one page whose tokens (a stored page's are published) are {@code tokens[off, off + pageSize)}. */
    private void emit(byte kind, int tier, long h, long parent, int[] tokens, int off) {
        if (sink != null) {
            toSink(kind, tier, h, parent);
            return;
        }
        int i = ring.claim();
        if (kind == EventRing.STORED) {
            System.arraycopy(tokens, off, ring.tokens(), i * pageSize, pageSize);
        }
        ring.set(i, kind, tier, h, parent);
        ring.publish(i);
    }

    private void toSink(byte kind, int tier, long h, long parent) {
        if (kind == EventRing.STORED) {
            sink.stored(tier, h, parent == seed ? -1 : parent);
        } else {
            sink.removed(tier, h);
        }
    }

    /** Makes the ring's records of one hook call visible to the publisher (once per call, not per record). */
    private void flush() {
        if (sink == null) {
            ring.flush();
        }
    }

    private long hash(long parent, int[] tokens, int off, int n) {
        pagesHashed++;
        return BlockHasher.page(parent, tokens, off, n);
    }

    /** Pages hashed since this collector was made (tests). */
    long pagesHashed() {
        return pagesHashed;
    }

    /** The key of page {@code place} pages before {@code node}'s end, or -1 when its serial or place is too large. */
    private static long key(RadixNode node, int place) {
        long serial = node.serial();
        return serial < MAX_SERIAL && (place >>> PLACE_BITS) == 0 ? serial << PLACE_BITS | place : -1;
    }

    /**
     * The index in {@link #cache} of that page's entry: Fibonacci hashing of the serial (consecutive serials land
     * far apart), then one entry per place, so a node's pages from first to last take ascending entries.
     */
    private int entry(RadixNode node, int place) {
        int home = (int) ((node.serial() * 0x9E3779B97F4A7C15L) >>> (Long.SIZE - cacheBits));
        return ((home - place) & ((1 << cacheBits) - 1)) << 1;
    }

    /** The cached hash of that page, or -1 (hashes are non-negative). */
    private long lookup(RadixNode node, int place) {
        long k = key(node, place);
        int e = entry(node, place);
        return k >= 0 && cache[e] == k ? cache[e + 1] : -1;
    }

    private void remember(RadixNode node, int place, long hash) {
        long k = key(node, place);
        if (k >= 0) {
            int e = entry(node, place);
            cache[e] = k;
            cache[e + 1] = hash;
        }
    }

    /** True if the cache holds the hash of {@code node}'s last page (tests). */
    boolean caches(RadixNode node) {
        return lookup(node, 0) >= 0;
    }

    /** The hash of the page before {@code node}'s first (the seed below the root). */
    private long startHash(RadixNode node) {
        RadixNode p = node.parent();
        int depth = 0;
        long h = seed;
        while (p != null && !p.isRoot()) {
            long c = lookup(p, 0);
            if (c >= 0) {
                h = c;
                break;
            }
            if (depth == path.length) {
                path = java.util.Arrays.copyOf(path, depth * 2);
            }
            path[depth++] = p;
            p = p.parent();
        }
        for (int d = depth - 1; d >= 0; d--) {
            RadixNode n = path[d];
            path[d] = null;
            int pages = n.pageCount();
            for (int q = 0; q < pages; q++) {
                h = hashAndKeep(n, q, h);
            }
        }
        return h;
    }

    /** The seed: a record whose parent equals it has no parent block (it is a first page). */
    long seed() {
        return seed;
    }

    /**
     * Puts one run record into the ring: where the node's tokens are, as {@link RadixNode#readKeyTokens} hands it out,
     * for the publisher's thread to copy and hash. Scheduler thread; allocation-free.
     */
    private final class RunRecord implements KeyTokensReader {
        private byte kind;
        private int tier;
        private long before;
        private int first;
        private int pages;

        void put(RadixNode node, byte kind, int tier, long before, int first, int pages) {
            this.kind = kind;
            this.tier = tier;
            this.before = before;
            this.first = first;
            this.pages = pages;
            node.readKeyTokens(this);
        }

        @Override
        public void read(int[] tokens, int offset, int count) {
            int i = ring.claim();
            ring.setRun(i, kind, tier, before, tokens, offset + first * pageSize, pages);
            ring.publish(i);
        }
    }
}
