package io.hicache.core.lincheck;

import org.jctools.queues.SpscArrayQueue;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

import java.util.ArrayDeque;

/**
 * Lincheck model check of the ack hand-off the controller uses between its agents and the scheduler: a JCTools
 * {@link SpscArrayQueue} with the capacity the controller gives it, one producer (the completion agent) and one
 * consumer (the scheduler's {@code poll()}), checked against a bounded FIFO as the sequential specification.
 * {@code drain(consumer, limit)} is not one atomic step but a series of polls (a concurrent offer may succeed
 * half-way through it), so only {@code offer} and {@code poll} are checked as operations.
 */
@Param(name = "item", gen = IntGen.class, conf = "1:9")
public class AckQueueLincheckTest {
    static final int CAPACITY = 4;

    private final SpscArrayQueue<Integer> queue = new SpscArrayQueue<>(CAPACITY);

    @Operation(nonParallelGroup = "producer")
    public boolean offer(@Param(name = "item") int item) {
        return queue.offer(item);
    }

    @Operation(nonParallelGroup = "consumer")
    public Integer poll() {
        return queue.poll();
    }

    @Test
    void modelCheck() {
        new ModelCheckingOptions().iterations(30).invocationsPerIteration(500).threads(2).actorsPerThread(4)
            .sequentialSpecification(Spec.class).check(getClass());
    }

    /** A plain bounded FIFO with the queue's capacity. */
    public static final class Spec {
        private final ArrayDeque<Integer> q = new ArrayDeque<>();

        public boolean offer(int item) {
            if (q.size() == CAPACITY) {
                return false;
            }
            q.add(item);
            return true;
        }

        public Integer poll() {
            return q.poll();
        }
    }
}
