package io.hicache.core.internal;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

/**
 * The storage tier's host leases of one controller: host pages reserved for a prefetch ({@link #reserve}), then
 * published as a host-only node ({@link #publish}) or given back ({@link #end}); each ends exactly once, and the
 * controller ends those still open when it closes ({@link #endAll}). Pages and budget come from the
 * {@link HostEvictingAllocator}.
 *
 * <p><b>Threads.</b> Scheduler thread only; the controller checks the thread and its state before calling.
 */
final class HostLeases {
    /** Allocator holder ids of prefetch leases: far above any backup sequence number. */
    private static final long LEASE_HOLDER_BASE = 1L << 62;

    private final HiCacheController owner;
    private final HostEvictingAllocator room;
    private final HostBudget budget;
    private final HostPageAllocator allocator;
    private final RadixTree tree;
    private final OwnerLanes lanes;
    private final int cpSize;
    private final int rank;
    private final int pageSize;
    private final HostKvPool draftPool;
    private final java.util.ArrayList<HostLease> open = new java.util.ArrayList<>();
    private long leaseSeq;

    HostLeases(HiCacheController owner, HostEvictingAllocator room, HostBudget budget, HostPageAllocator allocator,
               RadixTree tree, OwnerLanes lanes, int cpSize, int rank, int pageSize, HostKvPool draftPool) {
        this.owner = owner;
        this.room = room;
        this.budget = budget;
        this.allocator = allocator;
        this.tree = tree;
        this.lanes = lanes;
        this.cpSize = cpSize;
        this.rank = rank;
        this.pageSize = pageSize;
        this.draftPool = draftPool;
    }

    /** See {@link HiCacheController#reserveHost}. */
    HostLease reserve(int startPage, int pages, int totalPages) {
        if (pages < 1 || startPage < 0 || totalPages < startPage + pages) {
            throw new IllegalArgumentException("reserveHost(startPage=" + startPage + ", pages=" + pages
                + ", totalPages=" + totalPages + "): need pages >= 1 and startPage + pages <= totalPages");
        }
        if (!room.makeRoom(startPage, pages, totalPages)) {
            return null;
        }
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        int owned = lane.ownedCount();
        int[] hostPages = new int[owned];
        room.allocateBudgeted(owned, hostPages, LEASE_HOLDER_BASE + leaseSeq++);
        budget.take(lane);
        HostLease lease = new HostLease(owner, hostPages, lane);
        open.add(lease);
        return lease;
    }

    /** See {@link HiCacheController#publishHost(HostLease, int[], int, int, byte[], int, boolean)}. */
    RadixNode publish(HostLease lease, int[] tokens, int from, int pages, byte[] hashes, int hashOff,
                      boolean withDraft) {
        checkLease(lease);
        if (withDraft && draftPool == null) {
            throw new IllegalArgumentException("publishHost(withDraft=true) but no draft KV layout is configured");
        }
        if (pages < 0 || pages > lease.pageCount()) {
            throw new IllegalArgumentException("publishHost of " + pages + " pages outside [0, " + lease.pageCount()
                + "]");
        }
        if (pages == 0) {
            endLease(lease, 0);
            return null;
        }
        LaneDescription l = lease.lanes;
        LaneDescription head = pages == l.pageCount() ? l : l.slice(0, pages);
        int owned = l.ownedCountBefore(pages);
        HostPages value = new HostPages(java.util.Arrays.copyOf(lease.hostPages, owned), head, withDraft, true);
        int startPage = l.startPage();
        RadixNode node = tree.insertHost(tokens, from, (startPage + pages) * pageSize, startPage, value, hashes,
            hashOff);
        endLease(lease, node == null ? 0 : pages);
        return node;
    }

    /**
     * Ends {@code lease} without publishing, unless it already ended or the controller is {@code closed}.
     *
     * @return false if it had already ended (or the controller closed, which ended it)
     * @throws IllegalArgumentException if the lease is null or another controller's
     */
    boolean end(HostLease lease, boolean closed) {
        if (lease == null || lease.owner != owner) {
            throw new IllegalArgumentException(lease + " does not belong to this controller");
        }
        if (lease.ended || closed) {
            return false;
        }
        endLease(lease, 0);
        return true;
    }

    /** Ends every lease still open (close). */
    void endAll() {
        while (!open.isEmpty()) {
            endLease(open.get(open.size() - 1), 0);
        }
    }

    /** Leases not yet ended. */
    int openCount() {
        return open.size();
    }

    private void checkLease(HostLease lease) {
        if (lease == null || lease.owner != owner) {
            throw new IllegalArgumentException(lease + " does not belong to this controller");
        }
        if (lease.ended) {
            throw new IllegalStateException(lease + " already ended");
        }
    }

    /** Ends a lease whose first {@code keptPositions} positions were published: frees the rest. */
    private void endLease(HostLease lease, int keptPositions) {
        lease.ended = true;
        open.remove(lease);
        LaneDescription l = lease.lanes;
        int keptOwned = keptPositions == 0 ? 0 : l.ownedCountBefore(keptPositions);
        int freeCount = lease.hostPages.length - keptOwned;
        if (freeCount > 0) {
            allocator.free(lease.hostPages, keptOwned, freeCount);
        }
        // the kept head is the published node's now: its value gives it back when evicted
        budget.give(l.startPage() + keptPositions, l.pageCount() - keptPositions, l.totalPages());
    }
}
