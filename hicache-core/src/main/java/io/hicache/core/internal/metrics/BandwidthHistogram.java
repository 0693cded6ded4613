package io.hicache.core.internal.metrics;

import io.hicache.core.metrics.MetricsSnapshot;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A fixed-bucket histogram of transfer bandwidths in GB/s (10^9 bytes per second): one sample per transfer, its
 * bytes over its copy time. The buckets are SGLang's for its {@code prefetch_bandwidth} and {@code backup_bandwidth}
 * histograms (upper bounds 0.1, 0.5, 1, 5, 10, 50 and 100 GB/s, then +Inf), so the same {@code le} series line up.
 *
 * <p>One writing thread (the scheduler); any thread reads. A record updates a bucket, the count and the sum, so it is
 * bracketed by a sequence lock ({@link #version} odd while a record is being written), as in
 * {@link LatencyHistogram}: readers retry until they read an even, unchanged version, so a reader never sees a
 * bucket's count without the matching total. No allocation after construction; a read never allocates.
 * {@link #view()} is the read-only face handed out through the public API.
 */
public final class BandwidthHistogram {
    /** Upper bounds of the finite buckets, GB/s; a last bucket, +Inf, holds the rest. */
    private static final double[] BOUNDS = {0.1, 0.5, 1, 5, 10, 50, 100};
    private static final VarHandle ARRAY = MethodHandles.arrayElementVarHandle(long[].class);

    /** Samples per bucket, not cumulative: {@code counts[i]} holds values in (BOUNDS[i-1], BOUNDS[i]]. */
    private final long[] counts = new long[BOUNDS.length + 1];
    private volatile long version;
    private volatile long total;
    /** The sum of the samples in GB/s, as {@link Double#doubleToRawLongBits} (single writer). */
    private volatile long sumBits;
    private final MetricsSnapshot.BandwidthView view = new View();

    /**
     * Records one transfer of {@code bytes} that took {@code nanos}. Bytes per nanosecond are GB/s. A transfer with
     * no bytes or no measured time records nothing (its bandwidth is undefined). Single writer.
     *
     * @return whether a sample was recorded
     */
    public boolean record(long bytes, long nanos) {
        if (bytes <= 0 || nanos <= 0) {
            return false;
        }
        double gbps = (double) bytes / nanos;
        int idx = bucketOf(gbps);
        long ver = version;
        version = ver + 1;
        VarHandle.storeStoreFence();
        ARRAY.setRelease(counts, idx, (long) ARRAY.getOpaque(counts, idx) + 1);
        sumBits = Double.doubleToRawLongBits(Double.longBitsToDouble(sumBits) + gbps);
        total = total + 1;
        version = ver + 2;
        return true;
    }

    static int bucketOf(double gbps) {
        for (int i = 0; i < BOUNDS.length; i++) {
            if (gbps <= BOUNDS[i]) {
                return i;
            }
        }
        return BOUNDS.length;
    }

    /** The read-only view of this histogram: always the same object. Any thread. */
    public MetricsSnapshot.BandwidthView view() {
        return view;
    }

    /** Buckets, the +Inf one included. */
    public int buckets() {
        return BOUNDS.length + 1;
    }

    /** A bucket's upper bound in GB/s ({@code +Inf} for the last). */
    public double upperBound(int bucket) {
        if (bucket < 0 || bucket > BOUNDS.length) {
            throw new IndexOutOfBoundsException("bucket " + bucket + " outside [0, " + (BOUNDS.length + 1) + ")");
        }
        return bucket == BOUNDS.length ? Double.POSITIVE_INFINITY : BOUNDS[bucket];
    }

    /** Samples at or below the bucket's upper bound. Any thread. */
    public long cumulativeCount(int bucket) {
        upperBound(bucket); // checks the index
        while (true) {
            long ver = version;
            long n = 0;
            for (int i = 0; i <= bucket; i++) {
                n += (long) ARRAY.getAcquire(counts, i);
            }
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return n;
            }
            Thread.onSpinWait();
        }
    }

    /** Samples recorded. Any thread. */
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

    /** Sum of the samples, GB/s. Any thread. */
    public double sumGbps() {
        while (true) {
            long ver = version;
            long bits = sumBits;
            VarHandle.loadLoadFence();
            if ((ver & 1) == 0 && ver == version) {
                return Double.longBitsToDouble(bits);
            }
            Thread.onSpinWait();
        }
    }

    /** Reads only; a caller cannot reach the histogram through it. */
    private final class View implements MetricsSnapshot.BandwidthView {
        @Override
        public int buckets() {
            return BandwidthHistogram.this.buckets();
        }

        @Override
        public double upperBound(int bucket) {
            return BandwidthHistogram.this.upperBound(bucket);
        }

        @Override
        public long cumulativeCount(int bucket) {
            return BandwidthHistogram.this.cumulativeCount(bucket);
        }

        @Override
        public long count() {
            return BandwidthHistogram.this.count();
        }

        @Override
        public double sumGbps() {
            return BandwidthHistogram.this.sumGbps();
        }
    }
}
