package io.hicache.storage;

/** Counters of an {@link L3Tier} (and of the simulator's storage tiers); see {@link StorageTierMetrics}. */
public enum StorageMetric {
    /** Prefetches started (host pages leased, existence check submitted). */
    PREFETCH_STARTED,
    /** Pages prefetches asked for (leased). */
    PREFETCH_PAGES_REQUESTED,
    /** Pages published as host hits after the group agreed they landed. */
    PREFETCH_PAGES_PUBLISHED,
    /** Bytes read from storage into host pages (this rank). */
    PREFETCH_BYTES,
    /** Wall-clock nanoseconds of storage reads, submit to done, summed (bandwidth = bytes / this). */
    PREFETCH_IO_NS,
    /** Prefetches whose request was allowed to run before every page landed (best effort, timeout). */
    PREFETCH_TERMINATED_EARLY,
    /** Prefetches cancelled by the engine (request cancelled). */
    PREFETCH_CANCELLED,
    /** Prefetches not started: host share exhausted or no host room. */
    PREFETCH_NO_ROOM,
    /** Prefetches not started: the matched prefix ends at a node without a committed host copy. */
    PREFETCH_NOT_CONTIGUOUS,
    /** Prefetch reads that failed or were rejected by the store (pages). */
    PREFETCH_FAILED_PAGES,
    /** Published prefetches the tree no longer accepted (path changed meanwhile). */
    PREFETCH_PUBLISH_REFUSED,
    /**
     * Pages a prefetch's read found gone (missing or damaged, either part) though the existence check had found them:
     * deleted, expired or damaged in the store (this rank's lanes). Each is announced removed from L3 in KV events.
     */
    PREFETCH_PAGES_GONE,
    /** Pages submitted for writing (after dropping those known to be stored). */
    WRITE_PAGES_SUBMITTED,
    /** Pages the store committed. */
    WRITE_PAGES_STORED,
    /** Pages not written because storage already had them. */
    WRITE_PAGES_PRESENT,
    /** Bytes committed to storage. */
    WRITE_BYTES,
    /** Wall-clock nanoseconds of storage writes, submit to done, summed. */
    WRITE_IO_NS,
    /** Pages whose write failed or was rejected (backend unavailable, backing off, closed). */
    WRITE_FAILED_PAGES,
    /** Write-back pages dropped because the staging area was full. */
    WRITE_BACK_DROPPED_PAGES,
    /**
     * Pages a prefetch's read found damaged (either part: wrong checksum, truncated, bad trailer), counted within
     * {@link #PREFETCH_PAGES_GONE}; the next write of each puts it again, whatever the existence check says.
     */
    CORRUPT_PAGES,
    /** Pages not written because this tier remembered them stored (no existence check), within {@link #WRITE_PAGES_PRESENT}. */
    WRITE_PAGES_KNOWN,
    /** Prefetches given fewer pages than they asked for because the host share for prefetches was used up. */
    PREFETCH_CUT_BY_SHARE,
    /** Times the store reported a new epoch (restarted empty, flushed) and the remembered keys were dropped. */
    KNOWN_KEYS_RESETS
}
