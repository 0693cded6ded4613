package io.hicache.core;

import io.hicache.core.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaRuntime;
import org.agrona.concurrent.Agent;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.MpscArrayQueue;
import org.jctools.queues.SpscArrayQueue;

import java.util.function.LongSupplier;

/**
 * The completion agent: polls the final event of each sealed forward, in the order they were sealed (the
 * backup stream is FIFO, so a later final event cannot complete before an earlier one), and posts each
 * finished forward, with its status, to the scheduler's ack queue.
 *
 * <p>Owns its FIFO of sealed forwards; runs on its own thread under an {@code AgentRunner} or is stepped
 * by the caller. Allocation-free. A failed event query is not an error of the agent: the code is passed on
 * in the ack and the scheduler aborts the forward's backups.
 */
public final class CompletionAgent implements Agent {
    private final CudaRuntime runtime;
    private final SpscArrayQueue<ForwardSlot> sealed;
    private final MpscArrayQueue<ForwardSlot> acks;
    private final HiCacheMetrics metrics;
    private final LongSupplier clock;
    private final ForwardSlot[] fifo;
    private final int mask;
    private final MessagePassingQueue.Consumer<ForwardSlot> onSealed = this::onSealed;
    private long head;
    private long tail;

    CompletionAgent(CudaRuntime runtime, SpscArrayQueue<ForwardSlot> sealed, MpscArrayQueue<ForwardSlot> acks,
                    HiCacheMetrics metrics, LongSupplier clock, int capacity) {
        this.runtime = runtime;
        this.sealed = sealed;
        this.acks = acks;
        this.metrics = metrics;
        this.clock = clock;
        int cap = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1);
        this.fifo = new ForwardSlot[cap];
        this.mask = cap - 1;
    }

    @Override
    public int doWork() {
        int work = sealed.drain(onSealed, fifo.length);
        for (long i = head; i < tail; i++) {
            ForwardSlot s = fifo[(int) (i & mask)];
            if (s.endNs == 0 && s.submitError == 0 && runtime.queryEventStatus(s.endEvent) != CudaError.NOT_READY.code()) {
                s.endNs = Math.max(1, clock.getAsLong());
            }
        }
        while (head != tail) {
            ForwardSlot slot = fifo[(int) (head & mask)];
            int status = slot.submitError != 0 ? slot.submitError : runtime.queryEventStatus(slot.finalEvent);
            if (status == CudaError.NOT_READY.code()) {
                break;
            }
            if (status == 0) {
                status = layerCopyStatus(slot);
            }
            if (status != 0) {
                metrics.increment(Metric.CUDA_ERRORS);
            }
            slot.completedNs = clock.getAsLong();
            if (slot.endNs == 0) {
                slot.endNs = Math.max(1, slot.completedNs);
            }
            slot.status = status;
            fifo[(int) (head & mask)] = null;
            head++;
            if (!acks.offer(slot)) {
                throw new IllegalStateException("ack queue full: more forwards in flight than slots");
            }
            work++;
        }
        return work;
    }

    /**
     * The first error among the copy events of the layers submitted one by one (all complete once the final event
     * is, the stream being FIFO), or 0: a copy that failed before the forward was sealed is reported only there.
     */
    private int layerCopyStatus(ForwardSlot slot) {
        int targetLayers = slot.targetEvents.length;
        for (int l = 0; l < targetLayers; l++) {
            if (ForwardSlot.isSet(slot.targetSubmitted, l)) {
                int s = runtime.queryEventStatus(slot.copiedEvents[l]);
                if (s != 0 && s != CudaError.NOT_READY.code()) {
                    return s;
                }
            }
        }
        for (int d = 0; d < slot.draftEvents.length; d++) {
            if (ForwardSlot.isSet(slot.draftSubmitted, d)) {
                int s = runtime.queryEventStatus(slot.copiedEvents[targetLayers + d]);
                if (s != 0 && s != CudaError.NOT_READY.code()) {
                    return s;
                }
            }
        }
        return 0;
    }

    private void onSealed(ForwardSlot slot) {
        if (tail - head == fifo.length) {
            throw new IllegalStateException("completion FIFO full: more forwards in flight than slots");
        }
        fifo[(int) (tail & mask)] = slot;
        tail++;
    }

    /** Forwards sealed but not yet complete. */
    public int inFlight() {
        return (int) (tail - head);
    }

    @Override
    public String roleName() {
        return "hicache-completion";
    }
}
