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
     * The host-only leaf was removed from the tree; the caller frees its host pages.
     *
     * @param node the removed node (detached: {@link RadixNode#isAttached()} is false)
     * @param value its committed host value
     */
    void onHostEvicted(RadixNode node, HostValue value);
}
