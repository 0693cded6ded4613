package io.hicache.storage;

/**
 * A snapshot of a store's counters since it was opened. Values are read one by one, so a snapshot taken
 * while operations run may be off by the operations in flight.
 *
 * @param putPages      pages committed by put
 * @param putBytes      bytes of those pages
 * @param getHitPages   pages read by get
 * @param getBytes      bytes of those pages
 * @param missPages     keys answered MISS by get
 * @param corruptPages  objects found invalid (wrong size, foreign, truncated, bad marker), answered as misses
 * @param failedPages   keys that ended FAILED (after retries)
 * @param rejectedPages keys REJECTED (closed, queue full, backing off, over capacity)
 * @param retries       batch attempts retried after a backend error
 * @param errors        backend errors seen (each distinct one is logged once, with a count)
 * @param evictedPages  pages evicted to respect a capacity limit
 * @param storedBytes   bytes the backend holds now, where it keeps count (else -1)
 * @param queuedOps     operations waiting for an I/O thread (the queue depth)
 */
public record StoreStats(long putPages, long putBytes, long getHitPages, long getBytes, long missPages,
                         long corruptPages, long failedPages, long rejectedPages, long retries, long errors,
                         long evictedPages, long storedBytes, long queuedOps) {
}
