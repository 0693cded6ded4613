package io.hicache.storage;

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
