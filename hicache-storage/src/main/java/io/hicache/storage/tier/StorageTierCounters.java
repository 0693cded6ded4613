package io.hicache.storage.tier;

import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierMetrics;

import java.util.concurrent.atomic.AtomicLongArray;

/** The counters of a {@link StorageTier}: single writer (the scheduler thread, release stores), any reader. */
final class StorageTierCounters implements StorageTierMetrics {
    private static final StorageMetric[] VALUES = StorageMetric.values();
    private final AtomicLongArray values = new AtomicLongArray(VALUES.length);
    private volatile int prefetchesInFlight;
    private volatile int writesInFlight;

    void add(StorageMetric m, long delta) {
        if (delta != 0) {
            values.setRelease(m.ordinal(), values.getPlain(m.ordinal()) + delta);
        }
    }

    void increment(StorageMetric m) {
        add(m, 1);
    }

    void queueDepths(int prefetches, int writes) {
        prefetchesInFlight = prefetches;
        writesInFlight = writes;
    }

    @Override
    public long get(StorageMetric m) {
        return values.getAcquire(m.ordinal());
    }

    @Override
    public int prefetchesInFlight() {
        return prefetchesInFlight;
    }

    @Override
    public int writesInFlight() {
        return writesInFlight;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("StorageTierMetrics{");
        for (StorageMetric m : VALUES) {
            sb.append(m.name().toLowerCase(java.util.Locale.ROOT)).append('=').append(get(m)).append(", ");
        }
        return sb.append("prefetches_in_flight=").append(prefetchesInFlight).append(", writes_in_flight=")
                .append(writesInFlight).append('}').toString();
    }
}
