package io.hicache.core.lincheck;

import io.hicache.core.internal.metrics.LatencyHistogram;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.jetbrains.lincheck.datastructures.LongGen;
import org.junit.jupiter.api.Test;

/**
 * Lincheck model check of {@link LatencyHistogram}: the scheduler records (single writer), reporters read count,
 * max and quantiles from other threads. Every read must match some linearization of the records.
 */
@Param(name = "value", gen = LongGen.class, conf = "1:40")
public class LatencyHistogramLincheckTest {
    private final LatencyHistogram histogram = new LatencyHistogram();

    @Operation(nonParallelGroup = "writer")
    public void record(@Param(name = "value") long valueNs) {
        histogram.record(valueNs);
    }

    @Operation
    public long count() {
        return histogram.count();
    }

    @Operation
    public long max() {
        return histogram.max();
    }

    @Operation
    public long p50() {
        return histogram.quantile(0.5);
    }

    @Operation
    public long p100() {
        return histogram.quantile(1.0);
    }

    @Test
    void modelCheck() {
        new ModelCheckingOptions().iterations(20).invocationsPerIteration(300).threads(2).actorsPerThread(3)
            .check(getClass());
    }
}
