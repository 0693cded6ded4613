package io.hicache.core;

import io.hicache.radix.RadixNode;

/**
 * One backup of a radix node's pages to host memory on this CP rank, created by {@link HiCache#reserve} or
 * {@link HiCache#reserveByPolicy}: RESERVED → COPYING → SEALED → COMMITTED, or → DRAINING → ABORTED.
 *
 * <p>The engine holds it as a handle: it passes it to {@link HiCache#beginForward}, may {@link HiCache#abort}
 * it, and reads its state. Only handles returned by the same {@link HiCache} are accepted back.
 *
 * <p><b>Thread:</b> the scheduler thread that owns the cache; not thread-safe. The accessors never fail.
 */
public interface BackupHandle {
    /** Sequence number, identical on every rank of the group for the same reservation. */
    long seq();

    /** Current state. */
    BackupState state();

    /** The reason it was aborted, or null. */
    AbortReason abortReason();

    /** Whether it carries draft/MTP KV besides the target KV. */
    boolean withDraft();

    /** Pages of the node (all positions, owned by any rank). */
    int pageCount();

    /** Pages this rank copies (its owned positions). */
    int ownedPageCount();

    /** The node reserved (the deepest fragment, should the node split while the backup is pending). */
    RadixNode node();
}
