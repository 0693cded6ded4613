package io.hicache.cuda.simulated;

/**
 * One value per {@link SimCounter}, in a {@code long[]}. Not thread-safe: the simulated runtime reads and
 * writes it under its lock. Allocation-free after construction.
 */
final class SimCounters {
    private static final SimCounter[] ALL = SimCounter.values();

    private final long[] values = new long[ALL.length];

    long get(SimCounter counter) {
        return values[counter.ordinal()];
    }

    /** Adds one and returns the new value. */
    long increment(SimCounter counter) {
        return ++values[counter.ordinal()];
    }

    void add(SimCounter counter, long delta) {
        values[counter.ordinal()] += delta;
    }

    void decrement(SimCounter counter) {
        values[counter.ordinal()]--;
    }
}
