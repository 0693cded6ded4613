package io.hicache.radix;

/**
 * Eviction order of one tier (device or host) of a {@link RadixTree}. Package-private; owned by
 * the tree's thread.
 *
 * <p>Two shapes: {@link LruQueue} keeps every resident node of the tier in access order and the
 * tree skips ineligible ones while scanning; {@link HeapQueue} keeps exactly the eligible leaves in
 * an indexed binary heap ordered by the policy.
 */
abstract class TierQueue {

    final boolean device;

    TierQueue(boolean device) {
        this.device = device;
    }

    static TierQueue create(EvictionPolicy policy, boolean device, RadixTree tree) {
        return policy == EvictionPolicy.LRU ? new LruQueue(device) : new HeapQueue(policy, device, tree);
    }

    /** The node became resident in this tier; {@code fixAncestors} moves resident ancestors behind it. */
    abstract void onResident(RadixNode n, boolean fixAncestors);

    /** The node left this tier (or the tree). */
    abstract void onNonResident(RadixNode n);

    /** The node's ordering key (tick, hits, priority) changed. */
    abstract void touch(RadixNode n);

    /** A key other than recency (priority) changed; the LRU list ignores it. */
    abstract void rekey(RadixNode n);

    /** A split created {@code prefix} just above {@code suffix}, with the same ordering key. */
    abstract void onSplit(RadixNode suffix, RadixNode prefix);

    /** Eligibility of the node (an evictable leaf of this tier) may have changed. */
    abstract void refresh(RadixNode n, boolean eligible);

    abstract void beginScan();

    /** @return the next candidate in eviction order, or null; may be ineligible for list queues */
    abstract RadixNode nextCandidate();

    abstract void endScan();

    /** Verifies internal structure against the tree; throws IllegalStateException. */
    abstract void check(RadixTree tree, int expectedResident);
}
