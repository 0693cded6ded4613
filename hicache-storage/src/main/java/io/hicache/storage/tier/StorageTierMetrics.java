package io.hicache.storage.tier;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counters of a {@link StorageTier}. Written by the scheduler thread (single writer, release stores), readable
 * from any thread. Bandwidths are derived: bytes over the summed wall-clock time of the operations.
 */
public final class StorageTierMetrics {
    private final AtomicLongArray values = new AtomicLongArray(StorageMetric.VALUES.length);
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

    /** The value of {@code m}. */
    public long get(StorageMetric m) {
        return values.getAcquire(m.ordinal());
    }

    /** Prefetches not yet ended (queue depth). */
    public int prefetchesInFlight() {
        return prefetchesInFlight;
    }

    /** Write batches not yet done (queue depth). */
    public int writesInFlight() {
        return writesInFlight;
    }

    /** Read bandwidth in bytes per wall-clock second, or 0 before any read. */
    public double prefetchBytesPerSecond() {
        long ns = get(StorageMetric.PREFETCH_IO_NS);
        return ns == 0 ? 0 : get(StorageMetric.PREFETCH_BYTES) * 1e9 / ns;
    }

    /** Write bandwidth in bytes per wall-clock second, or 0 before any write. */
    public double writeBytesPerSecond() {
        long ns = get(StorageMetric.WRITE_IO_NS);
        return ns == 0 ? 0 : get(StorageMetric.WRITE_BYTES) * 1e9 / ns;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("StorageTierMetrics{");
        for (StorageMetric m : StorageMetric.VALUES) {
            sb.append(m.name().toLowerCase(java.util.Locale.ROOT)).append('=').append(get(m)).append(", ");
        }
        return sb.append("prefetches_in_flight=").append(prefetchesInFlight).append(", writes_in_flight=")
                .append(writesInFlight).append('}').toString();
    }
}
