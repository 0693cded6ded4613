package io.hicache.sim.engine;

import io.hicache.core.DevicePageAllocator;
import io.hicache.core.DevicePagePool;
import io.hicache.core.DevicePageSink;
import io.hicache.core.HiCache;
import io.hicache.core.TreeView;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.util.List;

/**
 * The device pages of one instance and who holds each: free in the {@link DevicePagePool}, owned by a running
 * request ({@code pages[ownedFrom, pageCount)} of a {@link ServedRequest}), or cached in the trees of the CP ranks'
 * caches. One pool serves every rank (identical scheduling gives every rank the same page ids): rank 0's evictions and
 * load-backs take pages from it and give them back, the other ranks replay rank 0's answers ({@link
 * RankMirroring.Mirror}) and free nothing. The ownership checks prove that no page is held twice and none leaks.
 * Owned by the instance's scheduler thread; not thread-safe.
 */
final class PageLedger {
    private static final DevicePageSink NO_SINK = (pages, offset, count) -> { };

    private final int instance;
    private final HiCache[] caches;
    private final DevicePagePool pool;
    private final RankMirroring.Recorder recorder;
    private final RankMirroring.Mirror[] mirrors;
    private final RadixNode[] anchors;

    PageLedger(int instance, HiCache[] caches, int devicePages) {
        this.instance = instance;
        this.caches = caches;
        this.pool = DevicePagePool.nextFit(devicePages);
        this.recorder = new RankMirroring.Recorder(pool);
        this.mirrors = new RankMirroring.Mirror[caches.length];
        for (int r = 1; r < caches.length; r++) {
            mirrors[r] = new RankMirroring.Mirror(recorder);
        }
        this.anchors = new RadixNode[caches.length];
    }

    /** The most device pages in use at once so far (requests' and the tree's). */
    int peakUsedPages() {
        return pool.peakUsedPages();
    }

    /** The device pages of the instance. */
    int capacityPages() {
        return pool.capacity();
    }

    /** The allocator rank {@code r} hands to one {@link HiCache#loadBack}, ready for it (rank 0 first). */
    DevicePageAllocator loadAllocator(int r) {
        if (r == 0) {
            recorder.reset();
            return recorder;
        }
        mirrors[r].reset();
        return mirrors[r];
    }

    /** Allocates {@code n} free pages into {@code out[offset..]} without evicting; false (nothing taken) if too few. */
    boolean allocateFree(int n, int[] out, int offset) {
        return pool.allocate(n, out, offset);
    }

    /**
     * Evicts cached pages on every rank (rank 0's go back to the pool) to make room for {@code n} pages and allocates
     * them. With {@code protect}, the device prefix each rank just matched is locked while evicting, so the pages the
     * request is about to use stay cached.
     *
     * @param protect the ranks' matches to keep, or null
     * @return whether the pages were allocated
     */
    boolean evictAndAllocate(int n, int[] out, int offset, MatchResult[] protect) {
        if (protect != null) {
            for (int r = 0; r < caches.length; r++) {
                anchors[r] = protect[r].lastDeviceNode();
                caches[r].lock(anchors[r]);
            }
        }
        try {
            int need = n - pool.freePages();
            for (int r = 0; r < caches.length; r++) {
                caches[r].evictDevice(need, r == 0 ? pool : NO_SINK);
            }
        } finally {
            if (protect != null) {
                for (int r = 0; r < caches.length; r++) {
                    caches[r].unlock(anchors[r]);
                    anchors[r] = null;
                }
            }
        }
        return pool.allocate(n, out, offset);
    }

    /**
     * Whether {@code n} pages could be allocated now, free or by evicting, with the device prefix each rank just
     * matched ({@code protect}) kept.
     */
    boolean hasRoom(int n, MatchResult[] protect) {
        if (n <= pool.freePages()) {
            return true;
        }
        RadixNode anchor = protect[0].lastDeviceNode();
        caches[0].lock(anchor);
        try {
            return n - pool.freePages() <= caches[0].tree().devicePagesEvictable();
        } finally {
            caches[0].unlock(anchor);
        }
    }

    /** Allocates the page right after {@code after} into {@code out[offset]} if it is free (see the pool). */
    boolean allocateAfter(int after, int[] out, int offset) {
        return pool.allocateAfter(after, out, offset);
    }

    /** Leaves {@code pages} free pages after the last allocation for the request that took it (see the pool). */
    void skip(int pages) {
        pool.skip(pages);
    }

    /** Gives a request's own pages back to the pool. */
    void free(int[] pages, int offset, int count) {
        pool.free(pages, offset, count);
    }

    /**
     * Checks that no device page is held twice: the free list and the running requests' own pages are disjoint (the
     * pool itself refuses a page freed twice) and, with rank 0's cached pages, account for the whole pool.
     */
    void checkOwnership(List<ServedRequest> running) {
        boolean[] seen = new boolean[pool.capacity()];
        long owned = 0;
        for (int p : pool.freeList()) {
            mark(seen, p, "the free list");
        }
        for (ServedRequest q : running) {
            for (int i = q.ownedFrom; i < q.pageCount; i++) {
                mark(seen, q.pages[i], "request " + q.request.index());
                owned++;
            }
        }
        long tree = caches[0].tree().devicePagesCached();
        if (tree + pool.freePages() + owned != pool.capacity()) {
            throw new IllegalStateException("instance " + instance + ": device pages do not add up: tree " + tree
                    + " + free " + pool.freePages() + " + requests " + owned + " != " + pool.capacity());
        }
    }

    /** After every request finished: each rank's tree holds every page not free, and none is locked. */
    void checkEndState() {
        for (int r = 0; r < caches.length; r++) {
            TreeView tree = caches[r].tree();
            if (tree.devicePagesLocked() != 0) {
                throw new IllegalStateException("instance " + instance + " rank " + r + ": " + tree.devicePagesLocked()
                        + " device pages still locked after every request finished");
            }
            if (tree.devicePagesCached() + pool.freePages() != pool.capacity()) {
                throw new IllegalStateException("instance " + instance + " rank " + r + ": device pages leaked: tree "
                        + "holds " + tree.devicePagesCached() + ", pool has " + pool.freePages() + " free of "
                        + pool.capacity());
            }
        }
    }

    private void mark(boolean[] seen, int page, String holder) {
        if (seen[page]) {
            throw new IllegalStateException("instance " + instance + ": device page " + page + " owned twice (again by "
                    + holder + ")");
        }
        seen[page] = true;
    }
}
