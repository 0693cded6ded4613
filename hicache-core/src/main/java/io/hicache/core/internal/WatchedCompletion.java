package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.cuda.CudaEvent;

/**
 * Work whose completion the completion agent watches: a sealed forward's backups or an issued load. The final
 * event is recorded last on its stream; {@link #submitError} (set by the issuing thread before hand-off) is reported
 * once the final event completed, or at once when it could not be recorded (the context is dead). {@link #status} and {@link #completedNs} are written by the completion
 * agent before it posts the item to its ack queue.
 */
abstract class WatchedCompletion {
    final CudaEvent finalEvent;
    int submitError;
    String submitErrorCall;
    /** True when the final event was recorded after everything queued (then it is waited for even after an error). */
    boolean finalRecorded;
    /**
     * True when an agent failed with an unexpected exception while handling this item (set by that agent before
     * it hands the item on): its backups or loads are aborted with {@link AbortReason#AGENT_ERROR}.
     */
    boolean agentError;
    volatile int status;
    long completedNs;

    WatchedCompletion(CudaEvent finalEvent) {
        this.finalEvent = finalEvent;
    }

    /** Called by the completion agent on every duty cycle while the item is in its FIFO. */
    void onPoll(io.hicache.cuda.CudaRuntime runtime, long nowNs) {
    }

    /**
     * Called by the completion agent once the final event completed successfully: a further status to report
     * (0 when none), for failures the final event cannot show.
     */
    int statusAfterFinal(io.hicache.cuda.CudaRuntime runtime) {
        return 0;
    }

    /** Called by the completion agent when the final event has completed (or failed). */
    void onComplete(long nowNs) {
    }
}
