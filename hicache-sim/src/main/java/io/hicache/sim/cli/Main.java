package io.hicache.sim.cli;

import io.hicache.sim.BackupMode;
import io.hicache.sim.DefaultEngineFactory;
import io.hicache.sim.EngineFactory;
import io.hicache.radix.EvictionPolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.sim.ProgressListener;
import io.hicache.core.WritePolicy;
import io.hicache.sim.OptionSpellings;
import io.hicache.sim.Router;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.trace.TraceSource;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Function;

/**
 * The {@code hicache-sim} command line: {@code replay} (one configuration), {@code compare} (backup
 * modes layered, all-layers and none on the same trace), {@code sweep} (a list of host capacities);
 * with no arguments, {@code compare} on the bundled trace writing {@code report.html}.
 *
 * <p>Exit status: 0 success; 1 the run failed (bad trace record, engine failure, I/O); 2 usage
 * (unknown option or preset, bad value, contradictory options), always refused before any work.
 * One invocation per instance, on the calling thread.
 */
@Command(name = "hicache-sim", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = {"Replays request traces through the HiCache radix tree and backup controller.",
                "With no arguments: compare on the bundled trace on a fleet of 8 instances, writing report.html."},
        footer = {"", "Exit status: 0 ok, 1 run failed, 2 usage error."})
public final class Main implements Callable<Integer> {

    /**
     * Where a run reads and writes; tests substitute every part.
     *
     * @param engines  chooses the engine per configuration
     * @param out      results summary
     * @param err      errors and the progress bar
     * @param workDir  relative output paths and traces resolve here
     * @param repoRoot the bundled trace resolves here (and relative traces not found in workDir)
     * @param tty      whether to draw a progress bar
     */
    public record Env(EngineFactory engines, PrintStream out, PrintStream err, Path workDir, Path repoRoot,
                      boolean tty) {
    }

    /** The build's version, from a resource the build fills in (the version is set once, in the root POM). */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws java.io.IOException {
            var props = new java.util.Properties();
            try (var in = Main.class.getResourceAsStream("/io/hicache/sim/version.properties")) {
                if (in != null) {
                    props.load(in);
                }
            }
            return new String[] {"hicache-sim " + props.getProperty("version", "(unknown version)")};
        }
    }

    /** System property the launcher sets to the repository root. */
    public static final String REPO_ROOT_PROPERTY = "hicache.repo.root";
    /** Environment variable that makes a failed run print its exception's stack trace after the message. */
    public static final String DEBUG_ENV = "HICACHE_SIM_DEBUG";
    /** System property with the same effect as {@link #DEBUG_ENV} (tests). */
    public static final String DEBUG_PROPERTY = "hicache.sim.debug";
    /** Report written by the no-argument run. */
    public static final String DEFAULT_HTML = "report.html";

    private final Env env;
    private final String[] args;

    @Spec
    CommandSpec spec;

    private Main(Env env, String[] args) {
        this.env = env;
        this.args = args.clone();
    }

    /** Runs the command line and exits with its status. */
    public static void main(String[] args) {
        String root = System.getProperty(REPO_ROOT_PROPERTY);
        Path workDir = Paths.get("").toAbsolutePath();
        Path repoRoot = root != null ? Paths.get(root).toAbsolutePath() : checkoutOf(codeSource());
        var console = System.console();
        Env env = new Env(new DefaultEngineFactory(), System.out, System.err, workDir,
                repoRoot == null ? workDir : repoRoot, console != null && console.isTerminal());
        System.exit(run(env, args));
    }

    /** Where this class was loaded from (the jar, or a classes directory), or null when unknown. */
    private static Path codeSource() {
        try {
            var src = Main.class.getProtectionDomain().getCodeSource();
            return src == null ? null : Paths.get(src.getLocation().toURI());
        } catch (java.net.URISyntaxException | RuntimeException e) {
            return null;
        }
    }

    /**
     * The checkout {@code location} was built in (the jar {@code ROOT/hicache-sim/target/hicache-sim-all.jar} or the
     * directory {@code ROOT/hicache-sim/target/classes}): the nearest of its ancestors, at most three levels up, that
     * holds the bundled trace; null when none does. So the jar run directly, from any directory, still finds the
     * bundled trace, as the launcher's {@value #REPO_ROOT_PROPERTY} does.
     */
    static Path checkoutOf(Path location) {
        Path p = location == null ? null : location.toAbsolutePath().getParent();
        for (int up = 0; p != null && up < 3; up++, p = p.getParent()) {
            if (Files.isRegularFile(p.resolve(TraceSource.BUNDLED_TRACE))) {
                return p;
            }
        }
        return null;
    }

    /** Runs the command line in {@code env}; returns the exit status. */
    public static int run(Env env, String... args) {
        return commandLine(new Main(env, args)).execute(args);
    }

    /** The command line with its subcommands, converters and handlers, for {@code env} (tests read its options). */
    static CommandLine commandLine(Env env) {
        return commandLine(new Main(env, new String[0]));
    }

    private static CommandLine commandLine(Main main) {
        Env env = main.env;
        CommandLine cl = new CommandLine(main);
        cl.addSubcommand("replay", new Replay(main));
        cl.addSubcommand("compare", new Compare(main));
        cl.addSubcommand("sweep", new Sweep(main));
        cl.addSubcommand("keys", new KeysCommand(env));
        cl.addSubcommand("gen-multiturn", new GenerateMultiTurn(env));
        cl.addSubcommand("kv-events", new KvEventsCommand(env));
        cl.addSubcommand("convert", new ConvertCommand(env));
        TraceSchemaHelp.install(cl, "replay", "compare", "sweep", "convert");
        configure(cl, env);
        return cl;
    }

    /** Converters, output streams and error handlers of a command line. */
    private static void configure(CommandLine cl, Env env) {
        register(cl, ModelPreset.class, ModelPreset::byName);
        register(cl, GpuPreset.class, name -> {
            String notice = GpuPreset.deprecation(name);
            if (notice != null) {
                env.err().println("hicache-sim: warning: " + notice);
            }
            return GpuPreset.byName(name);
        });
        register(cl, WritePolicy.class, OptionSpellings::writePolicy);
        register(cl, io.hicache.core.LoadOverlap.class, OptionSpellings::loadOverlap);
        register(cl, BackupMode.class, BackupMode::byName);
        register(cl, EvictionPolicy.class, OptionSpellings::eviction);
        register(cl, OwnerLanes.class, OptionSpellings::lanes);
        register(cl, Router.class, Router::byName);
        cl.setOut(new PrintWriter(env.out(), true, StandardCharsets.UTF_8));
        cl.setErr(new PrintWriter(env.err(), true, StandardCharsets.UTF_8));
        cl.setParameterExceptionHandler((ex, a) -> UsageErrors.report(env.err(), ex));
        cl.setExecutionExceptionHandler((ex, c, parseResult) -> {
            if (ex instanceof ParameterException pe) {
                throw pe;
            }
            env.err().println("hicache-sim: error: " + ex.getMessage());
            if (Boolean.getBoolean(DEBUG_PROPERTY) || System.getenv(DEBUG_ENV) != null) {
                ex.printStackTrace(env.err()); // for a bug report
            }
            return CommandLine.ExitCode.SOFTWARE;
        });
    }

    private static <T> void register(CommandLine cl, Class<T> type, Function<String, T> parse) {
        cl.registerConverter(type, s -> {
            try {
                return parse.apply(s);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        });
    }

    /** Instances of the no-argument run (a fleet, as operators size it). */
    public static final int DEFAULT_FLEET = 8;

    /**
     * No subcommand: {@code compare} with defaults on the bundled trace on a fleet of {@link #DEFAULT_FLEET}
     * instances behind the cache-aware router, writing {@code report.html}; one more layered run with an unlimited
     * host tier tells where the default host size sits against the knee.
     */
    @Override
    public Integer call() {
        SimOptions defaults = new SimOptions();
        defaults.htmlFile = Paths.get(DEFAULT_HTML);
        ServingOptions fleet = new ServingOptions();
        fleet.instances = List.of(DEFAULT_FLEET);
        return execute(spec, defaults, fleet, new SizingOptions(), Kind.COMPARE, true);
    }

    enum Kind {
        REPLAY, COMPARE, SWEEP
    }

    /** Options every subcommand shares. Filled by picocli; null means "not given". */
    static final class SimOptions {
        @Option(names = "--trace", paramLabel = "[FORMAT:]FILE",
                description = "Trace to replay; formats: mooncake (default), bailian, hicache (what 'convert' writes "
                        + "from your own logs; fields in 'convert --help'). Default: the bundled "
                        + TraceSource.BUNDLED_TRACE)
        String trace;

        @Mixin
        TraceReadOptions read = new TraceReadOptions();

        @Option(names = "--limit", paramLabel = "N", description = "Replay only the first N requests.")
        Long limit;

        @Option(names = "--block-tokens", paramLabel = "N",
                description = "Tokens per trace block after expansion (default: the format's block size; 1 = block-level view).")
        Integer blockTokens;

        @Option(names = "--page-size", paramLabel = "TOKENS",
                description = "Tokens per KV page, a power of two dividing --block-tokens (default: up to 64).")
        Integer pageSize;

        @Option(names = "--engine-profile", paramLabel = "FILE",
                description = "Time the serving engine's own schedule with this measured profile (scripts/serve "
                        + "--calibrate writes it) in place of --model and --gpu; needs --device-capacity-tokens "
                        + "(docs/SIMULATION.md, \"Engine profiles\").")
        Path engineProfile;

        @Option(names = "--max-running", paramLabel = "N",
                description = "With --engine-profile: requests the engine runs at once (default: the profile's "
                        + "scheduler.max_running).")
        Integer maxRunning;

        @Option(names = "--model", paramLabel = "NAME", description = "Model preset: llama3-70b (default), llama3-8b, deepseek-v3.")
        ModelPreset model;

        @Option(names = "--gpu", paramLabel = "NAME", description = "GPU preset: h100-sxm, h100-pcie, h200-sxm (default), "
                + "gh200 (docs/SIMULATION.md lists their figures; h100-pcie5 and h200-pcie5 are deprecated names of "
                + "h100-sxm and h200-sxm).")
        GpuPreset gpu;

        @Option(names = "--device-capacity-tokens", paramLabel = "TOKENS", split = ",",
                description = "Device KV capacity per instance in simulated tokens (k = 10^3 and M = 10^6 tokens, "
                        + "e.g. 200k, 1.5M; default: the KV room of the instance's GPUs after the weights, about 1.2M "
                        + "tokens for llama3-70b at TP 4 on H200; --cache-only: about 3M). sweep: a comma-separated "
                        + "list sweeps device pressure, each with layered and all-layers unless --backup-mode picks "
                        + "one.")
        List<String> deviceCapacity;

        @Option(names = "--host-capacity-tokens", paramLabel = "TOKENS", split = ",",
                description = "Host KV capacity per instance in simulated tokens (k = 10^3, M = 10^6 tokens, e.g. "
                        + "400k, 1.5M; a bare G is refused as ambiguous, give memory with --host-memory): 0 = no host "
                        + "tier, inf = unlimited (default 2x device). sweep: a comma-separated list (default: 0, "
                        + "0.5, 1, 2, 4, 8 x device and inf).")
        List<String> hostCapacity;

        @Option(names = "--write-policy", paramLabel = "POLICY",
                description = "write_through (default), write_through_selective, write_back (or with hyphens).")
        WritePolicy writePolicy;

        @Option(names = "--backup-mode", paramLabel = "MODE", description = "layered (default), all-layers, none.")
        BackupMode backupMode;

        @Option(names = "--load-overlap", paramLabel = "WHEN",
                description = "same-forward (default: a host hit is loaded in the forward that uses it, each layer "
                        + "waiting for its own copy) or previous-batch (loaded a step ahead, used once agreed).")
        io.hicache.core.LoadOverlap loadOverlap;

        @Option(names = "--eviction", paramLabel = "POLICY", description = "lru (default), lfu, fifo, mru, filo, slru.")
        EvictionPolicy eviction;

        @Option(names = "--cp", paramLabel = "RANKS", description = "Context-parallel group size (default 1).")
        Integer cp;

        @Option(names = "--lanes", paramLabel = "LAYOUT",
                description = "CP page ownership: round-robin (default), contiguous, zigzag, striped-zigzag; needs --cp > 1.")
        OwnerLanes lanes;

        @Option(names = "--draft-layers", paramLabel = "N",
                description = "Draft/MTP layers backed up with the target (default: the model's MTP layers).")
        Integer draftLayers;

        @Option(names = "--cache-only", description = "Ignore timing: each request completes before the next (pure hit ratios).")
        boolean cacheOnly;

        @Option(names = "--seed", paramLabel = "N", description = "Seed of every random choice (default 0).")
        Long seed;

        @Option(names = "--time-scale", paramLabel = "X", description = "Divide arrival times by X (default 1).")
        Double timeScale;

        @Option(names = "--storage", paramLabel = "STORE",
                description = "L3 storage tier (replay): model (default when --storage-capacity-tokens is set), "
                        + "file:DIR, redis://[user:pass@]HOST:PORT or rediss://...")
        String storage;

        @Option(names = "--storage-capacity-tokens", paramLabel = "TOKENS",
                description = "Capacity of the modelled storage tier in simulated tokens (k/M suffixes; inf = unlimited).")
        String storageCapacity;

        @Option(names = "--storage-bandwidth-gbps", paramLabel = "GB_PER_S",
                description = "Modelled storage bandwidth in GB/s of true KV bytes (default 10).")
        Double storageBandwidthGbps;

        @Option(names = "--storage-latency-us", paramLabel = "US",
                description = "Modelled latency of one prefetch in microseconds (default 200).")
        Double storageLatencyUs;

        @Option(names = "--storage-write-policy", paramLabel = "POLICY",
                description = "L2 -> L3 writes: write_through (default), write_through_selective, write_back (or with hyphens).")
        String storageWritePolicy;

        @Option(names = "--prefetch-policy", paramLabel = "POLICY",
                description = "L3 -> L2 prefetch stop policy: timeout (default), wait_complete, best_effort.")
        String prefetchPolicy;

        @Option(names = "--prefetch-threshold-tokens", paramLabel = "TOKENS",
                description = "Prefetch only when storage may add more than this many simulated tokens (default 256).")
        Integer prefetchThresholdTokens;

        @Option(names = "--json", paramLabel = "FILE", description = "Write results as JSON (an array for compare and sweep).")
        Path jsonFile;

        @Option(names = "--html", paramLabel = "FILE", description = "Write a self-contained HTML report.")
        Path htmlFile;

        @Option(names = "--jfr", paramLabel = "FILE",
                description = "Record the run with JDK Flight Recorder (every io.hicache event) into FILE; read it "
                        + "with 'jfr summary FILE' or JDK Mission Control.")
        Path jfrFile;
    }

    /** A subcommand: the shared options, run as one {@link Kind} of run. */
    abstract static class SimCommand implements Callable<Integer> {
        private final Main main;
        private final Kind kind;
        @Spec
        CommandSpec spec;
        @Mixin
        SimOptions options;
        @Mixin
        ServingOptions serving;
        @Mixin
        SizingOptions sizing;
        @Option(names = "--kv-events-lag-ms", paramLabel = "MS", defaultValue = "0",
                description = "--router kv-events: simulated delay before the router sees an instance's KV event (default 0).")
        double kvEventsLagMs;

        SimCommand(Main main, Kind kind) {
            this.main = main;
            this.kind = kind;
        }

        @Override
        public Integer call() {
            try {
                io.hicache.sim.engine.SimKvEvents.routerLagMs(kvEventsLagMs);
            } catch (IllegalArgumentException e) {
                throw RunPlan.usage(spec.commandLine(), e.getMessage());
            }
            return main.execute(spec, options, serving, sizing, kind, false);
        }
    }

    @Command(name = "replay", mixinStandardHelpOptions = true, description = "Replay the trace under one configuration.")
    static final class Replay extends SimCommand {
        @Mixin
        KvEventsOptions kvEvents;

        Replay(Main main) {
            super(main, Kind.REPLAY);
        }

        @Override
        public Integer call() {
            if (super.main.checkOnly) {
                return super.call();
            }
            try {
                return kvEvents.around(super.main.env, spec.commandLine(), super::call);
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
    }

    @Command(name = "compare", mixinStandardHelpOptions = true,
            description = "Replay with backup modes layered, all-layers and none side by side "
                    + "(for every --instances and --router given as lists).")
    static final class Compare extends SimCommand {
        Compare(Main main) {
            super(main, Kind.COMPARE);
        }
    }

    @Command(name = "sweep", mixinStandardHelpOptions = true,
            description = "Replay once per host capacity (--host-capacity-tokens a,b,...) for a hit-ratio curve.")
    static final class Sweep extends SimCommand {
        Sweep(Main main) {
            super(main, Kind.SWEEP);
        }
    }

    Integer execute(CommandSpec at, SimOptions o, ServingOptions s, SizingOptions z, Kind kind, boolean kneeProbe) {
        RunPlan plan = RunPlan.build(at.commandLine(), o, s, z, kind, env, kneeProbe);
        if (checkOnly) {
            return CommandLine.ExitCode.OK;
        }
        return plan.run("hicache-sim " + String.join(" ", redacted(args)));
    }

    /** When set, replay, compare and sweep stop after checking their options (see {@link #check}). */
    private boolean checkOnly;

    /**
     * Parses {@code args} and checks them as a run would, without running anything: 0 when a replay, compare or
     * sweep command line would start (its trace must exist), the usage status otherwise. Other subcommands are only
     * parsed. For tests that check the command lines the documentation shows.
     */
    static int check(Env env, String... args) {
        Main main = new Main(env, args);
        main.checkOnly = true;
        CommandLine cl = commandLine(main);
        try {
            CommandLine.ParseResult leaf = cl.parseArgs(args);
            while (leaf.hasSubcommand()) {
                leaf = leaf.subcommand();
            }
            Object command = leaf.commandSpec().userObject();
            if (command instanceof SimCommand || command == main) {
                return commandLine(main).execute(args);
            }
            return CommandLine.ExitCode.OK;
        } catch (ParameterException e) {
            return UsageErrors.report(env.err(), e);
        }
    }

    /** The arguments with any storage credentials replaced by {@code ***} (what reports may show). */
    static String[] redacted(String[] args) {
        String[] out = args.clone();
        for (int i = 0; i < out.length; i++) {
            String a = out[i];
            int eq = a.startsWith("--") ? a.indexOf('=') : -1;
            String value = eq < 0 ? a : a.substring(eq + 1);
            if (value.contains("://")) {
                out[i] = (eq < 0 ? "" : a.substring(0, eq + 1)) + io.hicache.storage.PageStores.redact(value);
            }
        }
        return out;
    }


    static ProgressListener progress(Env env) {
        return env.tty() ? new ProgressBarListener(env.err()) : ProgressListener.NONE;
    }

}
