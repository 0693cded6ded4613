package io.hicache.core.internal;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;

/**
 * The host pool's room, counted for every rank of the CP group: each rank keeps the pages every rank owns of each
 * reserved or committed range (owner lanes are a pure function of the positions, so every rank computes the same
 * counts), and a range fits when it fits on the rank with the least room. Every rank thus makes the same
 * reservation and eviction decisions without a collective, each rank's physical use of its own pool stays within
 * the capacity, and a node costs the group its pages, not its largest share on every rank. A range's counts are the
 * sums of its positions', so a split of a value (head and tail keep the sequence's length) changes nothing here and
 * each piece gives back its own part when it goes.
 *
 * <p>Publishes the most any rank uses as {@link Metric#HOST_PAGES_USED} on every change and the capacity as
 * {@link Metric#HOST_PAGES_CAPACITY}. Owned by the scheduler thread; allocation-free.
 */
final class HostBudget {
    private final OwnerLanes lanes;
    private final int cpSize;
    private final long capacityPages;
    private final HiCacheMetrics metrics;
    /** Pages each rank of the group holds or has reserved. */
    private final long[] used;
    private long mostUsed;

    HostBudget(OwnerLanes lanes, int cpSize, long capacityPages, HiCacheMetrics metrics) {
        this.lanes = lanes;
        this.cpSize = cpSize;
        this.capacityPages = capacityPages;
        this.metrics = metrics;
        this.used = new long[cpSize];
        metrics.set(Metric.HOST_PAGES_CAPACITY, capacityPages);
    }

    /**
     * Pages beyond the capacity that pages {@code [startPage, startPage + pages)} of a sequence of
     * {@code totalPages} would use on the rank they crowd most (0 or less when they fit on every rank).
     */
    long overBy(int startPage, int pages, int totalPages) {
        long worst = Long.MIN_VALUE;
        for (int r = 0; r < cpSize; r++) {
            worst = Math.max(worst, used[r] + owned(r, startPage, pages, totalPages));
        }
        return worst - capacityPages;
    }

    void take(int startPage, int pages, int totalPages) {
        change(startPage, pages, totalPages, 1);
    }

    void give(int startPage, int pages, int totalPages) {
        change(startPage, pages, totalPages, -1);
    }

    void take(LaneDescription lane) {
        take(lane.startPage(), lane.pageCount(), lane.totalPages());
    }

    void give(LaneDescription lane) {
        give(lane.startPage(), lane.pageCount(), lane.totalPages());
    }

    private int owned(int r, int startPage, int pages, int totalPages) {
        return cpSize == 1 ? pages : lanes.ownedCount(r, startPage, pages, totalPages, cpSize);
    }

    private void change(int startPage, int pages, int totalPages, long sign) {
        long most = 0;
        for (int r = 0; r < cpSize; r++) {
            used[r] += sign * owned(r, startPage, pages, totalPages);
            most = Math.max(most, used[r]);
        }
        mostUsed = most;
        metrics.set(Metric.HOST_PAGES_USED, most);
    }

    /** The most pages any rank of the group holds or has reserved. */
    long usedPages() {
        return mostUsed;
    }

    long capacityPages() {
        return capacityPages;
    }
}
