package io.hicache.core.internal;

import io.hicache.cuda.CudaEvent;

/**
 * The per-forward state shared by the threads of one backup round, preallocated by the {@link SlotPool} so that a
 * forward allocates nothing.
 *
 * <p><b>Lease.</b> A slot belongs to one {@link ForwardHandle} from {@code beginForward} until that handle has
 * ended or been invalidated ({@link #releasedGeneration}) <i>and</i> the forward was acknowledged by the
 * completion agent ({@link #acked}); only then does the pool hand it out again. A forward whose lease expired is
 * revoked ({@link #revokedGeneration}): its handle's next hook throws and releases the slot.
 *
 * <p><b>Owners and hand-offs.</b> Fields are grouped by their single writer; each hand-off orders the writer's
 * stores before the next owner's loads:
 * <ul>
 *   <li>scheduler, before the handle reaches the forward thread (engine hand-off) or before a command is queued
 *       (SPSC queue): the backups, page pairs, mode, {@link #generation}, {@link #command};</li>
 *   <li>forward thread, before publishing END (Disruptor ring, release) or storing {@link #endPendingGeneration}
 *       (volatile): {@link #hookMissingTarget}, {@link #hookMissingDraft}, {@link #endError};</li>
 *   <li>submitter: its private {@link #subGeneration}/{@link #subDone} (the only fields it reads to tell a stale
 *       hook message from a live one), the submitted-layer masks, {@link #cancelled}, the missing-layer flags,
 *       the submission error, {@link #copiedBytes} and {@link #firstCopyNs}; reset by the submitter itself when it
 *       adopts a new generation, published to the completion agent through the sealed queue;</li>
 *   <li>completion agent: {@link #status}, {@link #completedNs}, {@link #endNs}, published through the ack
 *       queue to the scheduler, which reads the submitter's and completion's results only after the ack.</li>
 * </ul>
 * The volatile fields are the only ones written and read concurrently.
 */
final class ForwardSlot extends WatchedCompletion {
    static final int CMD_NONE = 0;
    static final int CMD_CANCEL = 1;
    static final int CMD_COPY_ALL_NOW = 2;

    final int index;
    final CudaEvent[] targetEvents;
    final CudaEvent[] draftEvents;
    final CudaEvent endEvent;
    /**
     * Recorded on the backup stream right after each layer's copies (target layers, then draft layers), in the
     * duty cycle that issued them. A failed copy is reported only by events whose records were queued when it
     * failed, and the final event is recorded at seal, possibly after an early layer's copy already failed.
     */
    final CudaEvent[] copiedEvents;

    // ---- scheduler-written (see the class comment for the hand-off)
    long generation;
    Backup[] backups = new Backup[8];
    int backupCount;
    final PagePairs target = new PagePairs(64);
    final PagePairs draft = new PagePairs(64);
    boolean allLayers;
    boolean hasDraft;
    int command;
    boolean acked;
    boolean writeBack;
    /** The handle the pool gives out with this slot; replaced after an invalidation (never reused then). */
    ForwardHandle handle;

    // ---- cross-thread flags, each a generation number so that a later forward never sees an earlier one's
    /** Scheduler → forward thread: the forward of this generation was revoked (lease expired, shutdown). */
    volatile long revokedGeneration;
    /** Forward thread → scheduler: the handle of this generation ended or was invalidated; it touches nothing more. */
    volatile long releasedGeneration;
    /** Forward thread → submitter: a hook message of this generation was lost (hook ring full). */
    volatile long overflowGeneration;
    /** Forward thread → submitter: the END of this generation could not be published (hook ring full). */
    volatile long endPendingGeneration;

    // ---- forward-thread-written, read by the submitter after END (ring) or endPendingGeneration
    boolean hookMissingTarget;
    boolean hookMissingDraft;
    /**
     * The error of the end event's record (a CUDA code, or cudaErrorUnknown), or 0: written at {@code endForward},
     * or by the scheduler before it queues a write-back's command.
     */
    int endError;

    // ---- completion-written: when the end event (recorded on the compute stream at endForward, or by the
    // scheduler for a write-back) was seen complete: the device-time end of the forward
    long endNs;

    // ---- submitter-written
    long subGeneration;
    boolean subDone;
    final long[] targetSubmitted;
    final long[] draftSubmitted;
    int targetSubmittedCount;
    int draftSubmittedCount;
    boolean cancelled;
    boolean missingTarget;
    boolean missingDraft;
    /** Bytes of the copies queued for the forward, target and draft (for the scheduler's bandwidth sample). */
    long copiedBytes;
    /** When the forward's first copy was submitted (the clock's nanoseconds, at least 1), 0 before. */
    long firstCopyNs;

    ForwardSlot(int index, CudaEvent[] targetEvents, CudaEvent[] draftEvents, CudaEvent endEvent, CudaEvent finalEvent,
                CudaEvent[] copiedEvents) {
        super(finalEvent);
        this.index = index;
        this.targetEvents = targetEvents;
        this.draftEvents = draftEvents;
        this.endEvent = endEvent;
        this.copiedEvents = copiedEvents;
        this.targetSubmitted = new long[(targetEvents.length + 63) >>> 6];
        this.draftSubmitted = new long[Math.max(1, (draftEvents.length + 63) >>> 6)];
    }

    /**
     * Scheduler: clears its own fields for a new forward of {@code generation}. The submitter's and completion's
     * fields are reset by the submitter when it adopts the generation ({@link #adopt}).
     */
    void reset(long generation) {
        this.generation = generation;
        java.util.Arrays.fill(backups, 0, backupCount, null);
        backupCount = 0;
        target.count = 0;
        draft.count = 0;
        allLayers = false;
        hasDraft = false;
        command = CMD_NONE;
        endError = 0;
        acked = false;
        writeBack = false;
    }

    /** Submitter: takes over a new generation, clearing its own and the completion agent's per-forward fields. */
    void adopt(long generation) {
        subGeneration = generation;
        subDone = false;
        java.util.Arrays.fill(targetSubmitted, 0L);
        java.util.Arrays.fill(draftSubmitted, 0L);
        targetSubmittedCount = 0;
        draftSubmittedCount = 0;
        cancelled = false;
        missingTarget = false;
        missingDraft = false;
        copiedBytes = 0;
        firstCopyNs = 0;
        submitError = 0;
        submitErrorCall = null;
        agentError = false;
        finalRecorded = false;
        endNs = 0;
        status = 0;
        completedNs = 0;
    }

    /** Scheduler: whether the pool may hand the slot out again (acked, and its handle is done with it). */
    boolean reusable() {
        return acked && releasedGeneration == generation;
    }

    /** Scheduler: adds a backup and its owned (device, host) page pairs. */
    void add(Backup b) {
        if (backupCount == backups.length) {
            backups = java.util.Arrays.copyOf(backups, backupCount * 2);
        }
        backups[backupCount++] = b;
        int n = b.ownedCount;
        target.ensure(target.count + n);
        int from = target.count;
        for (int i = 0; i < n; i++) {
            target.add(b.devicePages[b.ownedIndex[i]], b.hostPages[i]);
        }
        if (b.withDraft) {
            hasDraft = true;
            draft.addFrom(target, from, n);
        }
    }

    @Override
    void onPoll(io.hicache.cuda.CudaRuntime runtime, long nowNs) {
        if (endNs == 0 && submitError == 0
            && runtime.queryEventStatus(endEvent) != io.hicache.cuda.CudaError.NOT_READY.code()) {
            endNs = Math.max(1, nowNs);
        }
    }

    @Override
    void onComplete(long nowNs) {
        if (endNs == 0) {
            endNs = Math.max(1, nowNs);
        }
    }

    /**
     * The first error among the copy events of the layers submitted one by one (all complete once the final
     * event is, the stream being FIFO), or 0: a copy that failed before the forward was sealed is reported only
     * there.
     */
    @Override
    int statusAfterFinal(io.hicache.cuda.CudaRuntime runtime) {
        int targetLayers = targetEvents.length;
        for (int l = 0; l < targetLayers; l++) {
            if (isSet(targetSubmitted, l)) {
                int s = runtime.queryEventStatus(copiedEvents[l]);
                if (s != 0 && s != io.hicache.cuda.CudaError.NOT_READY.code()) {
                    return s;
                }
            }
        }
        for (int d = 0; d < draftEvents.length; d++) {
            if (isSet(draftSubmitted, d)) {
                int s = runtime.queryEventStatus(copiedEvents[targetLayers + d]);
                if (s != 0 && s != io.hicache.cuda.CudaError.NOT_READY.code()) {
                    return s;
                }
            }
        }
        return 0;
    }

    static boolean testAndSet(long[] mask, int bit) {
        long m = 1L << (bit & 63);
        int w = bit >>> 6;
        if ((mask[w] & m) != 0) {
            return false;
        }
        mask[w] |= m;
        return true;
    }

    static boolean isSet(long[] mask, int bit) {
        return (mask[bit >>> 6] & (1L << (bit & 63))) != 0;
    }
}
