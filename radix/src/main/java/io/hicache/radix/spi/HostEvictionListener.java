package io.hicache.radix.spi;

import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

/**
 * Receives host evictions from {@link RadixTree#evictHost(int, HostEvictionListener)}.
 * Called on the scheduler thread, synchronously, during the eviction; must not mutate the tree.
 */
public interface HostEvictionListener {

    /**
     * @param node an evictable host leaf chosen by the policy
     * @return false to skip it in this eviction
     */
    default boolean mayEvictHost(RadixNode node) {
        return true;
    }

    /**
     * The host-only leaf is being evicted: the caller frees its host pages. The tree removes the node when this
     * returns; until then it is still attached, so its path from the root (its parent chain) can be read.
     *
     * @param node the evicted node, still attached and with its host value
     * @param value its committed host value
     */
    void onHostEvicted(RadixNode node, HostValue value);
}
