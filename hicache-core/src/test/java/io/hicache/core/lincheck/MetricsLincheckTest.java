package io.hicache.core.lincheck;

import io.hicache.core.AbortReason;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.junit.jupiter.api.Test;

/**
 * Lincheck model check of {@link HiCacheMetrics}: one writer thread (the counters' single writer, enforced by the
 * {@code writer} non-parallel group) against reader threads. Each reader observes one counter, which must be
 * linearizable; a snapshot is documented as "consistent enough" across counters, so it is read per counter here.
 */
public class MetricsLincheckTest {
    private final HiCacheMetrics metrics = new HiCacheMetrics();

    @Operation(nonParallelGroup = "writer")
    public void addSealed() {
        metrics.add(Metric.FORWARDS_SEALED, 3);
    }

    @Operation(nonParallelGroup = "writer")
    public void incrementCommitted() {
        metrics.increment(Metric.BACKUPS_COMMITTED);
    }

    @Operation(nonParallelGroup = "writer")
    public void countLeaseAbort() {
        metrics.countAbort(AbortReason.LEASE_EXPIRED);
    }

    @Operation
    public long sealed() {
        return metrics.get(Metric.FORWARDS_SEALED);
    }

    @Operation
    public long committed() {
        return metrics.get(Metric.BACKUPS_COMMITTED);
    }

    @Operation
    public long leaseAborts() {
        return metrics.abortedBy(AbortReason.LEASE_EXPIRED);
    }

    @Operation
    public long snapshotSealed() {
        return metrics.snapshot().get(Metric.FORWARDS_SEALED);
    }

    @Test
    void modelCheck() {
        new ModelCheckingOptions().iterations(30).invocationsPerIteration(500).threads(3).actorsPerThread(3)
            .check(getClass());
    }
}
