package io.hicache.core.internal;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;

/**
 * The host pool's room in group budget units. A node costs, on every rank, the largest number of its positions any
 * rank of the CP group owns, so every rank makes the same reservation and eviction decisions without a collective;
 * the budget bounds every rank's physical use of its own pool.
 *
 * <p>Publishes its level as {@link Metric#HOST_PAGES_USED} on every change and its capacity as
 * {@link Metric#HOST_PAGES_CAPACITY}. Owned by the scheduler thread; allocation-free.
 */
final class HostBudget {
    private final OwnerLanes lanes;
    private final int cpSize;
    private final long capacityPages;
    private final HiCacheMetrics metrics;
    private long usedPages;

    HostBudget(OwnerLanes lanes, int cpSize, long capacityPages, HiCacheMetrics metrics) {
        this.lanes = lanes;
        this.cpSize = cpSize;
        this.capacityPages = capacityPages;
        this.metrics = metrics;
        metrics.set(Metric.HOST_PAGES_CAPACITY, capacityPages);
    }

    /** The cost of pages {@code [startPage, startPage + pages)} of a sequence of {@code totalPages}. */
    int costOf(int startPage, int pages, int totalPages) {
        if (cpSize == 1) {
            return pages;
        }
        int max = 0;
        for (int r = 0; r < cpSize; r++) {
            max = Math.max(max, lanes.ownedCount(r, startPage, pages, totalPages, cpSize));
        }
        return max;
    }

    /** The cost of the pages a lane description covers. */
    int costOf(LaneDescription lane) {
        return costOf(lane.startPage(), lane.pageCount(), lane.totalPages());
    }

    /** Pages beyond the capacity that a reservation of {@code cost} would use (0 or less when it fits). */
    long overBy(int cost) {
        return usedPages + cost - capacityPages;
    }

    void take(long cost) {
        changeUsed(cost);
    }

    void give(long cost) {
        changeUsed(-cost);
    }

    /**
     * A committed host value split by the tree: the halves may each cost more than their share under CP lanes; the
     * difference is accounted here.
     */
    void onSplit(LaneDescription whole, LaneDescription head, LaneDescription tail) {
        changeUsed(costOf(head) + costOf(tail) - costOf(whole));
    }

    private void changeUsed(long delta) {
        usedPages += delta;
        metrics.set(Metric.HOST_PAGES_USED, usedPages);
    }

    long usedPages() {
        return usedPages;
    }

    long capacityPages() {
        return capacityPages;
    }
}
