package io.hicache.core.internal;

import java.lang.management.ManagementFactory;

/**
 * Bytes allocated by the calling thread, from {@code com.sun.management.ThreadMXBean}. Allocation regression
 * tests read it around a large loop after warm-up and keep the minimum over a few rounds, so a one-off
 * allocation by the JIT or class loading in one round does not fail the test; the counts are exact (TLAB
 * bumps included), not sampled, and nothing here depends on timing. Test utility; any thread.
 */
public final class AllocationMeter {
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private AllocationMeter() {
    }

    /** Whether the JVM supports per-thread allocation counting (HotSpot does by default). */
    public static boolean supported() {
        return THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled();
    }

    /** Bytes the calling thread has allocated so far. */
    public static long threadAllocatedBytes() {
        return THREADS.getCurrentThreadAllocatedBytes();
    }

    /** A loop body measured by {@link #minBytes}. */
    @FunctionalInterface
    public interface Loop {
        /** Runs the measured work once (typically a large loop). */
        void run();
    }

    /**
     * Runs {@code body} {@code warmups} times unmeasured, then {@code rounds} times measured; returns the
     * fewest bytes one measured round allocated.
     */
    public static long minBytes(int warmups, int rounds, Loop body) {
        for (int i = 0; i < warmups; i++) {
            body.run();
        }
        long min = Long.MAX_VALUE;
        for (int i = 0; i < rounds; i++) {
            long before = threadAllocatedBytes();
            body.run();
            min = Math.min(min, threadAllocatedBytes() - before);
        }
        return min;
    }
}
