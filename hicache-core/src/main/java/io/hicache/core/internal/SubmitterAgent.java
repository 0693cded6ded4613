package io.hicache.core.internal;

import io.hicache.core.internal.copy.CopyDirection;
import io.hicache.core.internal.copy.CopyPlan;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import org.agrona.concurrent.Agent;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.SpscArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The submitter: turns "layer l stored" messages into device-to-host copies on the backup stream, and
 * seals each forward with a final event.
 *
 * <p>For a target (draft) layer it makes the backup stream wait on the event the forward thread recorded
 * on the compute stream right after storing that layer, then queues the coalesced copies of that layer for
 * every backup of the forward, so they run while the compute stream goes on with the next layers. A draft
 * layer is copied only after its own hook. At the forward's end it checks that every declared layer was
 * submitted, records the final event and hands the forward to the completion agent.
 *
 * <p><b>Generations.</b> A message names its slot and the slot's generation. The submitter adopts a generation
 * the first time it meets it (a message or a command), resetting its own per-forward fields then, and drops every
 * message of a generation it already sealed; it decides this from its own fields only ({@link
 * ForwardSlot#subGeneration}, {@link ForwardSlot#subDone}), never from fields the scheduler resets.
 *
 * <p><b>Failures.</b> A CUDA error while submitting is recorded on the forward (its backups are aborted at
 * completion) and counted. Any other exception while handling one message or command marks that forward
 * {@link WatchedCompletion#agentError}, seals it (its final event still waits for the copies already queued), is
 * counted and logged once per distinct error by {@link AgentErrors}, and the agent goes on with the next message.
 *
 * <p>Owns the backup stream's submission order, the copy planners and plan; runs on its own thread under an
 * {@code AgentRunner} or is stepped by the caller. Allocation-free in steady state.
 */
public final class SubmitterAgent implements Agent, HookRing.Handler {
    private static final Logger LOG = LoggerFactory.getLogger(SubmitterAgent.class);
    private static final long WARN_INTERVAL_NS = 10_000_000_000L;

    private final CudaRuntime runtime;
    private final CudaStream backupStream;
    private final CopyPlanner targetPlanner;
    private final CopyPlanner draftPlanner;
    private final CopyPlan plan = new CopyPlan(256);
    private final boolean batched;
    private final int targetLayers;
    private final int draftLayers;
    private final HookRing ring;
    private final ForwardSlot[] slots;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final SpscArrayQueue<ForwardSlot> sealed;
    private final HiCacheMetrics metrics;
    private final AgentErrors errors;
    private final java.util.function.LongSupplier clock;
    private final MessagePassingQueue.Consumer<ForwardSlot> onCommand = this::onCommand;
    /** Forwards whose final event could not be recorded (an unexpected exception): retried every duty cycle. */
    private final ForwardSlot[] unsealed;
    private int unsealedCount;
    private long pendingEndsSeen;
    private long lastRingFullWarnNs;
    private int workDone;

    SubmitterAgent(CudaRuntime runtime, CudaStream backupStream, CopyPlanner targetPlanner, CopyPlanner draftPlanner,
                   boolean batched, int targetLayers, int draftLayers, HookRing ring, ForwardSlot[] slots,
                   SpscArrayQueue<ForwardSlot> commands, SpscArrayQueue<ForwardSlot> sealed, HiCacheMetrics metrics,
                   AgentErrors errors, java.util.function.LongSupplier clock) {
        this.runtime = runtime;
        this.backupStream = backupStream;
        this.targetPlanner = targetPlanner;
        this.draftPlanner = draftPlanner;
        this.batched = batched;
        this.targetLayers = targetLayers;
        this.draftLayers = draftLayers;
        this.ring = ring;
        this.slots = slots;
        this.commands = commands;
        this.sealed = sealed;
        this.metrics = metrics;
        this.errors = errors;
        this.clock = clock;
        this.unsealed = new ForwardSlot[slots.length];
    }

    @Override
    public int doWork() throws Exception {
        workDone = 0;
        if (unsealedCount > 0) {
            retrySeals();
        }
        commands.drain(onCommand, 16);
        ring.poll(this);
        long pendingEnds = ring.pendingEnds();
        if (pendingEnds != pendingEndsSeen) {
            pendingEndsSeen = pendingEnds;
            scanPendingEnds();
        }
        return workDone;
    }

    @Override
    public String roleName() {
        return "hicache-submitter";
    }

    @Override
    public boolean onHook(HookEvent event) {
        ForwardSlot slot = slots[event.slotIndex];
        int kind = event.kind;
        int layer = event.layer;
        long generation = event.generation;
        workDone++;
        try {
            if (!current(slot, generation)) {
                return workDone < 256; // stale message of a forward already sealed (cancelled, or a lost END found)
            }
            if (kind == HookEvent.END) {
                onEnd(slot);
            } else if (!slot.allLayers && slot.overflowGeneration != generation) {
                if (kind == HookEvent.TARGET) {
                    if (ForwardSlot.testAndSet(slot.targetSubmitted, layer)) {
                        slot.targetSubmittedCount++;
                        copyLayer(slot, layer, false, true);
                    }
                } else if (slot.hasDraft && ForwardSlot.testAndSet(slot.draftSubmitted, layer)) {
                    slot.draftSubmittedCount++;
                    copyLayer(slot, layer, true, true);
                }
            }
        } catch (RuntimeException | Error e) {
            onError(slot, kind == HookEvent.END ? "the end of a forward" : "a layer hook", e);
        }
        return workDone < 256;
    }

    /** Adopts {@code generation} if it is new; false when its forward is already sealed. */
    private static boolean current(ForwardSlot slot, long generation) {
        if (generation > slot.subGeneration) {
            slot.adopt(generation);
        }
        return generation == slot.subGeneration && !slot.subDone;
    }

    private void onCommand(ForwardSlot slot) {
        workDone++;
        try {
            int cmd = slot.command;
            if (!current(slot, slot.generation)) {
                return;
            }
            if (cmd == ForwardSlot.CMD_CANCEL) {
                slot.cancelled = true;
                seal(slot);
            } else if (cmd == ForwardSlot.CMD_COPY_ALL_NOW && !sealedAfterFailedEnd(slot)) {
                copyAllLayers(slot);
                seal(slot);
            }
        } catch (RuntimeException | Error e) {
            onError(slot, "a command", e);
        }
    }

    /** ENDs the forward thread could not publish (ring full): found through the slots' flags. */
    private void scanPendingEnds() {
        for (ForwardSlot slot : slots) {
            long g = slot.endPendingGeneration;
            if (g != 0 && current(slot, g)) {
                workDone++;
                try {
                    onEnd(slot);
                } catch (RuntimeException | Error e) {
                    onError(slot, "the end of a forward", e);
                }
            }
        }
    }

    /**
     * True (and the forward sealed as failed) when its end event could not be recorded: nothing may wait on it, and
     * the forward fails at once with that error (its final event still waits for the copies already queued).
     */
    private boolean sealedAfterFailedEnd(ForwardSlot slot) {
        if (slot.endError == 0) {
            return false;
        }
        if (slot.submitError == 0) {
            slot.submitError = slot.endError;
            slot.submitErrorCall = "cudaEventRecord of the forward's end";
        }
        seal(slot);
        return true;
    }

    private void onEnd(ForwardSlot slot) {
        if (sealedAfterFailedEnd(slot)) {
            return;
        }
        if (slot.allLayers) {
            copyAllLayers(slot);
        } else if (slot.overflowGeneration == slot.subGeneration) {
            // hook messages were lost: the layers not submitted yet are copied now, after the forward's end
            ringFull();
            slot.missingTarget = slot.hookMissingTarget;
            slot.missingDraft = slot.hookMissingDraft;
            copyRemainingLayers(slot);
        } else {
            slot.missingTarget = slot.targetSubmittedCount != targetLayers;
            slot.missingDraft = slot.hasDraft && slot.draftSubmittedCount != draftLayers;
        }
        seal(slot);
    }

    private void ringFull() {
        metrics.countFallback(FallbackReason.HOOK_RING_FULL);
        long now = System.nanoTime();
        if (lastRingFullWarnNs == 0 || now - lastRingFullWarnNs > WARN_INTERVAL_NS) {
            lastRingFullWarnNs = now;
            LOG.warn("HiCache hook lane ({} entries per slot) was full: a forward's remaining layers are copied after its end "
                + "({} such forwards so far)", ring.capacity(), metrics.fallbacksBy(FallbackReason.HOOK_RING_FULL));
        }
    }

    private void copyAllLayers(ForwardSlot slot) {
        if (slot.submitError == 0) {
            try {
                runtime.streamWaitEvent(backupStream, slot.endEvent);
            } catch (CudaException e) {
                fail(slot, e);
                return;
            }
        }
        for (int l = 0; l < targetLayers; l++) {
            copyLayer(slot, l, false, false);
        }
        if (slot.hasDraft) {
            for (int d = 0; d < draftLayers; d++) {
                copyLayer(slot, d, true, false);
            }
        }
    }

    private void copyRemainingLayers(ForwardSlot slot) {
        if (slot.submitError == 0) {
            try {
                runtime.streamWaitEvent(backupStream, slot.endEvent);
            } catch (CudaException e) {
                fail(slot, e);
                return;
            }
        }
        for (int l = 0; l < targetLayers; l++) {
            if (ForwardSlot.testAndSet(slot.targetSubmitted, l)) {
                copyLayer(slot, l, false, false);
            }
        }
        if (slot.hasDraft) {
            for (int d = 0; d < draftLayers; d++) {
                if (ForwardSlot.testAndSet(slot.draftSubmitted, d)) {
                    copyLayer(slot, d, true, false);
                }
            }
        }
    }

    private void copyLayer(ForwardSlot slot, int layer, boolean draft, boolean waitForHook) {
        if (slot.submitError != 0) {
            return;
        }
        try {
            if (waitForHook) {
                runtime.streamWaitEvent(backupStream, draft ? slot.draftEvents[layer] : slot.targetEvents[layer]);
            }
            if (draft) {
                draftPlanner.plan(layer, slot.draft.device, slot.draft.host, 0, slot.draft.count,
                    CopyDirection.DEVICE_TO_HOST, plan);
            } else {
                targetPlanner.plan(layer, slot.target.device, slot.target.host, 0, slot.target.count,
                    CopyDirection.DEVICE_TO_HOST, plan);
            }
            if (slot.firstCopyNs == 0) {
                slot.firstCopyNs = Math.max(1, clock.getAsLong());
            }
            plan.issue(runtime, backupStream, batched);
            slot.copiedBytes += plan.totalBytes();
            if (waitForHook) {
                runtime.recordEvent(slot.copiedEvents[draft ? targetLayers + layer : layer], backupStream);
            }
            metrics.add(draft ? Metric.D2H_DRAFT_BYTES : Metric.D2H_TARGET_BYTES, plan.totalBytes());
            metrics.add(Metric.D2H_COPIES, batched && runtime.supportsBatchedCopy() ? 1 : plan.runCount());
        } catch (CudaException e) {
            fail(slot, e);
        }
    }

    /**
     * Records the final event after everything queued for the forward and hands it to the completion agent. If
     * the record throws something other than a CUDA error, the forward is kept and the record retried next duty
     * cycle: handing it on without a final event could release its pages while its copies still run.
     */
    private void seal(ForwardSlot slot) {
        slot.subDone = true;
        // Recorded even after a failed submission, so the completion agent waits for the copies already queued
        // before the backups' pages can be released; only a dead context (the record fails too) skips the wait.
        try {
            runtime.recordEvent(slot.finalEvent, backupStream);
            slot.finalRecorded = true;
        } catch (CudaException e) {
            if (slot.submitError == 0) {
                fail(slot, e);
            }
        } catch (RuntimeException | Error e) {
            slot.agentError = true;
            errors.record(roleName(), "the final event of a forward", e);
            unsealed[unsealedCount++] = slot;
            return;
        }
        handOn(slot);
    }

    private void handOn(ForwardSlot slot) {
        metrics.increment(Metric.FORWARDS_SEALED);
        if (!sealed.offer(slot)) {
            // cannot happen: a slot is reused only after its ack, and the queue holds every slot
            throw new IllegalStateException("sealed-forward queue full: more forwards in flight than slots");
        }
    }

    private void retrySeals() {
        int n = unsealedCount;
        unsealedCount = 0;
        for (int i = 0; i < n; i++) {
            ForwardSlot slot = unsealed[i];
            unsealed[i] = null;
            workDone++;
            try {
                runtime.recordEvent(slot.finalEvent, backupStream);
                slot.finalRecorded = true;
            } catch (CudaException e) {
                if (slot.submitError == 0) {
                    fail(slot, e);
                }
            } catch (RuntimeException | Error e) {
                errors.record(roleName(), "the final event of a forward", e);
                unsealed[unsealedCount++] = slot;
                continue;
            }
            handOn(slot);
        }
    }

    /** An unexpected exception while handling a forward: it is aborted (sealed now unless already), the agent goes on. */
    private void onError(ForwardSlot slot, String what, Throwable e) {
        GuardedAgent.rethrowIfFatal(e);
        errors.record(roleName(), what, e);
        if (!slot.subDone) {
            slot.agentError = true;
            try {
                seal(slot);
            } catch (RuntimeException | Error again) {
                errors.record(roleName(), "sealing a failed forward", again);
            }
        }
    }

    private static void fail(ForwardSlot slot, CudaException e) {
        slot.submitError = e.code();
        slot.submitErrorCall = e.call();
    }
}
