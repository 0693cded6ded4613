package io.hicache.radix.spi;

import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

/**
 * Receives device evictions from {@link RadixTree#evictDevice(int, DeviceEvictionListener)}.
 * Called on the scheduler thread, synchronously, during the eviction; must not mutate the tree.
 */
public interface DeviceEvictionListener {

    /**
     * @param node an evictable device leaf chosen by the policy
     * @return false to skip it in this eviction (e.g. write_back backs it up first)
     */
    default boolean mayEvict(RadixNode node) {
        return true;
    }

    /**
     * The node's device pages are no longer referenced by the tree; the caller frees them.
     * {@code pages} is only valid during the call.
     *
     * @param node the node, now host-only if it has a committed host value, otherwise removed
     * @param pages array holding the page indices
     * @param offset index of the first page in {@code pages}
     * @param count number of pages
     */
    void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count);
}
