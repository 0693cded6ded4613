package io.hicache.bench;

import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.jfr.HiCacheEvents;
import jdk.jfr.Recording;
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
 * What the {@code io.hicache} JFR events cost on the hot paths: the target hook ({@code hook}, 80 layers of one
 * forward) and the commit path ({@code pollCommit}, {@value #FORWARDS} acknowledged one-backup forwards committed
 * by {@code poll()}), with no recording ({@code recording=off}) and with a recording of every HiCache event and no
 * threshold ({@code recording=on}: a {@code BackupCommitted} and an {@code AgreementRound} event per commit, the
 * worst case). Same fixtures as {@link HookBenchmark} and {@link CommitBenchmark} on {@link NoOpCudaRuntime};
 * {@code off} should match their figures.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class JfrBenchmark {
    static final int LAYERS = 80;
    static final int FORWARDS = 16;

    /** The flight recording: none, or every HiCache event with no threshold. */
    @State(Scope.Thread)
    public static class Jfr {
        @Param({"off", "on"})
        public String recording;

        private Recording jfr;

        @Setup(Level.Trial)
        public void start() {
            if (recording.equals("on")) {
                jfr = HiCacheEvents.enableAll(new Recording());
                jfr.setToDisk(true);
                jfr.start();
            }
        }

        @TearDown(Level.Trial)
        public void stop() {
            if (jfr != null) {
                jfr.close();
            }
        }
    }

    /** One forward with one 1-page backup, its 80 target hooks timed (as in {@link HookBenchmark}). */
    @State(Scope.Thread)
    public static class Hooks {
        ControllerRig rig;
        ForwardHandle handle;
        final TimedAllocation.Meter meter = new TimedAllocation.Meter();

        @Setup(Level.Trial)
        public void build() {
            rig = new ControllerRig(ControllerRig.Runtime.NOOP, 1, LAYERS, 0, 16, 64, 64, 16, 2, true);
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
            rig.insertAndReserve(1, false);
            handle = rig.beginForward()[0];
            meter.start();
        }

        @TearDown(Level.Invocation)
        public void end() {
            meter.stop(LAYERS);
            handle.endForward();
            handle = null;
            rig.runAgentsUntilAcked();
            rig.pollUntilRetired();
            rig.retireAndEvict(1);
        }
    }

    /** {@value #FORWARDS} acknowledged one-backup forwards, their commit timed (as in {@link CommitBenchmark}). */
    @State(Scope.Thread)
    public static class Commits {
        ControllerRig rig;
        final TimedAllocation.Meter meter = new TimedAllocation.Meter();

        @Setup(Level.Trial)
        public void build() {
            rig = new ControllerRig(ControllerRig.Runtime.NOOP, 1, 4, 0, 16, 4 * FORWARDS, 4 * FORWARDS, 2, FORWARDS,
                true);
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
            rig.forwardAndAck(FORWARDS, 1, 4);
            meter.start();
        }

        @TearDown(Level.Invocation)
        public void end() {
            meter.stop(FORWARDS);
            rig.retireAndEvict(FORWARDS);
        }
    }

    /** 80 target hooks of one forward; the hooks emit no event, so both settings should be equal. */
    @Benchmark
    @OperationsPerInvocation(LAYERS)
    public void hook(Jfr jfr, Hooks s, TimedAllocation alloc) {
        alloc.publish(s.meter);
        ForwardHandle h = s.handle;
        for (int l = 0; l < LAYERS; l++) {
            h.targetLayerStored(l);
        }
    }

    /** {@code poll()} until {@value #FORWARDS} backups committed; per backup. */
    @Benchmark
    @OperationsPerInvocation(FORWARDS)
    public void pollCommit(Jfr jfr, Commits s, TimedAllocation alloc) {
        alloc.publish(s.meter);
        s.rig.pollUntilRetired();
    }
}
