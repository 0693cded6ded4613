package io.hicache.bench;

import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.SubmitterAgent;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * The submitter's work per layer: the forward thread's target hook for layer {@code l} followed by one
 * {@link SubmitterAgent#doWork()} that takes the hook off the ring, makes the backup stream wait for the
 * layer's event, plans the coalesced device-to-host copies of every page of the forward's backup and issues
 * them. On {@link NoOpCudaRuntime}, so the score is the library's cost (the runtime does nothing) and
 * {@code copies} counts the copy ranges issued. One invocation is the {@value #LAYERS} layers of one forward
 * carrying one backup of {@code pages} pages; reserving before and sealing, commit and eviction after are
 * untimed. {@code SCATTERED} hands device pages out in a shuffled order (no two adjacent); host pages are
 * contiguous in both layouts.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SubmissionBenchmark {
    static final int LAYERS = 80;

    /** Copy ranges issued and layers submitted so far; {@code copies / layers} is copies per layer. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Copies {
        public long copies;
        public long layers;
    }

    /** Device page placement. */
    public enum Placement { CONTIGUOUS, SCATTERED }

    @Param({"1", "16", "256", "4096"})
    public int pages;

    @Param({"CONTIGUOUS", "SCATTERED"})
    public Placement placement;

    @Param({"true", "false"})
    public boolean coalesce;

    private ControllerRig rig;
    private NoOpCudaRuntime runtime;
    private SubmitterAgent submitter;
    private ForwardHandle handle;
    private long copiesBefore;
    private long copiesTotal;
    private long layersTotal;
    private final TimedAllocation.Meter meter = new TimedAllocation.Meter();

    @Setup(Level.Trial)
    public void build() {
        rig = new ControllerRig(ControllerRig.Runtime.NOOP, 1, LAYERS, 0, 16, 2 * pages + 64, pages, 2, 2, coalesce);
        if (placement == Placement.SCATTERED) {
            rig.scatterDevicePages(42);
        }
        runtime = (NoOpCudaRuntime) rig.runtimes[0];
        submitter = rig.controllers[0].submitterAgent();
    }

    @TearDown(Level.Trial)
    public void close() {
        rig.close();
    }

    @Setup(Level.Iteration)
    public void resetMeters() {
        meter.reset();
        copiesTotal = 0;
        layersTotal = 0;
    }

    @Setup(Level.Invocation)
    public void begin() {
        rig.insertAndReserve(pages, false);
        handle = rig.beginForward()[0];
        copiesBefore = runtime.copiesIssued();
        meter.start();
    }

    @TearDown(Level.Invocation)
    public void end() {
        meter.stop(LAYERS);
        copiesTotal += runtime.copiesIssued() - copiesBefore;
        layersTotal += LAYERS;
        handle.endForward();
        handle = null;
        rig.runAgentsUntilAcked();
        rig.pollUntilRetired();
        rig.retireAndEvict(pages);
    }

    @Benchmark
    @OperationsPerInvocation(LAYERS)
    public int submitLayer(TimedAllocation alloc, Copies copies) throws Exception {
        alloc.publish(meter);
        copies.copies = copiesTotal;
        copies.layers = layersTotal;
        ForwardHandle h = handle;
        SubmitterAgent s = submitter;
        int work = 0;
        for (int l = 0; l < LAYERS; l++) {
            h.targetLayerStored(l);
            work += s.doWork();
        }
        return work;
    }
}
