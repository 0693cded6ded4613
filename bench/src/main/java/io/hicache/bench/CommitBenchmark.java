package io.hicache.bench;

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
 * The commit path: {@code poll()} on every rank of a CP group (in-process agreement, ranks stepped one after
 * another by the benchmark thread) draining {@value #FORWARDS} acknowledged forwards of one 1-page backup each
 * and publishing them, until nothing is in flight. The score is per backup committed on the whole group (on
 * every one of its {@code cp} ranks, each rank's poll included). Reservation, forward, copies and completion before, and device
 * eviction after, are untimed; on {@link NoOpCudaRuntime}, whose events are complete at once.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class CommitBenchmark {
    static final int FORWARDS = 16;
    static final int LAYERS = 4;

    @Param({"1", "8"})
    public int cp;

    private ControllerRig rig;
    private final TimedAllocation.Meter meter = new TimedAllocation.Meter();

    @Setup(Level.Trial)
    public void build() {
        rig = new ControllerRig(ControllerRig.Runtime.NOOP, cp, LAYERS, 0, 16, 4 * FORWARDS, 4 * FORWARDS, 2,
            FORWARDS, true);
    }

    @TearDown(Level.Trial)
    public void close() {
        rig.close();
    }

    @Setup(Level.Iteration)
    public void resetMeters() {
        meter.reset();
    }

    @Setup(Level.Invocation)
    public void begin() {
        rig.forwardAndAck(FORWARDS, 1, LAYERS);
        meter.start();
    }

    @TearDown(Level.Invocation)
    public void end() {
        meter.stop(FORWARDS);
        rig.retireAndEvict(FORWARDS);
    }

    /** Polls until every backup committed; the fixture checks they did. */
    @Benchmark
    @OperationsPerInvocation(FORWARDS)
    public void pollCommit(TimedAllocation alloc) {
        alloc.publish(meter);
        rig.pollUntilRetired();
    }
}
