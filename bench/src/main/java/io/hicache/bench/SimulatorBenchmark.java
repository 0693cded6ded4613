package io.hicache.bench;

import io.hicache.sim.BackupMode;
import io.hicache.sim.CacheOnlyEngine;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.engine.ServingEngine;
import io.hicache.sim.trace.TraceSource;
import org.openjdk.jmh.annotations.AuxCounters;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The simulator on the whole bundled trace with the default configuration (80-layer Llama-3-70B preset, token
 * level, default device and host capacities): the timed engine driving the real controller in layered mode
 * (seconds per whole replay; {@code events} = simulated device operations completed, per second), and the
 * cache-only engine (the tree and host tier without copies) beside it.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 2)
@Measurement(iterations = 3)
@Fork(1)
public class SimulatorBenchmark {

    /** Requests replayed and simulated device events completed; reported per second. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Counters {
        public long requests;
        public long events;
    }

    private TraceSource trace;
    private SimConfig config;

    @Setup(Level.Trial)
    public void load() {
        Path root = RadixReplayBenchmark.locateTrace().getParent().getParent();
        trace = TraceSource.parse(TraceSource.BUNDLED_TRACE, root, root, Long.MAX_VALUE);
        config = SimConfig.defaults(trace.blockSize()).withCacheOnly(true);
    }

    @Benchmark
    public SimResult layeredWholeTrace(Counters counters) {
        ServingEngine engine = new ServingEngine();
        SimResult r = engine.run(config.withCacheOnly(false).withBackupMode(BackupMode.LAYERED), trace,
            ProgressListener.NONE);
        counters.requests += r.requests();
        counters.events += engine.lastRun().deviceOpsCompleted();
        return r;
    }

    @Benchmark
    public SimResult cacheOnlyWholeTrace(Counters counters) {
        SimResult r = new CacheOnlyEngine().run(config, trace, ProgressListener.NONE);
        counters.requests += r.requests();
        return r;
    }
}
