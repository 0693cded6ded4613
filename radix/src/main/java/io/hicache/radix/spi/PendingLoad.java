package io.hicache.radix.spi;

import io.hicache.radix.RadixTree;

/**
 * Handle of a load (host → device) in flight for a node (implemented by core). While a node carries a pending
 * load ({@link RadixTree#beginLoad}) it holds the load's device pages and is matched as a device prefix, but its
 * bytes are not committed: {@link io.hicache.radix.MatchResult#readyPageCount()} stops before it, it is neither
 * device- nor host-evictable, and nothing below it may be backed up until {@link RadixTree#finishLoad}. A failed
 * load ends with {@link RadixTree#failLoad}, which invalidates the subtree.
 *
 * <p>A split puts the same handle on both fragments. Called on the scheduler thread that owns the tree; the tree
 * calls no method of it, it only compares identities.
 */
public interface PendingLoad {
}
