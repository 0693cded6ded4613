package io.hicache.sim.report;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the storage tier (L3) did in one replay; flattened into the result's JSON with these names:
 * {@code storage} (the backend, credentials redacted), {@code storage_hit_tokens} (simulated tokens of host hits that
 * a prefetch from storage brought in for the request), {@code storage_write_pages}, {@code storage_write_bytes} (true
 * bytes, like {@code d2h_bytes}), {@code storage_write_failed_pages}, {@code storage_io_write_bytes} and
 * {@code storage_io_read_bytes} (bytes the backend really moved), {@code storage_write_bytes_per_s} and
 * {@code prefetch_bytes_per_s} (wall clock, real I/O), {@code prefetch_started}, {@code prefetch_pages},
 * {@code prefetch_pages_published}, {@code prefetch_bytes} (true bytes), {@code prefetch_failed_pages},
 * {@code prefetch_no_room}, {@code prefetch_wait_seconds} (simulated time requests waited for prefetches),
 * {@code prefetch_queue_peak}, {@code storage_write_queue_peak}. Immutable.
 */
public record StorageResult(String backend, long storageHitTokens, long writePages, long writeBytes,
                            long writeFailedPages, long ioWriteBytes, long ioReadBytes, double writeBytesPerSecond,
                            double prefetchBytesPerSecond, long prefetchStarted, long prefetchPages,
                            long prefetchPagesPublished, long prefetchBytes, long prefetchFailedPages,
                            long prefetchNoRoom, double prefetchWaitSeconds, int prefetchQueuePeak,
                            int writeQueuePeak) {

    /** The fleet's figures: counts summed, bandwidths and peaks the largest of the instances. */
    public static StorageResult sum(java.util.List<StorageResult> parts) {
        StorageResult a = parts.getFirst();
        for (int i = 1; i < parts.size(); i++) {
            StorageResult b = parts.get(i);
            a = new StorageResult(a.backend, a.storageHitTokens + b.storageHitTokens, a.writePages + b.writePages,
                    a.writeBytes + b.writeBytes, a.writeFailedPages + b.writeFailedPages, a.ioWriteBytes,
                    a.ioReadBytes, Math.max(a.writeBytesPerSecond, b.writeBytesPerSecond),
                    Math.max(a.prefetchBytesPerSecond, b.prefetchBytesPerSecond), a.prefetchStarted + b.prefetchStarted,
                    a.prefetchPages + b.prefetchPages, a.prefetchPagesPublished + b.prefetchPagesPublished,
                    a.prefetchBytes + b.prefetchBytes, a.prefetchFailedPages + b.prefetchFailedPages,
                    a.prefetchNoRoom + b.prefetchNoRoom, a.prefetchWaitSeconds + b.prefetchWaitSeconds,
                    Math.max(a.prefetchQueuePeak, b.prefetchQueuePeak), Math.max(a.writeQueuePeak, b.writeQueuePeak));
        }
        return a;
    }

    /** The JSON fields, in order. */
    public Map<String, Object> fields() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("storage", backend);
        m.put("storage_hit_tokens", storageHitTokens);
        m.put("storage_write_pages", writePages);
        m.put("storage_write_bytes", writeBytes);
        m.put("storage_write_failed_pages", writeFailedPages);
        m.put("storage_io_write_bytes", ioWriteBytes);
        m.put("storage_io_read_bytes", ioReadBytes);
        m.put("storage_write_bytes_per_s", Math.round(writeBytesPerSecond));
        m.put("prefetch_bytes_per_s", Math.round(prefetchBytesPerSecond));
        m.put("prefetch_started", prefetchStarted);
        m.put("prefetch_pages", prefetchPages);
        m.put("prefetch_pages_published", prefetchPagesPublished);
        m.put("prefetch_bytes", prefetchBytes);
        m.put("prefetch_failed_pages", prefetchFailedPages);
        m.put("prefetch_no_room", prefetchNoRoom);
        m.put("prefetch_wait_seconds", prefetchWaitSeconds);
        m.put("prefetch_queue_peak", prefetchQueuePeak);
        m.put("storage_write_queue_peak", writeQueuePeak);
        return m;
    }
}
