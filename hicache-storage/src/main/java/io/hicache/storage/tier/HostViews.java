package io.hicache.storage.tier;

import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.storage.HostPage;

/**
 * The {@link HostPage} view of each host page id of the controller's host pool, made on first use and kept (the
 * views are immutable slices of the pinned pool). Scheduler thread.
 */
final class HostViews {
    private final HostKvPool pool;
    private final HostPage[] views;

    HostViews(HostKvPool pool) {
        this.pool = pool;
        this.views = new HostPage[pool.pageCount()];
    }

    /** Bytes of one page, all layers and buffers. */
    long pageBytes() {
        return pool.bytesPerPageAllLayers();
    }

    /** The view of host page {@code hostPage}. */
    HostPage of(int hostPage) {
        HostPage v = views[hostPage];
        if (v == null) {
            v = HostPage.of(pool, hostPage);
            views[hostPage] = v;
        }
        return v;
    }
}
