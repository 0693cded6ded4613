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
 * aborts the affected backups or loads.
 */
public final class CompletionAgent implements Agent {
    private final CudaRuntime runtime;
    private final HiCacheMetrics metrics;
    private final LongSupplier clock;
    private final Fifo<ForwardSlot> backups;
    private final Fifo<LoadSet> loads;

    CompletionAgent(CudaRuntime runtime, SpscArrayQueue<ForwardSlot> sealed, SpscArrayQueue<ForwardSlot> acks,
                    SpscArrayQueue<LoadSet> loadsIssued, SpscArrayQueue<LoadSet> loadAcks,
                    HiCacheMetrics metrics, LongSupplier clock, int capacity) {
        this.runtime = runtime;
        this.metrics = metrics;
        this.clock = clock;
        this.backups = new Fifo<>(sealed, acks, capacity);
        this.loads = new Fifo<>(loadsIssued, loadAcks, capacity);
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

    private final class Fifo<T extends Tracked> implements MessagePassingQueue.Consumer<T> {
        private final SpscArrayQueue<T> in;
        private final SpscArrayQueue<T> out;
        private final Tracked[] items;
        private final int mask;
        private long head;
        private long tail;

        Fifo(SpscArrayQueue<T> in, SpscArrayQueue<T> out, int capacity) {
            this.in = in;
            this.out = out;
            int cap = Integer.highestOneBit(Math.max(2, capacity) * 2 - 1);
            this.items = new Tracked[cap];
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
            int work = in.drain(this, items.length);
            if (head == tail) {
                return work;
            }
            long now = clock.getAsLong();
            for (long i = head; i < tail; i++) {
                items[(int) (i & mask)].onPoll(runtime, now);
            }
            while (head != tail) {
                Tracked item = items[(int) (head & mask)];
                int status = item.finalRecorded || item.submitError == 0
                    ? runtime.queryEventStatus(item.finalEvent) : item.submitError;
                if (status == 0 && item.submitError != 0) {
                    status = item.submitError; // queued copies drained; now report the submission failure
                }
                if (status == CudaError.NOT_READY.code()) {
                    break;
                }
                if (status == 0) {
                    status = item.statusAfterFinal(runtime);
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
                    throw new IllegalStateException("ack queue full: more items in flight than slots");
                }
                work++;
            }
            return work;
        }
    }
}
