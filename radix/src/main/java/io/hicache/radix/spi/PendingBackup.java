package io.hicache.radix.spi;

import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

/**
 * Handle of a host backup in flight for a node (implemented by core). While a node carries a
 * pending backup it is a device hit only: it is not a host hit, not host-evictable and not
 * device-evictable. Unlike SGLang, which marks a node backed up when the copy is issued, the host
 * value becomes visible only at {@link RadixTree#commitHost}.
 *
 * <p>Called on the scheduler thread that owns the tree.
 */
public interface PendingBackup {

    /**
     * Called when a pending node is split. The tree puts this same handle on both fragments; they
     * are contiguous, {@code prefix} first, and together cover the pages of the node before the
     * split. The backup must later commit (or abort) both fragments, each with its own part of the
     * host value.
     *
     * @param prefix the new node holding the leading pages (parent of {@code suffix})
     * @param suffix the original node, now holding the trailing pages
     */
    void onSplit(RadixNode prefix, RadixNode suffix);

    /**
     * Called when a failed load invalidated {@code node}, a fragment carrying this backup, and removed it
     * from the tree ({@link RadixTree#failLoad}): the node's KV was computed over bytes the load never
     * delivered, so the backup must never be published. A withdrawal ({@link RadixTree#withdraw}: KV that was
     * never computed) calls it the same way. Its pages then go to the failing load's sink
     * while {@link RadixNode#pending()} still names this backup. The tree no longer counts the node
     * pending; later {@link RadixTree#abortPending} or {@link RadixTree#unlock} on it are the caller's to
     * skip ({@link RadixNode#isInvalidated()}). Default: nothing (a backup that never sits below a load).
     */
    default void onInvalidated(RadixNode node) {
    }
}
