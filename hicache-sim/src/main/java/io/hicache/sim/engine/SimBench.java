package io.hicache.sim.engine;

import io.hicache.sim.BackupMode;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;

/**
 * The simulator benchmark behind {@code bench/sim-bench.sh}: replays a trace (default: the whole bundled
 * trace) with an 80-layer model ({@code llama3-70b}) in layered mode on the timed engine and prints the
 * wall time and the simulated device events (operations completed) per second. Not a test; single-threaded.
 *
 * <p>Arguments: {@code [TRACE [LIMIT]]}; the repository root comes from the {@code hicache.repo.root}
 * system property (default: the working directory).
 */
public final class SimBench {
    private SimBench() {
    }

    /** Runs the benchmark; exits non-zero if the run fails. */
    public static void main(String[] args) {
        Path root = Paths.get(System.getProperty("hicache.repo.root", "")).toAbsolutePath();
        String spec = args.length > 0 ? args[0] : TraceSource.BUNDLED_TRACE;
        long limit = args.length > 1 ? Long.parseLong(args[1]) : Long.MAX_VALUE;
        TraceSource trace = TraceSource.parse(spec, Paths.get("").toAbsolutePath(), root, limit);
        SimConfig config = SimConfig.defaults(trace.format().blockSize()).withBackupMode(BackupMode.LAYERED);
        if (config.model() != ModelPreset.LLAMA3_70B || config.model().layers() != 80) {
            throw new IllegalStateException("the benchmark expects the 80-layer default model, got " + config.model());
        }
        ServingEngine engine = new ServingEngine();
        long start = System.nanoTime();
        SimResult r = engine.run(config, trace, ProgressListener.NONE);
        double wall = (System.nanoTime() - start) / 1e9;
        ServingEngine.RunStats stats = engine.lastRun();
        System.out.printf(Locale.ROOT, "trace              %s (%d requests)%n", trace.name(), r.requests());
        System.out.printf(Locale.ROOT, "model              %s, %d layers, backup mode %s%n", config.model(),
                config.model().layers(), config.backupMode());
        System.out.printf(Locale.ROOT, "forwards           %d%n", stats.forwards());
        System.out.printf(Locale.ROOT, "simulated seconds  %.1f%n", r.simulatedSeconds());
        System.out.printf(Locale.ROOT, "block hit ratio    %.4f%n", r.blockHitRatio());
        System.out.printf(Locale.ROOT, "device events      %d%n", stats.deviceOpsCompleted());
        System.out.printf(Locale.ROOT, "wall seconds       %.2f%n", wall);
        System.out.printf(Locale.ROOT, "events per second  %.0f%n", stats.deviceOpsCompleted() / wall);
    }
}
