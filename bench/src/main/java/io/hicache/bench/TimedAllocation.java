package io.hicache.bench;

import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

import java.lang.management.ManagementFactory;

/**
 * Bytes allocated by the benchmark thread inside the timed part of a benchmark that prepares each invocation
 * in an untimed {@code Level.Invocation} fixture. {@code -prof gc} counts the fixture's allocation too
 * (reservations, tree inserts); {@code timedBytes / timedOps} is the hot path's own figure, reported by
 * {@code bench/run} as "timed B/op". The fixture calls {@link Meter#start()} last in its setup and
 * {@link Meter#stop(int)} first in its teardown; the benchmark method publishes the meter's running totals
 * (since the iteration began; they lag one invocation) into this counter state. One per benchmark thread.
 */
@State(Scope.Thread)
@AuxCounters(AuxCounters.Type.EVENTS)
public class TimedAllocation {
    /** Bytes allocated in timed sections so far. */
    public long timedBytes;
    /** Benchmark operations in timed sections so far. */
    public long timedOps;

    void publish(Meter meter) {
        timedBytes = meter.bytes;
        timedOps = meter.ops;
    }

    /** Running totals kept by a benchmark's fixtures; not a JMH state. */
    static final class Meter {
        private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        private long startBytes;
        long bytes;
        long ops;

        /** Forgets the totals (call from a {@code Level.Iteration} setup so warm-up is not counted). */
        void reset() {
            bytes = 0;
            ops = 0;
        }

        void start() {
            startBytes = THREADS.getCurrentThreadAllocatedBytes();
        }

        void stop(int operations) {
            bytes += THREADS.getCurrentThreadAllocatedBytes() - startBytes;
            ops += operations;
        }
    }
}
