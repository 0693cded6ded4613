package io.hicache.core.internal.metrics;

import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.core.AbortReason;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A controller's counters, readable from any thread without locks.
 *
 * <p>Every counter has one writing thread (see {@link Metric}); writers use {@link #add} (a plain read plus a
 * release store: no atomic read-modify-write is needed with a single writer), readers use {@link #get}
 * (acquire). Nothing allocates after construction except {@link #snapshot()}. {@link #view()} is the read-only face
 * the public API hands out ({@link io.hicache.core.HiCache#metricsView()}).
 */
public final class HiCacheMetrics {
    private static final VarHandle ARRAY = MethodHandles.arrayElementVarHandle(long[].class);

    private final long[] values = new long[Metric.values().length];
    private final long[] abortedByReason = new long[AbortReason.count()];
    private final long[] fallbackByReason = new long[FallbackReason.values().length];
    private final long[] skippedByReason = new long[io.hicache.core.WritePolicy.SkipReason.count()];
    private final LatencyHistogram commitLatencyNs = new LatencyHistogram();
    private final LatencyHistogram loadLatencyNs = new LatencyHistogram();
    private final BandwidthHistogram backupBandwidth = new BandwidthHistogram();
    private final BandwidthHistogram loadBandwidth = new BandwidthHistogram();
    private final MetricsSnapshot.View view = new View();

    /** Adds {@code delta} to a counter. Only the counter's writing thread may call this. */
    public void add(Metric metric, long delta) {
        int i = metric.ordinal();
        ARRAY.setRelease(values, i, (long) ARRAY.getOpaque(values, i) + delta);
    }

    /** Sets a level (a metric documented as a level, not a counter). Only its writing thread may call this. */
    public void set(Metric metric, long value) {
        ARRAY.setRelease(values, metric.ordinal(), value);
    }

    /** Adds one to a counter. Only the counter's writing thread may call this. */
    public void increment(Metric metric) {
        add(metric, 1);
    }

    /** The counter's current value. Any thread. */
    public long get(Metric metric) {
        return (long) ARRAY.getAcquire(values, metric.ordinal());
    }

    /** Adds one to a counter that several threads write (an atomic increment; off the hot paths). Any thread. */
    public void incrementShared(Metric metric) {
        ARRAY.getAndAdd(values, metric.ordinal(), 1L);
    }

    /** Counts an abort with its reason (scheduler thread). */
    public void countAbort(AbortReason reason) {
        int i = reason.ordinal();
        ARRAY.setRelease(abortedByReason, i, (long) ARRAY.getOpaque(abortedByReason, i) + 1);
        increment(Metric.BACKUPS_ABORTED);
    }

    /** Aborts counted for one reason. Any thread. */
    public long abortedBy(AbortReason reason) {
        return (long) ARRAY.getAcquire(abortedByReason, reason.ordinal());
    }

    /** Counts a fallback entry with its reason (synchronized: the scheduler and the submitter count fallbacks). */
    public synchronized void countFallback(FallbackReason reason) {
        int i = reason.ordinal();
        ARRAY.setRelease(fallbackByReason, i, (long) ARRAY.getOpaque(fallbackByReason, i) + 1);
        increment(Metric.FALLBACK_ENTRIES);
    }

    /** Counts nodes the write policy passed over (scheduler thread). */
    public void countSkipped(io.hicache.core.WritePolicy.SkipReason reason, int nodes) {
        int i = reason.ordinal();
        ARRAY.setRelease(skippedByReason, i, (long) ARRAY.getOpaque(skippedByReason, i) + nodes);
    }

    /** Nodes skipped for one reason. Any thread. */
    public long skippedBy(io.hicache.core.WritePolicy.SkipReason reason) {
        return (long) ARRAY.getAcquire(skippedByReason, reason.ordinal());
    }

    /** Fallback entries counted for one reason. Any thread. */
    public long fallbacksBy(FallbackReason reason) {
        return (long) ARRAY.getAcquire(fallbackByReason, reason.ordinal());
    }

    /** Commit latency: the last layer stored (or the forward's end) to the commit (scheduler writes). */
    public LatencyHistogram commitLatencyNs() {
        return commitLatencyNs;
    }

    /** Load latency: a load's issue to the completion of its copies on this rank (scheduler writes). */
    public LatencyHistogram loadLatencyNs() {
        return loadLatencyNs;
    }

    /** Device-to-host bandwidth, one sample per forward with backups (scheduler writes, at the forward's ack). */
    public BandwidthHistogram backupBandwidth() {
        return backupBandwidth;
    }

    /** Host-to-device bandwidth, one sample per load batch (scheduler writes, at the batch's ack). */
    public BandwidthHistogram loadBandwidth() {
        return loadBandwidth;
    }

    /** The read-only live view: always the same object, so a holder that keeps it weakly keeps it while this lives. */
    public MetricsSnapshot.View view() {
        return view;
    }

    /** A consistent-enough copy of every counter for reports and logs. Allocates; any thread. */
    public MetricsSnapshot snapshot() {
        long[] copy = new long[values.length];
        for (int i = 0; i < copy.length; i++) {
            copy[i] = (long) ARRAY.getAcquire(values, i);
        }
        long[] aborts = new long[abortedByReason.length];
        for (int i = 0; i < aborts.length; i++) {
            aborts[i] = (long) ARRAY.getAcquire(abortedByReason, i);
        }
        long[] fallbacks = new long[fallbackByReason.length];
        for (int i = 0; i < fallbacks.length; i++) {
            fallbacks[i] = (long) ARRAY.getAcquire(fallbackByReason, i);
        }
        long[] skips = new long[skippedByReason.length];
        for (int i = 0; i < skips.length; i++) {
            skips[i] = (long) ARRAY.getAcquire(skippedByReason, i);
        }
        return new MetricsSnapshot(copy, aborts, fallbacks, skips, commitLatencyNs.count(), commitLatencyNs.quantile(0.5),
            commitLatencyNs.quantile(0.99), commitLatencyNs.max());
    }

    /** Reads only; a caller cannot reach the mutable metrics through it. */
    private final class View implements MetricsSnapshot.View {
        @Override
        public long get(Metric metric) {
            return HiCacheMetrics.this.get(nonNull(metric, "metric"));
        }

        @Override
        public long abortedBy(AbortReason reason) {
            return HiCacheMetrics.this.abortedBy(nonNull(reason, "reason"));
        }

        @Override
        public long fallbacksBy(FallbackReason reason) {
            return HiCacheMetrics.this.fallbacksBy(nonNull(reason, "reason"));
        }

        @Override
        public long skippedBy(io.hicache.core.WritePolicy.SkipReason reason) {
            return HiCacheMetrics.this.skippedBy(nonNull(reason, "reason"));
        }

        @Override
        public MetricsSnapshot.LatencyView commitLatency() {
            return commitLatencyNs.view();
        }

        @Override
        public MetricsSnapshot.LatencyView loadLatency() {
            return loadLatencyNs.view();
        }

        @Override
        public MetricsSnapshot.BandwidthView backupBandwidth() {
            return backupBandwidth.view();
        }

        @Override
        public MetricsSnapshot.BandwidthView loadBandwidth() {
            return loadBandwidth.view();
        }
    }

    private static <T> T nonNull(T value, String name) {
        if (value == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        return value;
    }
}
