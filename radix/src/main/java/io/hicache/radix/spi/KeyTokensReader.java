package io.hicache.radix.spi;

/**
 * Where a node keeps its key tokens, handed out by {@link io.hicache.radix.RadixNode#readKeyTokens} to a reader
 * that reads them later on another thread: the KV-event publisher copies and hashes a node's pages on its own
 * thread instead of the scheduler copying them.
 *
 * <p>The array is shared with the node's split fragments; the range {@code [offset, offset + count)} is written
 * once, when the array is made, and never again, so it may be read after the node was split or evicted without a
 * lock (the reader's hand-off to its own thread must publish the reference, as a queue does). Read-only: a reader
 * must not write the array (the tree's keys are in it).
 */
@FunctionalInterface
public interface KeyTokensReader {
    /**
     * Called once by {@link io.hicache.radix.RadixNode#readKeyTokens}, on the caller's (scheduler) thread.
     *
     * @param tokens the node's token storage (do not write)
     * @param offset the node's first token in {@code tokens}
     * @param count  the node's token count ({@code pageCount() * pageSize})
     */
    void read(int[] tokens, int offset, int count);
}
