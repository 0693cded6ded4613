package io.hicache.core.internal;

import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.spi.StoragePort;
import io.hicache.radix.spi.HostValue;

import java.util.Arrays;

/**
 * The committed host copy of a node on one rank: the host page ids of the positions this rank owns, in
 * ascending offset order, and the {@link LaneDescription} they were written with. Data and lane metadata
 * live in one immutable value, so they are published together and cannot drift apart.
 *
 * <p>Immutable but for one flag, {@link #prefetched()}; created on the scheduler thread at reservation (so a commit
 * allocates nothing), by a storage prefetch's publish, and by {@link #head}/{@link #tail} when the tree splits a node.
 * Scheduler thread only.
 */
public final class HostPages implements HostValue, StoragePort.HostCopy {
    private final int[] hostPages;
    private final LaneDescription lanes;
    private final boolean draft;
    /** Published by a storage prefetch and not loaded to the device since (see {@link #prefetched()}). */
    private boolean prefetched;

    HostPages(int[] hostPages, LaneDescription lanes, boolean draft, boolean prefetched) {
        this(hostPages, lanes, draft);
        this.prefetched = prefetched;
    }

    HostPages(int[] hostPages, LaneDescription lanes, boolean draft) {
        if (hostPages.length != lanes.ownedCount()) {
            throw new IllegalArgumentException(hostPages.length + " host pages for " + lanes.ownedCount()
                + " owned positions of " + lanes);
        }
        this.hostPages = hostPages;
        this.lanes = lanes;
        this.draft = draft;
    }

    /** True when the draft/MTP KV of these pages was backed up too (same host page ids, draft pool). */
    @Override
    public boolean hasDraft() {
        return draft;
    }

    @Override
    public int pageCount() {
        return lanes.pageCount();
    }

    /**
     * True while these pages are a storage prefetch's, published into host memory from the L3 tier (which counts
     * them as served from storage) and not loaded to the device since: their first load counts as served from
     * storage, not from host memory ({@link io.hicache.core.metrics.Metric#HOST_HIT_TOKENS}).
     */
    boolean prefetched() {
        return prefetched;
    }

    /** A load read these pages: later loads count as served from host memory. */
    void clearPrefetched() {
        prefetched = false;
    }

    /** The lanes these pages were written with. */
    public LaneDescription lanes() {
        return lanes;
    }

    /** Host pages held on this rank (its owned positions). */
    public int ownedPageCount() {
        return hostPages.length;
    }

    @Override
    public int ownedOffsets(int[] out) {
        return lanes.ownedOffsets(out);
    }

    /** Host page id of owned position {@code i} (ascending node offset). */
    @Override
    public int hostPage(int i) {
        return hostPages[i];
    }

    /** Copies the owned host page ids into {@code dst} at {@code dstOff}. */
    public void copyHostPages(int[] dst, int dstOff) {
        System.arraycopy(hostPages, 0, dst, dstOff, hostPages.length);
    }

    @Override
    public HostValue head(int pages) {
        checkCut(pages);
        int owned = lanes.ownedCountBefore(pages);
        return new HostPages(Arrays.copyOfRange(hostPages, 0, owned), lanes.slice(0, pages), draft, prefetched);
    }

    @Override
    public HostValue tail(int pages) {
        checkCut(pages);
        int owned = lanes.ownedCountBefore(pages);
        return new HostPages(Arrays.copyOfRange(hostPages, owned, hostPages.length),
            lanes.slice(pages, lanes.pageCount() - pages), draft, prefetched);
    }

    private void checkCut(int pages) {
        if (pages <= 0 || pages >= lanes.pageCount()) {
            throw new IllegalArgumentException("cut at " + pages + " outside (0, " + lanes.pageCount() + ")");
        }
    }

    @Override
    public String toString() {
        return "HostPages{pages=" + Arrays.toString(hostPages) + ", lanes=" + lanes + ", draft=" + draft + '}';
    }
}
