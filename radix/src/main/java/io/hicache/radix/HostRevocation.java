package io.hicache.radix;

import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;

/**
 * {@link RadixTree#revokeHost}: withdrawing a committed host value outside eviction order (the CP group found that
 * another rank never committed it). Static helper of the tree, like {@link LoadTransitions}; single-threaded like the
 * tree.
 */
final class HostRevocation {
    private HostRevocation() {
    }

    /** See {@link RadixTree#revokeHost}. */
    static boolean revokeHost(RadixTree t, RadixNode node, HostEvictionListener listener) {
        t.checkNode(node, false);
        if (listener == null) {
            throw new IllegalArgumentException("listener must not be null");
        }
        if (node.hostValue == null) {
            throw new IllegalArgumentException("revokeHost of " + node + ": it has no host value");
        }
        if (node.pending != null || node.loading != null || node.hostRef > 0) {
            return false;
        }
        if (node.childVals != null) {
            for (RadixNode slot : node.childVals) {
                for (RadixNode c = slot; c != null; c = c.hashNext) {
                    if (c.isBackedUp()) {
                        return false;
                    }
                }
            }
        }
        HostValue value = node.hostValue;
        int count = node.pageCount;
        if (node.devPages != null) {
            if (t.observer != null) {
                t.observer.onRemoving(TierListener.HOST, node);
            }
            listener.onHostEvicted(node, value);
            node.hostValue = null;
            t.hostPagesCommitted -= count;
            t.refresh(node);
            return true;
        }
        if (node.childCount > 0 || node.lockRef > 0) {
            return false;
        }
        RadixNode parent = node.parent;
        if (t.observer != null) {
            t.observer.onRemoving(TierListener.HOST, node);
        }
        t.hostPagesCommitted -= count;
        listener.onHostEvicted(node, value);
        t.removeNode(node);
        t.refresh(parent);
        return true;
    }
}
