package io.hicache.sim.cli;

import io.hicache.core.HiCache;
import io.hicache.sim.OptionSpellings;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.WritePolicy;
import io.hicache.sim.BackupMode;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.report.KvFootprint;
import io.hicache.sim.report.Recommendation;
import io.hicache.sim.report.Units;
import io.hicache.sim.trace.TraceSource;
import jdk.jfr.Recording;
import picocli.CommandLine;
import picocli.CommandLine.ParameterException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The validated work of one invocation: the trace, the configurations to run with their labels and
 * the outputs. {@link #build} refuses bad and contradictory options (a {@link ParameterException},
 * exit status 2) before any work; {@link #run} replays and writes. Used on one thread.
 */
final class RunPlan {

    /** Sweep host capacities when none are given, as multiples of the device capacity (-1 = inf). */
    private static final double[] DEFAULT_SWEEP_RATIOS = {0, 0.5, 1, 2, 4, 8, -1};

    final Main.Env env;
    final Main.Kind kind;
    final TraceSource trace;
    final List<SimConfig> configs;
    final List<ServingConfig> servings;
    final List<String> labels;
    /** Per configuration, its fleet-and-router group (compare's axes; 0 elsewhere). */
    final List<Integer> groups;
    /** Index of the main job's knee probe (layered, unlimited host) in {@link #configs}, or -1. */
    final int kneeProbe;
    /** Whether a sweep varies the device capacity (the host capacity is then fixed). */
    final boolean deviceSweep;
    final KvFootprint kv;
    final double tolerance;
    final Path jsonFile;
    final Path htmlFile;
    final Path jfrFile;
    final Path summaryFile;
    final io.hicache.sim.StorageOptions storage;
    /** The engine profile the runs are timed with ({@code --engine-profile}), or null for the presets. */
    final io.hicache.sim.model.EngineProfile profile;
    /** The profile's file as the command line gave it (null without a profile). */
    final String profileFile;

    private RunPlan(Main.Env env, Main.Kind kind, TraceSource trace, List<SimConfig> configs,
                    List<ServingConfig> servings, List<String> labels, List<Integer> groups, int kneeProbe,
                    boolean deviceSweep, KvFootprint kv, double tolerance, Path jsonFile, Path htmlFile, Path jfrFile,
                    Path summaryFile, io.hicache.sim.StorageOptions storage,
                    io.hicache.sim.model.EngineProfile profile) {
        this.storage = storage;
        this.profile = profile;
        this.profileFile = profile == null ? null : profile.source();
        this.env = env;
        this.kind = kind;
        this.trace = trace;
        this.configs = configs;
        this.servings = servings;
        this.labels = labels;
        this.groups = groups;
        this.kneeProbe = kneeProbe;
        this.deviceSweep = deviceSweep;
        this.kv = kv;
        this.tolerance = tolerance;
        this.jsonFile = jsonFile;
        this.htmlFile = htmlFile;
        this.jfrFile = jfrFile;
        this.summaryFile = summaryFile;
    }

    /** The configurations, in run order. */
    List<SimConfig> configs() {
        return configs;
    }

    /** The serving configurations, parallel to {@link #configs()}. */
    List<ServingConfig> servings() {
        return servings;
    }

    /** The footprint of the runs: KV bytes per token, the device's KV capacity. */
    KvFootprint footprint() {
        return kv;
    }

    static RunPlan build(CommandLine cl, Main.SimOptions o, ServingOptions so, SizingOptions z, Main.Kind kind,
                         Main.Env env, boolean kneeProbe) {
        // Values checked one by one.
        long limit = Long.MAX_VALUE;
        if (o.limit != null) {
            if (o.limit < 1) {
                throw usage(cl, "--limit must be >= 1 request, got " + o.limit);
            }
            limit = o.limit;
        }
        TraceSource trace;
        try {
            trace = TraceSource.parse(o.trace == null ? TraceSource.BUNDLED_TRACE : o.trace, env.workDir(),
                    env.repoRoot(), limit);
        } catch (IllegalArgumentException e) {
            throw usage(cl, "--trace: " + e.getMessage());
        }
        if (!Files.isRegularFile(trace.path())) {
            throw usage(cl, "--trace: no such file: " + trace.path());
        }
        int formatBlock = trace.blockSize();
        int blockTokens = o.blockTokens == null ? formatBlock : o.blockTokens;
        if (blockTokens < 1) {
            throw usage(cl, "--block-tokens must be >= 1, got " + blockTokens);
        }
        var profile = ProfilePlan.read(cl, o, so, z, env);
        int pageSize = o.pageSize == null ? SimConfig.defaultPageSize(blockTokens) : o.pageSize;
        if (profile != null) {
            pageSize = ProfilePlan.pageSize(cl, o.pageSize, profile);
            ProfilePlan.checkBlockTokens(cl, blockTokens, formatBlock, profile);
            if (o.deviceCapacity == null) {
                throw usage(cl, "--engine-profile needs --device-capacity-tokens: the engine's device KV pool in "
                        + "tokens (its --device-tokens)");
            }
        }
        var model = profile != null ? ProfilePlan.STAND_IN
                : o.model == null ? io.hicache.sim.model.ModelPreset.DEFAULT : o.model;
        var gpu = o.gpu == null ? io.hicache.sim.model.GpuPreset.DEFAULT : o.gpu;
        int cp = o.cp == null ? 1 : o.cp;
        ServingConfig serving = profile != null ? ProfilePlan.serving(cl, so, profile, kind)
                : serving(cl, so, model, gpu, kind, o.cacheOnly);
        long device;
        KvFootprint.DeviceSource deviceSource = KvFootprint.DeviceSource.GPU_ROOM;
        List<Long> devices = new ArrayList<>();
        if (o.deviceCapacity != null) {
            for (String d : o.deviceCapacity) {
                devices.add(tokens(cl, "--device-capacity-tokens", d));
            }
            if (kind != Main.Kind.SWEEP && devices.size() > 1) {
                throw usage(cl, "--device-capacity-tokens takes one value here; use 'sweep' for a list, got "
                        + o.deviceCapacity);
            }
            device = devices.getFirst();
            deviceSource = KvFootprint.DeviceSource.OPTION;
        } else if (o.cacheOnly) {
            device = SimConfig.defaultDeviceCapacityTokens(blockTokens, formatBlock);
            deviceSource = KvFootprint.DeviceSource.CACHE_ONLY_DEFAULT;
        } else {
            device = Math.max(1, ServingConfig.kvRoomPromptTokens(model, gpu, serving.tp(), Math.max(1, cp),
                    draftLayersOf(o, model)) * blockTokens / formatBlock);
        }
        if (devices.contains(0L) || device == 0) {
            throw usage(cl, "--device-capacity-tokens must be > 0 (there is always a device tier)");
        }
        trace = trace.withRead(TracePreflight.readOptions(cl, o.read, trace, devices.isEmpty() ? List.of(device)
                : devices, blockTokens, formatBlock));
        boolean deviceSweep = devices.size() > 1;
        if (deviceSweep && ((o.hostCapacity != null && o.hostCapacity.size() > 1)
                || (z.hostMemory != null && z.hostMemory.size() > 1))) {
            throw usage(cl, "sweep varies one axis: a list of --device-capacity-tokens or of --host-capacity-tokens, "
                    + "not both");
        }
        if (o.hostCapacity != null && z.hostMemory != null) {
            throw usage(cl, "--host-capacity-tokens and --host-memory both size the host tier; give one of them");
        }
        KvFootprint kv;
        try {
            kv = KvFootprint.of(new SimConfig(model, gpu, blockTokens, pageSize, Math.max(device, pageSize), 0,
                    WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, io.hicache.radix.EvictionPolicy.LRU, cp,
                    OwnerLanes.Standard.ROUND_ROBIN, draftLayersOf(o, model), o.cacheOnly, 0, 1.0), serving.tp(), formatBlock,
                    deviceSource);
        } catch (IllegalArgumentException e) {
            throw usage(cl, e.getMessage());
        }
        if (profile != null) {
            kv = ProfilePlan.footprint(profile, device);
            ProfilePlan.checkTrace(cl, trace, profile, device, blockTokens);
        }
        List<Long> hosts = new ArrayList<>();
        if (o.hostCapacity != null) {
            for (String h : o.hostCapacity) {
                hosts.add(tokens(cl, "--host-capacity-tokens", h));
            }
        }
        if (z.hostMemory != null) {
            for (String m : z.hostMemory) {
                hosts.add(hostTokens(cl, kv, m));
            }
        }
        if (kind != Main.Kind.SWEEP && hosts.size() > 1) {
            throw usage(cl, (z.hostMemory != null ? "--host-memory" : "--host-capacity-tokens")
                    + " takes one value here; use 'sweep' for a list, got "
                    + (z.hostMemory != null ? z.hostMemory : o.hostCapacity));
        }
        double tolerance = Recommendation.DEFAULT_TOLERANCE;
        if (z.tolerance != null) {
            if (kind == Main.Kind.REPLAY) {
                throw usage(cl, "--tolerance applies to the recommendation of sweep and compare; replay runs one "
                        + "configuration and recommends nothing");
            }
            if (!(z.tolerance >= 0 && z.tolerance < 1)) {
                throw usage(cl, "--tolerance must be a relative fraction in [0, 1) (0.01 = within 1 % of the best), got "
                        + z.tolerance);
            }
            tolerance = z.tolerance;
        }
        if (hosts.isEmpty()) {
            if (kind == Main.Kind.SWEEP && !deviceSweep) {
                for (double r : DEFAULT_SWEEP_RATIOS) {
                    hosts.add(r < 0 ? SimConfig.HOST_UNLIMITED : scale(device, r));
                }
            } else {
                hosts.add(scale(device, SimConfig.DEFAULT_HOST_RATIO));
            }
        }
        var writePolicy = o.writePolicy == null ? WritePolicy.WRITE_THROUGH : o.writePolicy;
        var backupMode = o.backupMode == null ? BackupMode.LAYERED : o.backupMode;
        var eviction = o.eviction == null ? io.hicache.radix.EvictionPolicy.LRU : o.eviction;
        var lanes = o.lanes == null ? OwnerLanes.Standard.ROUND_ROBIN : o.lanes;
        int draftLayers = draftLayersOf(o, model);
        long seed = o.seed == null ? 0 : o.seed;
        double timeScale = o.timeScale == null ? 1.0 : o.timeScale;

        // Options that contradict each other: refused before any work.
        if (kind == Main.Kind.COMPARE && o.backupMode != null) {
            throw usage(cl, "compare runs every backup mode (layered, all-layers, none); drop --backup-mode "
                    + o.backupMode.cliName() + " or use replay");
        }
        if (kind == Main.Kind.SWEEP && backupMode == BackupMode.NONE) {
            throw usage(cl, "sweep varies the host capacity, which --backup-mode none never writes; "
                    + "choose layered or all-layers");
        }
        boolean noHost = kind != Main.Kind.SWEEP && hosts.getFirst() == SimConfig.HOST_NONE;
        if (o.writePolicy != null && noHost) {
            throw usage(cl, "--write-policy " + OptionSpellings.of(o.writePolicy)
                    + " needs a host tier, but --host-capacity-tokens is 0 (no host tier)");
        }
        if (o.writePolicy != null && o.backupMode == BackupMode.NONE) {
            throw usage(cl, "--write-policy " + OptionSpellings.of(o.writePolicy) + " has no effect with --backup-mode none");
        }
        if (o.lanes != null && cp == 1) {
            throw usage(cl, "--lanes " + OptionSpellings.of(o.lanes) + " needs a CP group (--cp > 1), but --cp is 1");
        }
        if (o.cacheOnly && o.timeScale != null) {
            throw usage(cl, "--time-scale has no effect with --cache-only (cache-only ignores timing)");
        }
        if (o.cacheOnly && cp > 1) {
            throw usage(cl, "--cp " + cp + " has no effect with --cache-only (every CP rank holds the same tree, "
                    + "so hit ratios do not depend on it); drop one of them");
        }
        io.hicache.sim.StorageOptions storage = StoragePlan.build(cl, o, kind, noHost, backupMode, pageSize);
        for (Path out : new Path[] {o.jsonFile, o.htmlFile, o.jfrFile, z.summaryJson}) {
            requireDirectoryOf(cl, env, out);
        }

        List<SimConfig> configs = new ArrayList<>();
        List<ServingConfig> servings = new ArrayList<>();
        List<String> labels = new ArrayList<>();
        List<Integer> groups = new ArrayList<>();
        int probe = -1;
        try {
            SimConfig base = new SimConfig(model, gpu, blockTokens, pageSize, device, hosts.getFirst(), writePolicy,
                    backupMode, eviction, cp, lanes, draftLayers, o.cacheOnly, seed, timeScale,
                    o.loadOverlap == null ? io.hicache.core.LoadOverlap.SAME_FORWARD : o.loadOverlap);
            switch (kind) {
                case REPLAY -> {
                    configs.add(base);
                    servings.add(serving);
                    groups.add(0);
                    labels.add(backupMode.cliName());
                }
                case COMPARE -> {
                    List<Integer> fleets = so.instances == null ? List.of(serving.instances()) : so.instances;
                    List<Router> routers = so.routers == null ? List.of(serving.router()) : so.routers;
                    boolean axes = fleets.size() > 1 || routers.size() > 1 || serving.instances() > 1;
                    int group = 0;
                    for (int n : fleets) {
                        for (Router router : routers) {
                            ServingConfig sc = serving.withFleet(n, router);
                            String fleet = n == 1 ? "1 instance" : n + "x " + router.cliName();
                            for (BackupMode m : BackupMode.values()) {
                                configs.add(base.withBackupMode(m));
                                servings.add(sc);
                                groups.add(group);
                                String mode = m == BackupMode.NONE ? "none (no backup)" : m.cliName();
                                labels.add(axes ? mode + ", " + fleet : mode);
                            }
                            group++;
                        }
                    }
                    if (kneeProbe && !o.cacheOnly && base.hasHostTier() && !base.hostUnlimited()) {
                        // where the configured host size sits: one layered run with an unlimited host tier
                        probe = configs.size();
                        configs.add(base.withBackupMode(BackupMode.LAYERED)
                                .withHostCapacityTokens(SimConfig.HOST_UNLIMITED));
                        servings.add(serving);
                        groups.add(0);
                        String fleet = serving.instances() == 1 ? "1 instance"
                                : serving.instances() + "x " + serving.router().cliName();
                        labels.add("layered, host inf, " + fleet + " (knee probe)");
                    }
                }
                case SWEEP -> {
                    if (deviceSweep) {
                        // device pressure x backup mode: where copying per layer reaches clients, and where not
                        List<BackupMode> modes = o.backupMode != null ? List.of(backupMode)
                                : List.of(BackupMode.LAYERED, BackupMode.ALL_LAYERS);
                        for (long d : devices) {
                            for (BackupMode m : modes) {
                                configs.add(base.withCapacities(d, hosts.getFirst()).withBackupMode(m));
                                servings.add(serving);
                                groups.add(0);
                                labels.add("device " + Units.tokensShort(d) + ", " + m.cliName());
                            }
                        }
                    } else {
                        for (long h : hosts) {
                            configs.add(base.withHostCapacityTokens(h));
                            servings.add(serving);
                            groups.add(0);
                            labels.add("host " + Units.tokensShort(h));
                        }
                    }
                }
            }
        } catch (IllegalArgumentException e) {
            throw usage(cl, e.getMessage());
        }
        Path json = o.jsonFile == null ? null : env.workDir().resolve(o.jsonFile);
        Path html = o.htmlFile == null ? null : env.workDir().resolve(o.htmlFile);
        Path jfr = o.jfrFile == null ? null : env.workDir().resolve(o.jfrFile);
        Path summary = z.summaryJson == null ? null : env.workDir().resolve(z.summaryJson);
        return new RunPlan(env, kind, trace, List.copyOf(configs), List.copyOf(servings), List.copyOf(labels),
                List.copyOf(groups), probe, deviceSweep, kv, tolerance, json, html, jfr, summary, storage, profile);
    }

    private static int draftLayersOf(Main.SimOptions o, io.hicache.sim.model.ModelPreset model) {
        return o.draftLayers == null ? model.defaultDraftLayers() : o.draftLayers;
    }

    /** A {@code --host-memory} value as host tokens per instance. */
    private static long hostTokens(CommandLine cl, KvFootprint kv, String text) {
        SizeParser.Memory m;
        try {
            m = SizeParser.memory("--host-memory", text);
        } catch (IllegalArgumentException e) {
            throw usage(cl, e.getMessage());
        }
        if (m.bytes() == SizeParser.UNLIMITED) {
            return SimConfig.HOST_UNLIMITED;
        }
        long bytes = m.perGpu() ? Math.multiplyHigh(m.bytes(), kv.gpus()) != 0 ? Long.MAX_VALUE - 1
                : m.bytes() * kv.gpus() : m.bytes();
        return kv.tokensIn(bytes);
    }

    /** The serving configuration the options ask for (the first of each list); refuses bad values. */
    private static ServingConfig serving(CommandLine cl, ServingOptions so, io.hicache.sim.model.ModelPreset model,
                                         io.hicache.sim.model.GpuPreset gpu, Main.Kind kind, boolean cacheOnly) {
        if (cacheOnly && so.any()) {
            throw usage(cl, "--instances, --router, --tp, --max-batch-tokens, --chunk-tokens, the SLOs, "
                    + "--host-bandwidth-gbps, --copy-engines and --[no-]closed-loop have no effect with --cache-only (it models no serving); "
                    + "drop them");
        }
        if (kind != Main.Kind.COMPARE && so.instances != null && so.instances.size() > 1) {
            throw usage(cl, "--instances takes one value here; compare takes a list, got " + so.instances);
        }
        if (kind != Main.Kind.COMPARE && so.routers != null && so.routers.size() > 1) {
            throw usage(cl, "--router takes one value here; compare takes a list, got " + so.routers);
        }
        if (so.instances != null) {
            for (int n : so.instances) {
                if (n < 1) {
                    throw usage(cl, "--instances must be >= 1, got " + n);
                }
            }
        }
        ServingConfig d = ServingConfig.defaults(model, gpu);
        int budget = so.maxBatchTokens == null ? d.maxBatchTokens() : so.maxBatchTokens;
        if (budget < 1) {
            throw usage(cl, "--max-batch-tokens must be >= 1, got " + budget);
        }
        int chunk = so.chunkTokens == null ? Math.min(budget, d.chunkTokens()) : so.chunkTokens;
        boolean sharedEngine = false;
        if (so.copyEngines != null) {
            switch (so.copyEngines.trim().toLowerCase(Locale.ROOT)) {
                case "shared" -> sharedEngine = true;
                case "separate" -> sharedEngine = false;
                default -> throw usage(cl, "--copy-engines must be separate or shared, got '" + so.copyEngines + "'");
            }
        }
        try {
            int instances = so.instances != null ? so.instances.getFirst()
                    : kind == Main.Kind.SWEEP ? Main.DEFAULT_FLEET : d.instances();
            ServingConfig s = new ServingConfig(instances,
                    so.routers == null ? d.router() : so.routers.getFirst(), so.tp == null ? d.tp() : so.tp, budget,
                    chunk, so.sloTtftMs == null ? d.sloTtftMs() : so.sloTtftMs,
                    so.sloTpotMs == null ? d.sloTpotMs() : so.sloTpotMs,
                    so.hostBandwidthGbps == null ? 0 : so.hostBandwidthGbps, sharedEngine,
                    so.closedLoop == null || so.closedLoop,
                    so.tierWeights == null ? io.hicache.sim.TierWeights.UNIT
                            : io.hicache.sim.TierWeights.parse(so.tierWeights));
            s.checkModel(model);
            return s;
        } catch (IllegalArgumentException e) {
            throw usage(cl, e.getMessage());
        }
    }

    /**
     * Runs every configuration, prints the summary, writes the reports; returns exit status 0. With a JFR file, the
     * replays run inside a flight recording of every {@code io.hicache} event, dumped to that file at the end.
     */
    int run(String commandLine) {
        if (jfrFile == null) {
            return new RunOutputs(this).replayAndReport(commandLine);
        }
        try (Recording recording = new Recording()) {
            for (String event : HiCache.flightRecorderEventNames()) {
                recording.enable(event).withoutThreshold();
            }
            recording.setName("hicache-sim");
            recording.start();
            int status = new RunOutputs(this).replayAndReport(commandLine);
            recording.stop();
            recording.dump(jfrFile);
            env.out().println("wrote " + jfrFile);
            return status;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + jfrFile + ": " + e.getMessage(), e);
        }
    }

    /** A token-count option's value ({@link SizeParser#tokens}); refuses a bad one (exit status 2). */
    static long tokens(CommandLine cl, String option, String text) {
        try {
            long t = SizeParser.tokens(option, text);
            return t == SizeParser.UNLIMITED ? SimConfig.HOST_UNLIMITED : t;
        } catch (IllegalArgumentException e) {
            throw usage(cl, e.getMessage());
        }
    }

    private static long scale(long tokens, double ratio) {
        double v = tokens * ratio;
        return v >= Long.MAX_VALUE ? SimConfig.HOST_UNLIMITED : (long) v;
    }

    /** Refuses an output file (null: none) whose directory does not exist, before any work is done. */
    static void requireDirectoryOf(CommandLine cl, Main.Env env, Path out) {
        if (out != null) {
            Path abs = env.workDir().resolve(out).toAbsolutePath();
            if (abs.getParent() != null && !Files.isDirectory(abs.getParent())) {
                throw usage(cl, "cannot write " + out + ": directory " + abs.getParent() + " does not exist");
            }
        }
    }

    static ParameterException usage(CommandLine cl, String message) {
        return new ParameterException(cl, message);
    }
}
