package io.hicache.storage.tier;

import io.hicache.core.spi.TierBandwidth;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierMetrics;

import java.util.concurrent.atomic.AtomicLongArray;

/** The counters of a {@link StorageTier}: single writer (the scheduler thread, release stores), any reader. */
final class StorageTierCounters implements StorageTierMetrics {
    private static final StorageMetric[] VALUES = StorageMetric.values();
    private final AtomicLongArray values = new AtomicLongArray(VALUES.length);
    private volatile int prefetchesInFlight;
    private volatile int writesInFlight;
    private final TierBandwidth prefetchBandwidth = new TierBandwidth();
    private final TierBandwidth backupBandwidth = new TierBandwidth();

    void add(StorageMetric m, long delta) {
        if (delta != 0) {
            values.setRelease(m.ordinal(), values.getPlain(m.ordinal()) + delta);
        }
    }

    void increment(StorageMetric m) {
        add(m, 1);
    }

    /** A store read of {@code bytes} that took {@code nanos}: one prefetch bandwidth sample. */
    void recordRead(long bytes, long nanos) {
        add(StorageMetric.PREFETCH_BYTES, bytes);
        add(StorageMetric.PREFETCH_IO_NS, nanos);
        prefetchBandwidth.record(bytes, nanos);
    }

    /** A store write of {@code bytes} that took {@code nanos}: one backup bandwidth sample. */
    void recordWrite(long bytes, long nanos) {
        add(StorageMetric.WRITE_BYTES, bytes);
        add(StorageMetric.WRITE_IO_NS, nanos);
        backupBandwidth.record(bytes, nanos);
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
    public MetricsSnapshot.BandwidthView prefetchBandwidth() {
        return prefetchBandwidth.view();
    }

    @Override
    public MetricsSnapshot.BandwidthView backupBandwidth() {
        return backupBandwidth.view();
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
