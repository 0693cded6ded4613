package io.hicache.storage;

/** The outcome of one key of a batch operation. */
public enum StoreStatus {
    /** Done: a put's object is committed (visible to every reader); a get's bytes are in the host page; removed. */
    OK,
    /** No committed object under the key (absent, or written but not committed). */
    MISS,
    /** An object is there but is not a valid page (wrong size, foreign, truncated, bad marker): a miss, reported. */
    CORRUPT,
    /** The backend failed for this key after its retries (I/O error, server unavailable). */
    FAILED,
    /** Not attempted: the store is closed, its queue is full, it is backing off after failures, or over capacity. */
    REJECTED
}
