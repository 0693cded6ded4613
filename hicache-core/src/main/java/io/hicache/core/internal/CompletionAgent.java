package io.hicache.core.internal;

import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaRuntime;
import org.agrona.concurrent.Agent;
import org.jctools.queues.MessagePassingQueue;
import org.jctools.queues.SpscArrayQueue;

import java.util.function.LongSupplier;

/**
 * The completion agent: polls the final event of each sealed forward (backups, on the backup stream) and of
 * each issued load (on the load stream), in the order each stream received them (a stream is FIFO, so a later
 * final event cannot complete before an earlier one), and posts each finished item, with its status, to the
 * scheduler's ack queue for its kind.
 *
 * <p>Owns its two FIFOs; runs on its own thread under an {@code AgentRunner} or is stepped by the caller.
 * Allocation-free. A failed event is not an error of the agent: the code travels in the ack and the scheduler
 * aborts the affected backups or loads. An unexpected exception or error (any but a fatal {@link
 * VirtualMachineError}, as in the submitter) while handling one item marks that item
 * {@link WatchedCompletion#agentError} (its backups or loads are aborted), is counted and logged once per distinct
 * error by {@link AgentErrors}, and the agent goes on; the item is still acknowledged only once its final event is seen
 * complete (or failed), so its pages are never released while its copies may run.
 */
public final class CompletionAgent implements Agent {
    private final CudaRuntime runtime;
    private final LongSupplier clock;
    private final HiCacheMetrics metrics;
    private final AgentErrors errors;
    private final Fifo<ForwardSlot> backups;
    private final Fifo<LoadSet> loads;

    CompletionAgent(CudaRuntime runtime, SpscArrayQueue<ForwardSlot> sealed, SpscArrayQueue<ForwardSlot> acks,
                    SpscArrayQueue<LoadSet> loadsIssued, SpscArrayQueue<LoadSet> loadAcks,
                    HiCacheMetrics metrics, AgentErrors errors, LongSupplier clock, int capacity, int loadCapacity) {
        this.runtime = runtime;
        this.metrics = metrics;
        this.errors = errors;
        this.clock = clock;
        this.backups = new Fifo<>(sealed, acks, capacity, "a sealed forward");
        this.loads = new Fifo<>(loadsIssued, loadAcks, loadCapacity, "an issued load");
    }

    @Override
    public int doWork() {
        return backups.doWork() + loads.doWork();
    }

    /** Forwards sealed but not yet complete. */
    public int inFlight() {
        return backups.size() + loads.size();
    }

    @Override
    public String roleName() {
        return "hicache-completion";
    }

    private final class Fifo<T extends WatchedCompletion> implements MessagePassingQueue.Consumer<T> {
        private final SpscArrayQueue<T> in;
        private final SpscArrayQueue<T> out;
        private final String what;
        private final WatchedCompletion[] items;
        private final int mask;
        private long head;
        private long tail;

        Fifo(SpscArrayQueue<T> in, SpscArrayQueue<T> out, int capacity, String what) {
            this.in = in;
            this.out = out;
            this.what = what;
            int cap = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1);
            this.items = new WatchedCompletion[cap];
            this.mask = cap - 1;
        }

        int size() {
            return (int) (tail - head);
        }

        @Override
        public void accept(T item) {
            if (tail - head == items.length) {
                throw new IllegalStateException("completion FIFO full: more items in flight than slots");
            }
            items[(int) (tail & mask)] = item;
            tail++;
        }

        @SuppressWarnings("unchecked")
        int doWork() {
            int work = in.drain(this, items.length - size());
            if (head == tail) {
                return work;
            }
            long now = clock.getAsLong();
            for (long i = head; i < tail; i++) {
                WatchedCompletion item = items[(int) (i & mask)];
                if (!item.agentError) {
                    try {
                        item.onPoll(runtime, now);
                    } catch (RuntimeException | Error e) {
                        onError(item, e);
                    }
                }
            }
            while (head != tail) {
                WatchedCompletion item = items[(int) (head & mask)];
                int status;
                try {
                    status = item.finalRecorded || item.submitError == 0
                        ? runtime.queryEventStatus(item.finalEvent) : item.submitError;
                    if (status == 0 && item.submitError != 0) {
                        status = item.submitError; // queued copies drained; now report the submission failure
                    }
                    if (status == CudaError.NOT_READY.code()) {
                        break;
                    }
                    if (status == 0 && !item.agentError) {
                        status = item.statusAfterFinal(runtime);
                    }
                } catch (RuntimeException | Error e) {
                    // the item stays at the head: its final event is queried again next cycle, and only its
                    // completion (or failure) lets the scheduler release what its copies use
                    onError(item, e);
                    break;
                }
                if (status != 0) {
                    metrics.increment(Metric.CUDA_ERRORS);
                }
                item.completedNs = now;
                item.onComplete(now);
                item.status = status;
                items[(int) (head & mask)] = null;
                head++;
                if (!out.offer((T) item)) {
                    // cannot happen: the ack queue holds every item in flight
                    throw new IllegalStateException("ack queue full: more items in flight than slots");
                }
                work++;
            }
            return work;
        }

        /** As the submitter: anything but a fatal VirtualMachineError aborts the item and the agent goes on. */
        private void onError(WatchedCompletion item, Throwable e) {
            GuardedAgent.rethrowIfFatal(e);
            errors.record(roleName(), what, e);
            item.agentError = true;
        }
    }
}
