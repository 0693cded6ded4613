package io.hicache.core.spi;

import io.hicache.core.internal.metrics.BandwidthHistogram;
import io.hicache.core.metrics.MetricsSnapshot;

/**
 * A transfer-bandwidth histogram for a lower tier's store reads and writes: one sample per store operation (its
 * bytes over its time), on the same GB/s buckets as the cache's own backup and load histograms, so that a dashboard
 * lines all of them up. No allocation after construction.
 *
 * <p><b>Threads.</b> {@link #record} has one writer, the cache's scheduler thread (where the tier learns that an
 * operation ended); {@link #view()} and its reads are any thread's.
 */
public final class TierBandwidth {
    private final BandwidthHistogram histogram = new BandwidthHistogram();

    /**
     * Records an operation that moved {@code bytes} in {@code nanos}; nothing when either is not positive (its
     * bandwidth is undefined). Scheduler thread.
     *
     * @return whether a sample was recorded
     */
    public boolean record(long bytes, long nanos) {
        return histogram.record(bytes, nanos);
    }

    /** The read-only view; always the same object. Any thread. */
    public MetricsSnapshot.BandwidthView view() {
        return histogram.view();
    }
}
