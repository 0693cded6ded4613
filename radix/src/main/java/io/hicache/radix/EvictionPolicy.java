package io.hicache.radix;

/**
 * Order in which a tier's evictable leaves are chosen. Names follow SGLang's {@code radix_cache}
 * eviction strategies.
 *
 * <p>Immutable; thread-safe.
 */
public enum EvictionPolicy {
    /** Least recently used first. O(1) per eviction (intrusive list). Default. */
    LRU,
    /** Least frequently used first (hit count, then least recent). O(log n). */
    LFU,
    /** Oldest created node first. O(log n). */
    FIFO,
    /** Most recently used first. O(log n). */
    MRU,
    /** Newest created node first. O(log n). */
    FILO,
    /** Lowest {@link RadixNode#priority()} first, then least recent. O(log n). */
    PRIORITY,
    /**
     * Segmented LRU: nodes with fewer than {@link #SLRU_PROTECTED_HITS} hits (probation) go before
     * nodes with at least that many (protected); LRU within a segment. O(log n).
     */
    SLRU;

    /** Hit count from which an SLRU node is in the protected segment. */
    public static final int SLRU_PROTECTED_HITS = 2;
}
