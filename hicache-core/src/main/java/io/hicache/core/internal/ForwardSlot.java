package io.hicache.core.internal;

import io.hicache.cuda.CudaEvent;

/**
 * The per-forward state shared by the threads of one backup round, preallocated in a ring so that a
 * forward allocates nothing. Fields are grouped by their single writer:
 * <ul>
 *   <li>scheduler (before the handle reaches the forward thread, or before the slot is queued to the
 *       submitter): the backups, the merged page pairs, the declared layers, the mode, the command;</li>
 *   <li>forward thread: {@link #endNs};</li>
 *   <li>submitter: the submitted-layer masks, {@link #sealed}, {@link #cancelled}, the missing-layer flags;</li>
 *   <li>completion agent: {@link #status}, {@link #completedNs}.</li>
 * </ul>
 * Each hand-off goes through a queue or ring with release/acquire semantics (Disruptor sequence, JCTools
 * queues), which orders a writer's stores before the next owner's loads.
 */
final class ForwardSlot extends Tracked {
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

    // ---- scheduler-written
    long generation;
    Backup[] backups = new Backup[8];
    int backupCount;
    final PagePairs target = new PagePairs(64);
    final PagePairs draft = new PagePairs(64);
    boolean allLayers;
    boolean hasDraft;
    int command;
    boolean inUse;
    boolean acked;
    boolean writeBack;
    ForwardHandle handle;

    // ---- completion-written: when the end event (recorded on the compute stream at endForward, or by the
    // scheduler for a write-back) was seen complete: the device-time end of the forward
    long endNs;

    // ---- submitter-written
    final long[] targetSubmitted;
    final long[] draftSubmitted;
    int targetSubmittedCount;
    int draftSubmittedCount;
    boolean sealed;
    boolean cancelled;
    boolean missingTarget;
    boolean missingDraft;
    long sealedNs;
    volatile boolean endSeen;


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

    /** Scheduler: clears every field for a new forward. */
    void reset(long generation) {
        this.generation = generation;
        java.util.Arrays.fill(backups, 0, backupCount, null);
        backupCount = 0;
        target.count = 0;
        draft.count = 0;
        allLayers = false;
        hasDraft = false;
        command = CMD_NONE;
        endNs = 0;
        java.util.Arrays.fill(targetSubmitted, 0L);
        java.util.Arrays.fill(draftSubmitted, 0L);
        targetSubmittedCount = 0;
        draftSubmittedCount = 0;
        sealed = false;
        cancelled = false;
        missingTarget = false;
        missingDraft = false;
        sealedNs = 0;
        endSeen = false;
        submitError = 0;
        submitErrorCall = null;
        finalRecorded = false;
        acked = false;
        writeBack = false;
        status = 0;
        completedNs = 0;
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
