package io.hicache.storage.tier;

import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.storage.HostPage;

/**
 * The {@link HostPage} views of each host page id: its target KV in the controller's host pool and, when the cache
 * has draft/MTP layers, its draft KV in the draft host pool (which shares the page ids 1:1). Views are made on
 * first use and kept (immutable slices of the pinned pools). Scheduler thread.
 */
final class HostViews {
    private final HostKvPool pool;
    private final HostKvPool draftPool;
    private final HostPage[] views;
    private final HostPage[] draftViews;

    /** @param draftPool the draft host pool, or null when the cache has no draft layers */
    HostViews(HostKvPool pool, HostKvPool draftPool) {
        this.pool = pool;
        this.draftPool = draftPool;
        this.views = new HostPage[pool.pageCount()];
        this.draftViews = draftPool == null ? null : new HostPage[draftPool.pageCount()];
    }

    /** Whether the cache has draft/MTP layers: every page the tier stores or restores then has a draft part. */
    boolean hasDraft() {
        return draftPool != null;
    }

    /** Bytes of one page's target KV, all layers and buffers. */
    long pageBytes() {
        return pool.bytesPerPageAllLayers();
    }

    /** Bytes of one page's draft KV (0 without draft layers). */
    long draftPageBytes() {
        return draftPool == null ? 0 : draftPool.bytesPerPageAllLayers();
    }

    /** The target view of host page {@code hostPage}. */
    HostPage of(int hostPage) {
        HostPage v = views[hostPage];
        if (v == null) {
            v = HostPage.of(pool, hostPage);
            views[hostPage] = v;
        }
        return v;
    }

    /** The draft view of host page {@code hostPage}; only when {@link #hasDraft()}. */
    HostPage draft(int hostPage) {
        HostPage v = draftViews[hostPage];
        if (v == null) {
            v = HostPage.of(draftPool, hostPage);
            draftViews[hostPage] = v;
        }
        return v;
    }
}
