package io.hicache.events;

import io.hicache.core.HiCache;
import io.hicache.radix.RadixNode;

/**
 * One cache's side of the publisher: turns the cache's tier transitions into page records in its
 * {@link EventRing}. Runs on the cache's scheduler thread (the ring's one producer); allocates nothing once its
 * scratch arrays have grown to the deepest path seen, takes no lock.
 *
 * <p>A node's page hashes need the hash of the page before it (its parent's last page): a direct-mapped cache
 * keyed by {@link RadixNode#serial()} holds each node's last-page hash. That value never changes for a node (a
 * split keeps the node as the tail, so its last page stays the same) and a serial names one node for the tree's
 * life, so a hit is always right; a miss walks up to the nearest cached ancestor (or the root) and hashes down. A
 * whole-node event takes the node's last-page hash from its own entry instead of hashing that page again, and an
 * insert hashes only from the first node that holds a new page. The cache holds numbers only, no node: storing
 * one costs no GC barrier and keeps nothing the tree has let go of reachable; a removal that takes the node out of
 * the tree still drops its entry, to leave the slot to live nodes.
 */
final class TierEventCollector implements HiCache.TierListener {
    private static final int CACHE_BITS = 14;
    private static final int CACHE_SLOTS = 1 << CACHE_BITS;

    final EventRing ring;
    /** Where blocks go instead of the ring (an in-process consumer), or null. */
    private final BlockEventSink sink;
    final int dataParallelRank;
    private final int pageSize;
    private final long seed;
    /** Slot {@code i}'s node serial at {@code 2i} (-1: empty) and that node's last-page hash at {@code 2i + 1}. */
    private final long[] cache = new long[2 * CACHE_SLOTS];
    /** Scratch: the ancestors {@link #startHash} hashes down from. */
    private RadixNode[] path = new RadixNode[64];
    /** Scratch: an insert's nodes from its last up to the first that holds a new page. */
    private RadixNode[] nodes = new RadixNode[64];
    private volatile boolean enabled = true;

    TierEventCollector(EventRing ring, int dataParallelRank, long extraKey) {
        this.ring = ring;
        this.sink = null;
        this.dataParallelRank = dataParallelRank;
        this.pageSize = ring.pageSize;
        this.seed = BlockHasher.root(extraKey);
        clearCache();
    }

    /** A collector that hands each block to {@code sink} instead of a ring. */
    TierEventCollector(BlockEventSink sink, int pageSize, long extraKey) {
        this.ring = null;
        this.sink = sink;
        this.dataParallelRank = 0;
        this.pageSize = pageSize;
        this.seed = BlockHasher.root(extraKey);
        clearCache();
    }

    private void clearCache() {
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
            h = BlockHasher.page(h, tokens, off, pageSize);
            if (p >= firstNew && sink != null) {
                sink.stored(DEVICE, h, parent == seed ? -1 : parent);
            } else if (p >= firstNew) {
                int i = ring.claim();
                ring.set(i, EventRing.STORED, DEVICE, h, parent);
                System.arraycopy(tokens, off, ring.tokens(), i * pageSize, pageSize);
                ring.publish(i);
            }
            if (p + 1 == nodeEnd && depth > 0) { // the end of a node on the path: remember its last-page hash
                RadixNode n = nodes[--depth];
                nodes[depth] = null;
                remember(n, h);
                nodeEnd = depth > 0 ? nodeEnd + nodes[depth - 1].pageCount() : pages;
            }
        }
        if (sink == null) {
            ring.flush();
        }
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
            h = BlockHasher.page(h, tokens, off, pageSize);
            if (p < firstPage) {
                continue;
            }
            if (sink != null) {
                if (stored) {
                    sink.stored(tier, h, parent == seed ? -1 : parent);
                } else {
                    sink.removed(tier, h);
                }
            } else {
                int i = ring.claim();
                ring.set(i, kind, tier, h, parent);
                if (stored) {
                    System.arraycopy(tokens, off, ring.tokens(), i * pageSize, pageSize);
                }
                ring.publish(i);
            }
        }
        if (sink == null) {
            ring.flush();
        }
    }

    private void emitNode(byte kind, int tier, RadixNode node) {
        if (!node.isRoot()) {
            emitNode(kind, tier, node, 0, node.pageCount());
        }
    }

    /**
     * Records pages {@code [first, end)} of {@code node} to the sink or the ring; remembers its end hash once the last
     * page is hashed. The last page's hash is the node's cached end hash when it has one (insert and commit cache it).
     */
    private void emitNode(byte kind, int tier, RadixNode node, int first, int end) {
        long h = startHash(node);
        int pages = node.pageCount();
        for (int p = 0; p < first; p++) {
            h = hashPage(node, p, h);
        }
        int slot = slot(node);
        int known = end == pages && cache[slot] == node.serial() ? pages - 1 : -1;
        long endHash = cache[slot + 1];
        for (int p = first; p < end; p++) {
            long parent = h;
            h = p == known ? endHash : hashPage(node, p, h);
            if (sink != null) {
                if (kind == EventRing.STORED) {
                    sink.stored(tier, h, parent == seed ? -1 : parent);
                } else {
                    sink.removed(tier, h);
                }
                continue;
            }
            int i = ring.claim();
            if (kind == EventRing.STORED) { // a removal publishes no tokens
                int[] dst = ring.tokens();
                int base = i * pageSize;
                for (int k = 0; k < pageSize; k++) {
                    dst[base + k] = node.token(p * pageSize + k);
                }
            }
            ring.set(i, kind, tier, h, parent);
            ring.publish(i);
        }
        if (sink == null) {
            ring.flush();
        }
        if (end == pages && kind == EventRing.REMOVED && !staysInTree(tier, node)) {
            forget(node);
        } else if (end == pages) {
            remember(node, h);
        }
    }

    /**
     * Whether {@code node} stays in the tree after its copy on {@code tier} goes: a device copy leaves a node with
     * a committed host copy in place (host-only), a host copy one that still has its device pages, an L3 copy
     * every node.
     */
    private static boolean staysInTree(int tier, RadixNode node) {
        return switch (tier) {
            case DEVICE -> node.isHostResident();
            case HOST -> node.hasDeviceValue();
            default -> true;
        };
    }

    private long hashPage(RadixNode node, int page, long h) {
        long x = h;
        for (int k = 0; k < pageSize; k++) {
            x = BlockHasher.step(x, node.token(page * pageSize + k));
        }
        return BlockHasher.finish(x, pageSize);
    }

    private void remember(RadixNode node, long endHash) {
        int slot = slot(node);
        cache[slot] = node.serial();
        cache[slot + 1] = endHash;
    }

    /**
     * Drops {@code node}'s entry (a node leaves the tree only through removals), leaving the slot to live nodes. A
     * node still in the tree that misses later is hashed again from its nearest cached ancestor.
     */
    private void forget(RadixNode node) {
        int slot = slot(node);
        if (cache[slot] == node.serial()) {
            cache[slot] = -1;
        }
    }

    /** True if the end-hash cache holds {@code node} (tests). */
    boolean caches(RadixNode node) {
        return cache[slot(node)] == node.serial();
    }

    /** The hash of the page before {@code node}'s first (the seed below the root). */
    private long startHash(RadixNode node) {
        RadixNode p = node.parent();
        int depth = 0;
        long h = seed;
        while (p != null && !p.isRoot()) {
            int slot = slot(p);
            if (cache[slot] == p.serial()) {
                h = cache[slot + 1];
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
                h = hashPage(n, q, h);
            }
            remember(n, h);
        }
        return h;
    }

    /** The index of {@code n}'s serial in {@link #cache}: Fibonacci hashing (consecutive serials land far apart). */
    private static int slot(RadixNode n) {
        return (int) ((n.serial() * 0x9E3779B97F4A7C15L) >>> (Long.SIZE - CACHE_BITS)) << 1;
    }

    /** The seed: a record whose parent equals it has no parent block (it is a first page). */
    long seed() {
        return seed;
    }
}
