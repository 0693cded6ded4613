package io.hicache.radix;

/**
 * Told of every tier transition of a tree's pages: what KV events for fleet routers are made of (the
 * {@code hicache-events} module listens; docs/EVENTS.md). The one listener type of tier transitions: the tree calls
 * it ({@link RadixTree#tierObserver(TierListener)}), a cache hands the engine's to its tree
 * ({@code HiCache.tierListener}), and an attached L3 storage tier's transitions reach the same listener through the
 * cache. Pages that became matchable on the device, host values committed (in a CP group only after the group
 * agreed) or published from L3, pages written to or found gone from L3, pages about to leave a tier.
 *
 * <p>Called synchronously on the thread that makes the transition (the scheduler thread; an L3 tier reports from the
 * cache's {@code poll}), in the order the transitions happen. A host value is never reported while its backup is
 * pending, and no page before the page it extends on the same tier: device pages inserted or attached below a node
 * still loading are reported when the last load above them finishes, right after the loaded node and each node
 * before its children ({@link #onStored} with {@link #DEVICE}, parents first; while unreported, their leaving the
 * device is not reported either). A page is one radix page ({@link RadixTree#pageSize()} tokens).
 *
 * <p>Implementations must not call back into the cache or mutate the tree, must not block and should not
 * allocate: they run on the scheduler's hot path. They must not throw either: an exception propagates out of the
 * call that made the transition and may leave that call half done.
 */
public interface TierListener {
    /** The device (GPU) tier. */
    int DEVICE = 0;
    /** The host (CPU) tier. */
    int HOST = 1;
    /** The L3 storage tier. */
    int STORAGE = 2;

    /**
     * An insert made pages {@code [firstNewToken / pageSize, len / pageSize)} of {@code tokens[from, from + len)}
     * matchable on the device (new nodes, or host-only nodes that adopted device pages); the leading
     * {@code firstNewToken} tokens already were. Only called when at least one page is new.
     *
     * @param tokens        the inserted sequence, from the root (read it during the call only)
     * @param from          its start
     * @param len           whole pages of tokens inserted
     * @param firstNewToken tokens already on device, a multiple of the page size and below {@code len}
     * @param last          the node the insert ended on (attached; it ends at {@code from + len})
     */
    void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last);

    /**
     * Every page of {@code node} is now on {@code tier}: a load finished or device pages were attached
     * ({@link #DEVICE}; also each node inserted below a load while it ran, when the load finishes), a host value
     * committed or published ({@link #HOST}), every page written to L3 in one write ({@link #STORAGE}; see also
     * {@link #onPagesStored}). The node is attached.
     */
    void onStored(int tier, RadixNode node);

    /**
     * Every page of {@code node} is about to leave {@code tier} (eviction, invalidation after a failed load, an L3
     * delete); called while the node is still attached, just before it changes.
     */
    void onRemoving(int tier, RadixNode node);

    /**
     * Pages {@code [firstPage, firstPage + pages)} of {@code node} are now on {@code tier}: an L3 write that
     * committed part of a node (one store batch, or one CP rank's positions), so a node may be reported in parts.
     * The node is attached. The default does nothing.
     *
     * @param firstPage the first page, counted from the node's first page
     * @param pages     at least 1; {@code firstPage + pages <= node.pageCount()}
     */
    default void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
    }

    /**
     * Pages {@code [firstPage, firstPage + pages)} of the sequence {@code tokens[from, ...)} (pages counted from the
     * sequence's start, which is the tree's root) are now on {@code tier} ({@code stored}) or found gone from it: L3
     * transitions of pages no node holds (a write-back of evicted host pages; a page an L3 read found missing or
     * corrupt). The default does nothing.
     *
     * @param tokens the sequence, at least {@code (firstPage + pages) * pageSize} tokens from {@code from} (read it
     *               during the call only)
     */
    default void onSequencePages(int tier, boolean stored, int[] tokens, int from, int firstPage, int pages) {
    }

    /** Everything left every tier at once (a reset). The default does nothing. */
    default void onCleared() {
    }
}
