package io.hicache.storage;

import io.hicache.core.metrics.MetricsSnapshot;

/**
 * Counters of an {@link L3Tier}: written by the cache's scheduler thread, readable from any thread (each value is
 * read on its own, not as one snapshot). Bandwidths are derived: bytes over the summed wall-clock time of the
 * store operations.
 */
public interface StorageTierMetrics {
    /** The value of {@code m}. */
    long get(StorageMetric m);

    /** Prefetches not yet ended (queue depth). */
    int prefetchesInFlight();

    /** Write batches not yet done (queue depth). */
    int writesInFlight();

    /**
     * Store reads per prefetch, GB/s: one sample per prefetch whose read landed bytes (its landed bytes over the
     * time from its submission to the tier seeing it done), on the buckets of the cache's own transfer histograms
     * (SGLang's {@code prefetch_bandwidth}). The same object for the tier's life; reads allocate nothing.
     */
    MetricsSnapshot.BandwidthView prefetchBandwidth();

    /**
     * Store writes per write batch, GB/s: one sample per batch that committed bytes (SGLang's
     * {@code backup_bandwidth}). The same object for the tier's life; reads allocate nothing.
     */
    MetricsSnapshot.BandwidthView backupBandwidth();

    /** Read bandwidth in bytes per wall-clock second, or 0 before any read. */
    default double prefetchBytesPerSecond() {
        long ns = get(StorageMetric.PREFETCH_IO_NS);
        return ns == 0 ? 0 : get(StorageMetric.PREFETCH_BYTES) * 1e9 / ns;
    }

    /** Write bandwidth in bytes per wall-clock second, or 0 before any write. */
    default double writeBytesPerSecond() {
        long ns = get(StorageMetric.WRITE_IO_NS);
        return ns == 0 ? 0 : get(StorageMetric.WRITE_BYTES) * 1e9 / ns;
    }
}
