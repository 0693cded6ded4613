package io.hicache.core.internal;

import io.hicache.cuda.CudaEvent;

/**
 * One entry of the ring of load event sets: a start event (on the compute stream), one event per target and per
 * draft layer (on the load stream) and a final event. Scheduler-written except {@link #status} and
 * {@link #completedNs} (completion agent) and {@link #generation} (read by the forward thread).
 */
final class LoadSet extends WatchedCompletion {
    final int index;
    final CudaEvent startEvent;
    final CudaEvent[] targetEvents;
    final CudaEvent[] draftEvents;
    volatile long generation;
    boolean inUse;
    LoadOp[] ops = new LoadOp[8];
    int opCount;
    long issuedNs;
    /** Bytes of the batch's copies, target and draft (scheduler-written at issue, for its bandwidth sample). */
    long bytes;

    LoadSet(int index, CudaEvent start, CudaEvent[] target, CudaEvent[] draft, CudaEvent fin) {
        super(fin);
        this.index = index;
        this.startEvent = start;
        this.targetEvents = target;
        this.draftEvents = draft;
    }

    void add(LoadOp op) {
        if (opCount == ops.length) {
            ops = java.util.Arrays.copyOf(ops, opCount * 2);
        }
        ops[opCount++] = op;
    }
}
