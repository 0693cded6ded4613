package io.hicache.core.metrics;

import io.hicache.core.AbortReason;

/**
 * An immutable copy of a controller's counters taken by {@link io.hicache.core.HiCache#metrics()}; {@link View} is
 * the live, allocation-free alternative for meters that read the counters again and again.
 *
 * @param skippedByReason nodes the write policy passed over, by {@link io.hicache.core.WritePolicy.SkipReason} ordinal
 * @param commitCount   commits in the latency histogram
 * @param commitP50Ns   median commit latency
 * @param commitP99Ns   99th percentile commit latency
 * @param commitMaxNs   largest commit latency
 */
public record MetricsSnapshot(long[] values, long[] abortedByReason, long[] fallbackByReason, long[] skippedByReason,
                              long commitCount, long commitP50Ns, long commitP99Ns, long commitMaxNs) {

    /** A counter's value. */
    public long get(Metric metric) {
        return values[metric.ordinal()];
    }

    /** Aborts for one reason. */
    public long abortedBy(AbortReason reason) {
        return abortedByReason[reason.ordinal()];
    }

    /** Fallback entries for one reason. */
    public long fallbacksBy(FallbackReason reason) {
        return fallbackByReason[reason.ordinal()];
    }

    /** Nodes the write policy passed over for one reason (see {@link io.hicache.core.WritePolicy.SkipReason}). */
    public long skippedBy(io.hicache.core.WritePolicy.SkipReason reason) {
        return skippedByReason[reason.ordinal()];
    }

    /** Nodes the write policy passed over, all reasons. */
    public long skipped() {
        long sum = 0;
        for (long v : skippedByReason) {
            sum += v;
        }
        return sum;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("MetricsSnapshot{");
        for (Metric m : Metric.all()) {
            sb.append(m.name().toLowerCase(java.util.Locale.ROOT)).append('=').append(values[m.ordinal()]).append(", ");
        }
        return sb.append("commit_p50_ns=").append(commitP50Ns).append(", commit_p99_ns=").append(commitP99Ns)
            .append(", commit_max_ns=").append(commitMaxNs).append('}').toString();
    }

    /**
     * A live, read-only view of one cache's counters, reasons, latency and bandwidth histograms, from
     * {@link io.hicache.core.HiCache#metricsView()}: what a snapshot copies, read in place, so a meter registry that
     * reads each value on every scrape allocates nothing and adds nothing to the cache's paths.
     *
     * <p><b>Threads.</b> Any thread may read, at any time, concurrently with the cache's threads (a registry reads
     * from its own scrape or publishing thread). Every value has a single writer inside the cache (named on
     * {@link Metric}); a read is a racy but safe acquire load of a value that only that writer stores, so it returns
     * the current value or one a little older, never a torn one. Values are read one at a time: two reads are not a
     * consistent pair (a counter read after another may include later work). Each histogram's own reads are
     * consistent (a sequence lock: a histogram's count never runs ahead of its sum or buckets).
     *
     * <p><b>Lifetime.</b> The view is one object for the cache's life, owned by the cache; a holder that keeps it
     * weakly (as Micrometer's function meters do) keeps it exactly as long as the cache is reachable. After
     * {@link io.hicache.core.HiCache#close()} it keeps answering with the final values (nothing changes them any
     * more). Its methods throw only {@link IllegalArgumentException} for a null argument.
     */
    public interface View {
        /** A counter's or level's current value. */
        long get(Metric metric);

        /** Aborts for one reason. */
        long abortedBy(AbortReason reason);

        /** Fallback entries for one reason. */
        long fallbacksBy(FallbackReason reason);

        /** Nodes the write policy passed over for one reason. */
        long skippedBy(io.hicache.core.WritePolicy.SkipReason reason);

        /** Commit latency: the last layer stored (or the forward's end) to the commit. */
        LatencyView commitLatency();

        /** Load latency: a load's issue to the completion of its copies on this rank. */
        LatencyView loadLatency();

        /**
         * Device-to-host bandwidth, one sample per forward with backups: the bytes copied for the forward (target
         * and draft) over the time from its first copy's submission to the completion of its last. Copied layer by
         * layer, that time includes waiting for the forward's later layers, so the sample is the backup's effective
         * throughput, at most the link's; copied after the forward (all layers, fallback, write-back), it is the
         * copies' own time. Failed or aborted-by-error forwards record nothing.
         */
        BandwidthView backupBandwidth();

        /**
         * Host-to-device bandwidth, one sample per load batch ({@code startLoading}): its bytes over the time from
         * its issue to the completion of its copies (which start once the compute stream reaches the issue point).
         * Failed batches record nothing.
         */
        BandwidthView loadBandwidth();
    }

    /**
     * A live latency histogram in nanoseconds (log-linear buckets, a quantile within 12.5% of the recorded value).
     * Any thread; reads allocate nothing and are consistent with each other only one call at a time.
     */
    public interface LatencyView {
        /** Values recorded. */
        long count();

        /** Sum of the values, nanoseconds. */
        long sumNs();

        /** Largest value, nanoseconds (0 when empty). */
        long maxNs();

        /**
         * The value at quantile {@code q} in [0, 1], nanoseconds: the upper bound of its bucket, capped at the
         * maximum; 0 when empty.
         */
        long quantileNs(double q);
    }

    /**
     * A live fixed-bucket histogram of transfer bandwidths in GB/s (10^9 bytes per second), with SGLang's buckets
     * for {@code sglang:prefetch_bandwidth} and {@code sglang:backup_bandwidth}: upper bounds 0.1, 0.5, 1, 5, 10,
     * 50, 100 and +Inf. A transfer whose measured time is 0 is not sampled. Any thread; reads allocate nothing.
     */
    public interface BandwidthView {
        /** Buckets, the last (+Inf) included; fixed for the cache's life. */
        int buckets();

        /**
         * A bucket's upper bound, GB/s, inclusive; {@link Double#POSITIVE_INFINITY} for the last.
         *
         * @throws IndexOutOfBoundsException if {@code bucket} is not in [0, {@link #buckets()})
         */
        double upperBound(int bucket);

        /**
         * Samples at or below {@link #upperBound(int) upperBound(bucket)}, as a Prometheus {@code le} bucket counts
         * them; the last bucket's equals {@link #count()} when read without a record in between.
         *
         * @throws IndexOutOfBoundsException if {@code bucket} is not in [0, {@link #buckets()})
         */
        long cumulativeCount(int bucket);

        /** Samples recorded. */
        long count();

        /** Sum of the samples, GB/s (divide by {@link #count()} for the mean). */
        double sumGbps();
    }
}
