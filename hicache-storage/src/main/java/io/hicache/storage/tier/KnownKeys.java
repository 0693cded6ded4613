package io.hicache.storage.tier;

import io.hicache.storage.PageKey;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Keys known to be committed in the store (written or prefetched by this tier), so a write does not ask for them
 * again. Bounded: past {@link #CAP} keys the oldest is forgotten (then merely asked again). Scheduler thread.
 */
final class KnownKeys {
    static final int CAP = 1 << 20;

    private final Map<PageKey, Boolean> keys = new LinkedHashMap<>(1024, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PageKey, Boolean> eldest) {
            return size() > CAP;
        }
    };

    private java.util.function.Consumer<PageKey> forgotten = k -> { };

    /** Who is told of each key {@link #forget} is called for (the tier's writer: see its {@code onGone}). */
    void whenForgotten(java.util.function.Consumer<PageKey> listener) {
        this.forgotten = listener;
    }

    void add(PageKey key) {
        keys.put(key, Boolean.TRUE);
    }

    /** The store no longer has {@code key} (a read found it missing or corrupt): the next write puts it again. */
    void forget(PageKey key) {
        keys.remove(key);
        forgotten.accept(key);
    }

    boolean contains(PageKey key) {
        return keys.containsKey(key);
    }
}
