package io.hicache.core;

import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;

/** Read-only view of the host pool. Owned by the scheduler thread like the cache; not thread-safe. */
public interface HostPoolView {
    /** Host pages in the pool. */
    int capacityPages();

    /** Host pages not holding a backup. */
    int freePages();

    /** Host pages holding a backup (reserved, committed, or leased to a storage tier): capacity minus free. */
    int allocatedPages();

    /**
     * Host pages reserved or committed on the group's fullest rank (each rank counts every rank's pages, so this
     * is the same on every rank; without CP, this rank's).
     */
    long budgetUsedPages();

    /** Host pages the budget allows each rank. */
    long budgetCapacityPages();

    /** Bytes of one host page, every layer and buffer of the target KV. */
    long bytesPerPage();

    /** Bytes of host memory pinned for the target KV (the draft KV, if any, is extra). */
    long totalBytes();

    /** Byte order of a host page. */
    HostLayout layout();

    /** Where the pinned memory came from. */
    HostMemoryKind memoryKind();

    /** True when the pool also holds the draft/MTP KV. */
    boolean hasDraft();
}
