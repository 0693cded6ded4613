package io.hicache.storage.tier;

import io.hicache.storage.PageKey;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Keys known to be committed in the store (written or prefetched by this tier), so a write does not ask for them
 * again, and keys a read found missing or damaged ("suspect"), so a write puts them again even where the store's
 * existence check still reports them.
 *
 * <p><b>Staleness.</b> The store may lose what it held (a restart without persistence, a flush, its own eviction):
 * a remembered key is trusted only for {@code maxAgeNs} after it was learnt (then it is asked again, as if never
 * known), and {@link #clear} drops every one when the store reports a new epoch. Bounded: past {@link #CAP} keys
 * the oldest is forgotten (then merely asked again). Scheduler thread.
 */
final class KnownKeys {
    static final int CAP = 1 << 20;

    private final Map<PageKey, Long> keys = new LinkedHashMap<>(1024, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PageKey, Long> eldest) {
            return size() > CAP;
        }
    };
    private final Map<PageKey, Boolean> suspect = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PageKey, Boolean> eldest) {
            return size() > CAP;
        }
    };
    private final LongSupplier clockNs;
    private final long maxAgeNs;

    private java.util.function.Consumer<PageKey> forgotten = k -> { };

    /** Keys trusted for {@code maxAgeNs} of {@code clockNs} after they were learnt. */
    KnownKeys(LongSupplier clockNs, long maxAgeNs) {
        this.clockNs = clockNs;
        this.maxAgeNs = maxAgeNs;
    }

    /** Who is told of each key {@link #forget} is called for (the tier's writer: see its {@code onGone}). */
    void whenForgotten(java.util.function.Consumer<PageKey> listener) {
        this.forgotten = listener;
    }

    /** {@code key} is committed in the store now (put, or read back whole): no longer suspect. */
    void add(PageKey key) {
        keys.remove(key); // re-inserted: the insertion order stays the order learnt (oldest first)
        keys.put(key, clockNs.getAsLong());
        suspect.remove(key);
    }

    /**
     * The store no longer has {@code key} whole (a read found it missing or damaged): the next write puts it again,
     * whatever the store's existence check says of it.
     */
    void forget(PageKey key) {
        keys.remove(key);
        suspect.put(key, Boolean.TRUE);
        forgotten.accept(key);
    }

    /** Whether {@code key} is known stored and was learnt less than the age bound ago. */
    boolean contains(PageKey key) {
        Long at = keys.get(key);
        if (at == null) {
            return false;
        }
        if (clockNs.getAsLong() - at >= maxAgeNs) {
            keys.remove(key); // asked again; an answer that finds it learns it anew
            return false;
        }
        return true;
    }

    /** Whether a read found {@code key} missing or damaged and no put or whole read has been seen since. */
    boolean isSuspect(PageKey key) {
        return !suspect.isEmpty() && suspect.containsKey(key);
    }

    /** The store reported a new epoch (restarted empty, flushed): nothing remembered holds any more. */
    void clear() {
        keys.clear();
    }

    /** Keys remembered (some may be past the age bound, not yet dropped). */
    int size() {
        return keys.size();
    }
}
