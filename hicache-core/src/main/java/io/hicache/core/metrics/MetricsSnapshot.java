package io.hicache.core.metrics;

import io.hicache.core.AbortReason;

/**
 * An immutable copy of a controller's counters taken by {@link io.hicache.core.HiCache#metrics()}.
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
}
