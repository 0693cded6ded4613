package io.hicache.events;

import io.hicache.core.HiCache;

/**
 * For benchmarks: records a cache's KV events into a ring exactly as an attached publisher's collector does, with
 * nobody draining it (a full ring overwrites its oldest records), so a row can show the scheduler thread's
 * collection cost apart from the publisher thread's. Call on the cache's scheduler thread.
 */
public final class CollectOnly {
    private CollectOnly() {
    }

    /** Sets a collector (a queue of {@code capacity} page records, no extra key) as {@code cache}'s tier listener. */
    public static void attach(HiCache cache, int capacity) {
        EventRing ring = new EventRing(capacity, cache.tree().pageSize(), false);
        cache.tierListener(new TierEventCollector(ring, 0, 0));
    }
}
