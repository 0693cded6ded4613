package io.hicache.sim.engine;

import io.hicache.sim.BackupMode;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Locale;

/**
 * The simulator benchmark behind {@code bench/sim-bench.sh}: replays a trace (default: the whole bundled
 * trace) with an 80-layer model ({@code llama3-70b}, TP 4) in layered mode on the timed engine, once on one
 * instance and once on a fleet of 8 behind the cache-aware router, and prints for each the wall time and the
 * simulated device events (operations completed) per second. Not a test; the fleet uses the available cores.
 *
 * <p>Arguments: {@code [TRACE [LIMIT]]}; the repository root comes from the {@code hicache.repo.root}
 * system property (default: the working directory).
 */
public final class SimBench {
    private SimBench() {
    }

    /** Runs the benchmark; exits non-zero if a run fails. */
    public static void main(String[] args) {
        Path root = Paths.get(System.getProperty("hicache.repo.root", "")).toAbsolutePath();
        String spec = args.length > 0 ? args[0] : TraceSource.BUNDLED_TRACE;
        long limit = args.length > 1 ? Long.parseLong(args[1]) : Long.MAX_VALUE;
        TraceSource trace = TraceSource.parse(spec, Paths.get("").toAbsolutePath(), root, limit);
        SimConfig defaults = SimConfig.defaults(trace.blockSize()).withBackupMode(BackupMode.LAYERED);
        if (defaults.model() != ModelPreset.LLAMA3_70B || defaults.model().layers() != 80) {
            throw new IllegalStateException("the benchmark expects the 80-layer default model, got " + defaults.model());
        }
        ServingConfig one = ServingConfig.defaults(defaults.model(), defaults.gpu());
        // the device capacity the command line gives an instance: its GPUs' KV room after the weights
        long device = ServingConfig.kvRoomPromptTokens(defaults.model(), defaults.gpu(), one.tp(), 1)
                * defaults.blockTokens() / trace.blockSize();
        SimConfig config = defaults.withCapacities(device, device * SimConfig.DEFAULT_HOST_RATIO);
        run("one instance", config, one, trace);
        run("fleet of 8", config, one.withFleet(8, Router.CACHE_AWARE), trace);
    }

    private static void run(String what, SimConfig config, ServingConfig serving, TraceSource trace) {
        ServingEngine engine = new ServingEngine(serving);
        long start = System.nanoTime();
        SimResult r = engine.run(config, trace, ProgressListener.NONE);
        double wall = (System.nanoTime() - start) / 1e9;
        ServingEngine.RunStats stats = engine.lastRun();
        System.out.printf(Locale.ROOT, "== %s: %d x TP %d, router %s%n", what, serving.instances(), serving.tp(),
                serving.router());
        System.out.printf(Locale.ROOT, "trace              %s (%d requests)%n", trace.name(), r.requests());
        System.out.printf(Locale.ROOT, "model              %s, %d layers, backup mode %s%n", config.model(),
                config.model().layers(), config.backupMode());
        System.out.printf(Locale.ROOT, "steps / on device  %d / %d%n", r.serving().steps(), stats.forwards());
        System.out.printf(Locale.ROOT, "simulated seconds  %.1f%n", r.simulatedSeconds());
        System.out.printf(Locale.ROOT, "block hit ratio    %.4f%n", r.blockHitRatio());
        System.out.printf(Locale.ROOT, "TTFT p50 / p99     %.0f / %.0f ms%n", r.serving().ttftMs().p50(),
                r.serving().ttftMs().p99());
        System.out.printf(Locale.ROOT, "device events      %d%n", stats.deviceOpsCompleted());
        System.out.printf(Locale.ROOT, "wall seconds       %.2f%n", wall);
        System.out.printf(Locale.ROOT, "events per second  %.0f%n", stats.deviceOpsCompleted() / wall);
    }
}
