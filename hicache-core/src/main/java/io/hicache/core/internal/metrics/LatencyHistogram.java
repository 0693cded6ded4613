package io.hicache.core.internal.metrics;

import io.hicache.core.metrics.MetricsSnapshot;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A log-linear histogram of non-negative nanosecond values: 8 sub-buckets per power of two, so a
 * percentile is within 12.5% of the recorded value. One writing thread; any thread reads. A record
 * updates a bucket, the maximum and the total, so it is bracketed by a sequence lock ({@link #version} odd
 * while a record is being written): readers retry until they read an even, unchanged version, so a reader
 * never sees the maximum of a record but not its count. No allocation after construction. {@link #view()} is the
 * read-only face handed out through the public API.
 */
public final class LatencyHistogram {
    private static final int SUB_BITS = 3;
    private static final int SUB = 1 << SUB_BITS;
    private static final int BUCKETS = 64 * SUB;
    private static final VarHandle ARRAY = MethodHandles.arrayElementVarHandle(long[].class);

    private final long[] counts = new long[BUCKETS];
    private volatile long version;
    private volatile long total;
    private volatile long max;
    private volatile long sum;
    private final MetricsSnapshot.LatencyView view = new View();

    /** The read-only view of this histogram: always the same object. Any thread. */
    public MetricsSnapshot.LatencyView view() {
        return view;
    }

    /** Records one value (negative values count as 0). Single writer. */
    public void record(long valueNs) {
        long v = Math.max(0, valueNs);
        int idx = index(v);
        long ver = version;
        version = ver + 1;
        VarHandle.storeStoreFence();
        ARRAY.setRelease(counts, idx, (long) ARRAY.getOpaque(counts, idx) + 1);
        if (v > max) {
            max = v;
        }
        sum = sum + v;
        total = total + 1;
        version = ver + 2;
    }

    /** Number of values recorded. */
    public long count() {
        while (true) {
            long ver = version;
            long n = total;
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return n;
            }
            Thread.onSpinWait();
        }
    }

    /** Sum of the values recorded (negative values counted as 0). */
    public long sum() {
        while (true) {
            long ver = version;
            long s = sum;
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return s;
            }
            Thread.onSpinWait();
        }
    }

    /** Largest value recorded, 0 if none. */
    public long max() {
        while (true) {
            long ver = version;
            long m = max;
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return m;
            }
            Thread.onSpinWait();
        }
    }

    /**
     * The value at quantile {@code q} in [0, 1]: the upper bound of the bucket that holds it, capped at
     * {@link #max()}; 0 when empty.
     */
    public long quantile(double q) {
        while (true) {
            long ver = version;
            long value = quantileUnchecked(q);
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return value;
            }
            Thread.onSpinWait();
        }
    }

    private long quantileUnchecked(double q) {
        long n = total;
        if (n == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(q * n));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += (long) ARRAY.getAcquire(counts, i);
            if (seen >= rank) {
                return Math.min(upperBound(i), max);
            }
        }
        return max;
    }

    static int index(long v) {
        if (v < SUB) {
            return (int) v;
        }
        int log = 63 - Long.numberOfLeadingZeros(v);
        int sub = (int) ((v >>> (log - SUB_BITS)) & (SUB - 1));
        return (log - SUB_BITS + 1) * SUB + sub;
    }

    static long upperBound(int index) {
        if (index < SUB) {
            return index;
        }
        int log = index / SUB + SUB_BITS - 1;
        int sub = index % SUB;
        long base = 1L << log;
        long step = 1L << (log - SUB_BITS);
        return base + (sub + 1) * step - 1;
    }

    /** Reads only; a caller cannot reach the histogram through it. */
    private final class View implements MetricsSnapshot.LatencyView {
        @Override
        public long count() {
            return LatencyHistogram.this.count();
        }

        @Override
        public long sumNs() {
            return LatencyHistogram.this.sum();
        }

        @Override
        public long maxNs() {
            return LatencyHistogram.this.max();
        }

        @Override
        public long quantileNs(double q) {
            return LatencyHistogram.this.quantile(q);
        }
    }
}
