package io.hicache.core.internal;

import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.spi.StoragePort;

/**
 * Host pages a storage tier holds for a prefetch (L3 → L2) before they are published as a host-only node:
 * the pages of the positions this rank owns among {@code [startPage, startPage + pageCount)} of a sequence of
 * {@code totalPages}, charged to the controller's host budget like a backup. Obtained from
 * {@link HiCacheController#reserveHost}; ended exactly once by {@link HiCacheController#publishHost} or
 * {@link HiCacheController#releaseHost} (and by {@link HiCacheController#close()} for leases still open), so
 * its pages can never leak.
 *
 * <p>Owned by the scheduler thread. The page ids and lanes are fixed at creation; an I/O thread may read them
 * (and write the host pages they name) once the lease was handed to it through a queue.
 */
public final class HostLease implements StoragePort.Lease {
    final HiCacheController owner;
    final int[] hostPages;
    /** The positions reserved, as charged to the host budget. */
    final LaneDescription lanes;
    boolean ended;

    HostLease(HiCacheController owner, int[] hostPages, LaneDescription lanes) {
        this.owner = owner;
        this.hostPages = hostPages;
        this.lanes = lanes;
    }

    /** Positions covered (owned by any rank of the group). */
    @Override
    public int pageCount() {
        return lanes.pageCount();
    }

    /** Pages held on this rank: its owned positions, ascending. */
    public int ownedPageCount() {
        return hostPages.length;
    }

    @Override
    public int ownedOffsets(int[] out) {
        return lanes.ownedOffsets(out);
    }

    /** Host page of owned position {@code i}. */
    @Override
    public int hostPage(int i) {
        if (i < 0 || i >= hostPages.length) {
            throw new IndexOutOfBoundsException("owned page " + i + " outside [0, " + hostPages.length + ")");
        }
        return hostPages[i];
    }

    /** The lanes the pages are laid out by. */
    public LaneDescription lanes() {
        return lanes;
    }

    /** Whether it was published or released. Scheduler thread. */
    public boolean ended() {
        return ended;
    }

    @Override
    public String toString() {
        return "HostLease{" + lanes + ", owned=" + hostPages.length + (ended ? ", ended" : "") + '}';
    }
}
