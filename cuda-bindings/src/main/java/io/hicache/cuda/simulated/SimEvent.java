package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaError;

/** A simulated event: its newest record and what that record found. Guarded by the runtime's lock. */
final class SimEvent {
    final long handle;
    final boolean timing;
    /** Stream and op seq of the newest record; seq 0 = never recorded. */
    SimStream recordStream;
    long recordSeq;
    long completedNs;
    int status;
    boolean destroyed;

    SimEvent(long handle, boolean timing) {
        this.handle = handle;
        this.timing = timing;
    }

    /** {@code cudaEventQuery}'s answer, sticky errors aside: 0, not ready, or the error its record covers. */
    int status() {
        if (recordSeq == 0) {
            return 0;
        }
        if (recordStream.lastCompletedSeq < recordSeq) {
            return CudaError.NOT_READY.code();
        }
        return status;
    }
}
