package io.hicache.cuda.simulated;

import java.util.ArrayDeque;
import java.util.ArrayList;

/** A simulated stream: its FIFO of operations and the state of its head. Guarded by the runtime's lock. */
final class SimStream {
    static final int HEAD_IDLE = 0;
    static final int HEAD_WAITING_ENGINE = 1;
    static final int HEAD_BLOCKED = 2;
    static final int HEAD_IN_FLIGHT = 3;

    final long handle;
    final int priority;
    final ArrayDeque<SimOp> queue = new ArrayDeque<>();
    /** Streams whose head is a wait blocked on an op of this stream. */
    final ArrayList<SimStream> waiters = new ArrayList<>(2);
    int headState = HEAD_IDLE;
    int heapIndex = -1;
    long lastCompletedSeq;
    /** Code of the last failed op, reported by records with seq <= errorCoversUpToSeq. */
    int errorCode;
    long errorCoversUpToSeq;
    /** Failure not yet reported by synchronizeStream. */
    int syncErrorCode;
    boolean destroyed;

    SimStream(long handle, int priority) {
        this.handle = handle;
        this.priority = priority;
    }
}
