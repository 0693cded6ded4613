package io.hicache.core.internal;

import io.hicache.core.DevicePageAllocator;
import io.hicache.radix.RadixNode;

/**
 * One request's load of host-only pages back to the device, created by {@link HiCacheController#loadBack}.
 *
 * <p>Owned by the scheduler thread. The engine reads {@link #devicePage(int)} to build the request's KV page
 * list; the pages hold valid KV for layer {@code l} once the forward has waited on layer {@code l}
 * ({@link HiCacheController#waitLayer}). With {@link io.hicache.core.LoadOverlap#SAME_FORWARD} its nodes are
 * LOADING device nodes from {@link HiCacheController#loadBack} on; otherwise they become device hits only when the
 * load is acknowledged on every rank, and until then a match sees them as host-only.
 */
public final class LoadOp implements AgreedFifo.Item, io.hicache.core.LoadHandle, io.hicache.radix.spi.PendingLoad {

    final long seq;
    final long requestId;
    final RadixNode anchor;
    /** The chain, top first; re-read by the loader when a match or insert split one of its nodes. */
    RadixNode[] nodes;
    int[] nodePageStart;
    final int pageCount;
    final int[] devicePages;
    /** Position of the chain's first page in the sequence, in pages from the root. */
    final int firstPage;
    /** Pages whose host copy a storage prefetch published and no load read before this one (served from L3). */
    final int storagePages;
    State state = State.QUEUED;
    LoadSet set;
    long issuedNs;
    long consumer = -1;
    Local local = Local.UNRESOLVED;
    DevicePageAllocator allocator;
    /** What this load is, the same on every rank ({@link Fingerprints#load}); 0 without a CP group. */
    final long fingerprint;

    enum Local { UNRESOLVED, OK, FAILED }

    LoadOp(long seq, long requestId, RadixNode anchor, RadixNode[] nodes, int[] nodePageStart, int pageCount,
           int[] devicePages, int firstPage, int storagePages, long fingerprint) {
        this.seq = seq;
        this.firstPage = firstPage;
        this.storagePages = storagePages;
        this.requestId = requestId;
        this.anchor = anchor;
        this.nodes = nodes;
        this.nodePageStart = nodePageStart;
        this.pageCount = pageCount;
        this.devicePages = devicePages;
        this.fingerprint = fingerprint;
    }

    @Override
    public long fingerprint() {
        return fingerprint;
    }

    @Override
    public long seq() {
        return seq;
    }

    @Override
    public boolean unresolved() {
        return local == Local.UNRESOLVED;
    }

    @Override
    public boolean failedLocally() {
        return local == Local.FAILED;
    }

    /** The engine's id of the request this load serves. */
    @Override
    public long requestId() {
        return requestId;
    }

    /** Current state. */
    @Override
    public State state() {
        return state;
    }

    /** The consumer token of the batch that issued this load ({@link HiCacheController#waitLayer}); -1 while queued. */
    @Override
    public long consumer() {
        return consumer;
    }

    /** Pages loaded (the host-only chain's pages). */
    @Override
    public int pageCount() {
        return pageCount;
    }

    @Override
    public int firstPage() {
        return firstPage;
    }

    @Override
    public int storagePageCount() {
        return storagePages;
    }

    /** Device page receiving chain page {@code i} (in sequence order after the device prefix). */
    @Override
    public int devicePage(int i) {
        if (i < 0 || i >= pageCount) {
            throw new IndexOutOfBoundsException("page " + i + " outside [0, " + pageCount + ")");
        }
        return devicePages[i];
    }

    /** Nodes of the chain, top first. */
    @Override
    public int nodeCount() {
        return nodes.length;
    }

    /** Chain node {@code i}, top first. */
    @Override
    public RadixNode node(int i) {
        return nodes[i];
    }

    @Override
    public String toString() {
        return "LoadOp{request=" + requestId + ", pages=" + pageCount + ", state=" + state + '}';
    }
}
