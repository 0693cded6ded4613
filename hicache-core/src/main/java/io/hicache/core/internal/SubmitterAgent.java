package io.hicache.core.internal;

import com.lmax.disruptor.EventPoller;
import io.hicache.core.internal.copy.CopyDirection;
import io.hicache.core.internal.copy.CopyPlan;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import org.agrona.concurrent.Agent;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.SpscArrayQueue;

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
 * <p>Owns the backup stream's submission order, the copy planners and plan; runs on its own thread under an
 * {@code AgentRunner} or is stepped by the caller. Allocation-free in steady state. A CUDA error while
 * submitting is recorded on the forward (its backups are aborted at completion) and counted.
 */
public final class SubmitterAgent implements Agent, EventPoller.Handler<HookEvent> {
    private final CudaRuntime runtime;
    private final CudaStream backupStream;
    private final CopyPlanner targetPlanner;
    private final CopyPlanner draftPlanner;
    private final CopyPlan plan = new CopyPlan(256);
    private final boolean batched;
    private final int targetLayers;
    private final int draftLayers;
    private final EventPoller<HookEvent> hooks;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final SpscArrayQueue<ForwardSlot> sealed;
    private final HiCacheMetrics metrics;
    private final MessagePassingQueue.Consumer<ForwardSlot> onCommand = this::onCommand;
    private final java.util.function.LongSupplier clock;
    private int workDone;

    SubmitterAgent(CudaRuntime runtime, CudaStream backupStream, CopyPlanner targetPlanner, CopyPlanner draftPlanner,
                   boolean batched, int targetLayers, int draftLayers, EventPoller<HookEvent> hooks,
                   SpscArrayQueue<ForwardSlot> commands, SpscArrayQueue<ForwardSlot> sealed, HiCacheMetrics metrics,
                   java.util.function.LongSupplier clock) {
        this.runtime = runtime;
        this.backupStream = backupStream;
        this.targetPlanner = targetPlanner;
        this.draftPlanner = draftPlanner;
        this.batched = batched;
        this.targetLayers = targetLayers;
        this.draftLayers = draftLayers;
        this.hooks = hooks;
        this.commands = commands;
        this.sealed = sealed;
        this.metrics = metrics;
        this.clock = clock;
    }

    @Override
    public int doWork() throws Exception {
        workDone = 0;
        commands.drain(onCommand, 16);
        hooks.poll(this);
        return workDone;
    }

    @Override
    public String roleName() {
        return "hicache-submitter";
    }

    @Override
    public boolean onEvent(HookEvent event, long sequence, boolean endOfBatch) {
        ForwardSlot slot = event.slot;
        int kind = event.kind;
        int layer = event.layer;
        long generation = event.generation;
        event.slot = null;
        workDone++;
        if (kind == HookEvent.END && slot.generation == generation) {
            slot.endSeen = true;
        }
        if (slot.generation != generation || slot.cancelled || slot.sealed) {
            return workDone < 256; // stale message of a cancelled or reused forward
        }
        if (kind == HookEvent.END) {
            onEnd(slot);
        } else if (!slot.allLayers) {
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
        return workDone < 256;
    }

    private void onCommand(ForwardSlot slot) {
        workDone++;
        int cmd = slot.command;
        slot.command = ForwardSlot.CMD_NONE;
        if (cmd == ForwardSlot.CMD_CANCEL) {
            if (!slot.sealed) {
                slot.cancelled = true;
                seal(slot);
            }
        } else if (cmd == ForwardSlot.CMD_COPY_ALL_NOW) {
            copyAllLayers(slot);
            seal(slot);
        }
    }

    private void onEnd(ForwardSlot slot) {
        if (slot.allLayers) {
            copyAllLayers(slot);
        } else {
            slot.missingTarget = slot.targetSubmittedCount != targetLayers;
            slot.missingDraft = slot.hasDraft && slot.draftSubmittedCount != draftLayers;
        }
        seal(slot);
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
            plan.issue(runtime, backupStream, batched);
            if (waitForHook) {
                runtime.recordEvent(slot.copiedEvents[draft ? targetLayers + layer : layer], backupStream);
            }
            metrics.add(draft ? Metric.D2H_DRAFT_BYTES : Metric.D2H_TARGET_BYTES, plan.totalBytes());
            metrics.add(Metric.D2H_COPIES, batched && runtime.supportsBatchedCopy() ? 1 : plan.runCount());
        } catch (CudaException e) {
            fail(slot, e);
        }
    }

    private void seal(ForwardSlot slot) {
        // Recorded even after a failed submission, so the completion agent waits for the copies already queued
        // before the backups' pages can be released; only a dead context (the record fails too) skips the wait.
        try {
            runtime.recordEvent(slot.finalEvent, backupStream);
            slot.finalRecorded = true;
        } catch (CudaException e) {
            if (slot.submitError == 0) {
                fail(slot, e);
            }
        }
        slot.sealed = true;
        slot.sealedNs = clock.getAsLong();
        metrics.increment(Metric.FORWARDS_SEALED);
        if (!sealed.offer(slot)) {
            throw new IllegalStateException("sealed-forward queue full: more forwards in flight than slots");
        }
    }

    private void fail(ForwardSlot slot, CudaException e) {
        slot.submitError = e.code();
        slot.submitErrorCall = e.call();
    }
}
