package io.hicache.core.internal;

import io.hicache.radix.RadixNode;

/**
 * Told when committed host pages are about to leave the host tier (a storage tier's {@code write_back}
 * reads them here). Called on the scheduler thread, synchronously, while the pages still hold their bytes;
 * they are freed (and may be reused) as soon as the call returns. Must not call back into the controller.
 */
@FunctionalInterface
public interface HostTierObserver {
    /**
     * @param node  the host-only node being evicted, still attached (its path from the root can be read); the tree
     *              removes it when this returns
     * @param pages its committed host value on this rank
     */
    void onHostEvicting(RadixNode node, HostPages pages);
}
