package io.hicache.storage.tier;

import io.hicache.core.spi.StoragePort;
import io.hicache.storage.HostPage;

/**
 * The {@link HostPage} views of each host page id: its target KV in the cache's host pool and, when the cache
 * has draft/MTP layers, its draft KV in the draft host pool (which shares the page ids 1:1), as the cache's
 * {@link StoragePort} gives them. Views are made on first use and kept (immutable slices of the pinned pools).
 * Scheduler thread.
 */
final class HostViews {
    private final StoragePort port;
    private final boolean draft;
    private final long pageBytes;
    private final long draftPageBytes;
    private final HostPage[] views;
    private final HostPage[] draftViews;

    HostViews(StoragePort port) {
        this.port = port;
        this.draft = port.hasDraftPool();
        this.pageBytes = port.hostPageBytes(false);
        this.draftPageBytes = draft ? port.hostPageBytes(true) : 0;
        this.views = new HostPage[port.hostPageCount()];
        this.draftViews = draft ? new HostPage[port.hostPageCount()] : null;
    }

    /** Whether the cache has draft/MTP layers: every page the tier stores or restores then has a draft part. */
    boolean hasDraft() {
        return draft;
    }

    /** Bytes of one page's target KV, all layers and buffers. */
    long pageBytes() {
        return pageBytes;
    }

    /** Bytes of one page's draft KV (0 without draft layers). */
    long draftPageBytes() {
        return draftPageBytes;
    }

    /** The target view of host page {@code hostPage}. */
    HostPage of(int hostPage) {
        HostPage v = views[hostPage];
        if (v == null) {
            v = HostPage.of(port.hostPageSegments(false, hostPage));
            views[hostPage] = v;
        }
        return v;
    }

    /** The draft view of host page {@code hostPage}; only when {@link #hasDraft()}. */
    HostPage draft(int hostPage) {
        HostPage v = draftViews[hostPage];
        if (v == null) {
            v = HostPage.of(port.hostPageSegments(true, hostPage));
            draftViews[hostPage] = v;
        }
        return v;
    }
}
