package io.hicache.radix.spi;

import io.hicache.radix.RadixNode;

/**
 * Told of every tier transition of the tree's pages (the KV-events port): pages that became matchable on the
 * device, host values committed or published, and pages about to leave a tier. Set with
 * {@code RadixTree.tierObserver}; a lower tier (L3) reports its own transitions through the same interface.
 *
 * <p>Called on the thread that changes the tree (the scheduler thread), synchronously, in the order the
 * transitions happen. A host value is reported only when it becomes visible to host matching (after the commit,
 * which in a CP group follows the group's agreement), never while pending. A page is never reported on a tier
 * before the page it extends: device pages inserted or attached below a node still loading are reported when the
 * last load above them finishes, right after the loaded node and each node before its children (while unreported,
 * their leaving the device is not reported either). Implementations must not mutate the
 * tree, must not block and should not allocate: they run on the scheduler's hot path.
 */
public interface TierObserver {
    /** The device (GPU) tier. */
    int DEVICE = 0;
    /** The host (CPU) tier. */
    int HOST = 1;
    /** A lower storage tier (L3). */
    int STORAGE = 2;

    /**
     * An insert made pages {@code [firstNewToken / pageSize, len / pageSize)} of {@code tokens[from, from + len)}
     * matchable on the device (new nodes, or host-only nodes that adopted device pages); the leading
     * {@code firstNewToken} tokens already were. Only called when at least one page is new.
     *
     * @param tokens        the inserted sequence (read it during the call only)
     * @param from          its start
     * @param len           whole pages of tokens inserted
     * @param firstNewToken tokens already on device, a multiple of the page size and below {@code len}
     * @param last          the node the insert ended on (attached; it ends at {@code from + len})
     */
    void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last);

    /**
     * Every page of {@code node} is now on {@code tier}: a load finished or a device page set was attached
     * ({@link #DEVICE}; also each device node inserted below a load while it ran, when it finishes), a host value
     * committed or published ({@link #HOST}), an L3 commit marker written ({@link #STORAGE}). The node is attached.
     */
    void onStored(int tier, RadixNode node);

    /**
     * Every page of {@code node} is about to leave {@code tier} (eviction, invalidation after a failed load, an
     * L3 delete). Called while the node is still attached, just before it changes.
     */
    void onRemoving(int tier, RadixNode node);

    /**
     * Pages {@code [firstPage, firstPage + pages)} of {@code node} are now on {@code tier}: the L3 tier wrote their
     * commit markers (or found them already stored), one store batch or one CP rank's owned positions at a time, so
     * a node may be reported in parts. The node is attached. The default does nothing.
     *
     * @param firstPage the first page, counted from the node's first page
     * @param pages     at least 1; {@code firstPage + pages <= node.pageCount()}
     */
    default void onPagesStored(int tier, RadixNode node, int firstPage, int pages) {
    }

    /**
     * Pages {@code [firstPage, firstPage + pages)} of the sequence {@code tokens[from, ...)} (pages counted from the
     * sequence's start, which is the tree's root) are on {@code tier} ({@code stored}) or found gone from it: the
     * L3 tier's transitions of pages no node holds (a write-back of evicted host pages, a page an L3 read found
     * missing or corrupt). The default does nothing.
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
