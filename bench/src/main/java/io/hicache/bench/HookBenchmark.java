package io.hicache.bench;

import io.hicache.core.internal.ForwardHandle;
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
 * The per-layer hooks a forward thread calls: {@code targetLayerStored} ({@code hook=TARGET}) and
 * {@code draftLayerStored} ({@code hook=DRAFT}), each recording an event on the compute stream and publishing
 * (layer, event) to the submitter's ring. One invocation is all {@value #LAYERS} hooks of that kind of one
 * forward carrying one 1-page backup with draft KV; the reservation (and, for DRAFT, the target hooks) before
 * it and the other hooks, the end of the forward, copies, commit and eviction after it are untimed fixtures.
 * {@code -prof gc} still counts the fixtures' bytes; the {@code timedBytes / timedOps} counters are the
 * hooks' own.
 *
 * <p>{@code runtime=SIMULATED} includes {@code SimulatedCudaRuntime.recordEvent}, which takes a lock and
 * updates its virtual device; {@code runtime=NOOP} runs on {@link NoOpCudaRuntime}, so the score is the
 * library's own overhead. Single forward thread (the benchmark thread).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class HookBenchmark {
    static final int LAYERS = 80;

    /** Which hook is timed. */
    public enum Hook { TARGET, DRAFT }

    @Param({"SIMULATED", "NOOP"})
    public ControllerRig.Runtime runtime;

    @Param({"TARGET", "DRAFT"})
    public Hook hook;

    private ControllerRig rig;
    private ForwardHandle handle;
    private final TimedAllocation.Meter meter = new TimedAllocation.Meter();

    @Setup(Level.Trial)
    public void build() {
        rig = new ControllerRig(runtime, 1, LAYERS, LAYERS, 16, 64, 64, 16, 2, true);
    }

    @TearDown(Level.Trial)
    public void close() {
        rig.close();
    }

    @Setup(Level.Iteration)
    public void resetMeter() {
        meter.reset();
    }

    @Setup(Level.Invocation)
    public void begin() {
        rig.insertAndReserve(1, true);
        handle = rig.beginForward()[0];
        if (hook == Hook.DRAFT) {
            for (int l = 0; l < LAYERS; l++) {
                handle.targetLayerStored(l);
            }
        }
        meter.start();
    }

    @TearDown(Level.Invocation)
    public void end() {
        meter.stop(LAYERS);
        if (hook == Hook.TARGET) {
            for (int d = 0; d < LAYERS; d++) {
                handle.draftLayerStored(d);
            }
        }
        handle.endForward();
        handle = null;
        rig.runAgentsUntilAcked();
        rig.pollUntilRetired();
        rig.retireAndEvict(1);
    }

    @Benchmark
    @OperationsPerInvocation(LAYERS)
    public void layerStored(TimedAllocation alloc) {
        alloc.publish(meter);
        ForwardHandle h = handle;
        if (hook == Hook.TARGET) {
            for (int l = 0; l < LAYERS; l++) {
                h.targetLayerStored(l);
            }
        } else {
            for (int d = 0; d < LAYERS; d++) {
                h.draftLayerStored(d);
            }
        }
    }
}
