package io.hicache.sim.engine;

import io.hicache.core.LoadHandle;
import io.hicache.radix.RadixNode;
import io.hicache.sim.trace.Request;

/**
 * One request's life in the serving model: queued, loading its host hit, prefilling chunk by chunk,
 * decoding, finished (or preempted back to the queue). Plain mutable state owned by the scheduler thread.
 *
 * <p>KV pages: {@code pages[0, pageCount)} hold the request's KV in sequence order; {@code [0, ownedFrom)}
 * belong to the radix tree (matched or already inserted; the request holds a lock on that path through
 * {@code lock}), {@code [ownedFrom, pageCount)} to the request, which gives them to the tree when it inserts
 * them or back to the pool when it finishes or is preempted.
 */
final class ServedRequest {
    final Request request;
    /** Page keys of the prompt's whole pages. */
    final int[] keys;
    /** Prompt length in simulated tokens. */
    final int simTokens;
    final long arrivalNs;
    /**
     * Page keys of prompt and answer together when the trace names the answer's blocks (the next turn of the
     * conversation repeats them); null when it does not, and the answer's pages get fresh keys.
     */
    int[] answerKeys;

    int instance = -1;
    // load-back of a host hit before admission
    LoadHandle load;
    boolean loadDone;
    boolean storageTried;
    int storagePages;
    long storageReadyNs;
    io.hicache.storage.L3Prefetch[] prefetches;
    int loadedPages;
    int loadWaits;
    /** Same-forward loads: per rank, the load in flight whose layers this request's forwards wait for, or null. */
    LoadHandle[] waitFor;
    /**
     * Per rank, the device prefix a queued request's own load brought back, locked while it waits for the pages of
     * the rest of its prompt (null entries when it holds none).
     */
    RadixNode[] hold;
    /** Pages of the prompt counted as a host hit at the first admission. */
    int hostHitPages;
    /** When the scheduler first acted on the request's host hit (issued its load), -1 before. */
    long hostHitStartNs = -1;

    // admission
    boolean admittedOnce;
    boolean noPages;
    int[] pages = new int[0];
    int pageCount;
    int ownedFrom;
    int insertedPages;
    RadixNode[] lock;
    /** Simulated tokens whose KV the prefill must produce: the prompt, plus the decoded tokens after a preemption. */
    int targetSim;
    int prefilledSim;
    /** Simulated tokens this request prefills in the current step. */
    int chunkSim;

    // outcome
    int decoded;
    long firstScheduledNs = -1;
    long firstTokenNs = -1;
    long finishNs = -1;
    int preemptions;

    ServedRequest(Request request, int[] keys, int simTokens, long arrivalNs) {
        this.request = request;
        this.keys = keys;
        this.simTokens = simTokens;
        this.arrivalNs = arrivalNs;
        this.targetSim = simTokens;
    }

    boolean inPrefill() {
        return prefilledSim < targetSim;
    }

    boolean finished() {
        return finishNs >= 0;
    }
}
