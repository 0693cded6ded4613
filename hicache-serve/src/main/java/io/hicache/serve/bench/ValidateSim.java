package io.hicache.serve.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.serve.ServeConfig;
import io.hicache.serve.model.ModelSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code scripts/validate-sim --trace FILE}: the simulator against the engine on one trace. Calibrates the engine once
 * ({@code scripts/serve --calibrate}, or takes {@code --engine-profile}), then per configuration ({@code device}: the
 * device pool only; {@code host}: with the host tier; {@code l3}: with an L3 file store as well) replays the trace
 * against a fresh engine ({@code scripts/bench-serve --trace}) and through the simulator ({@code hicache-sim replay
 * --engine-profile}, the engine's flags translated: {@code --device-tokens} to {@code --device-capacity-tokens},
 * {@code --host-tokens} to {@code --host-capacity-tokens}, the page size, chunk, running limit, write policy and
 * load overlap as they are). Prints one table (figure, measured, predicted, predicted / measured) per configuration
 * and writes {@code {config: {"measured": {...}, "predicted": {...}}}} as JSON, whole or not at all.
 *
 * <p>Runs on the main thread, one child process at a time (the engine is never timed beside another). Exit 0; 1 when
 * a run failed (one line: what failed and its last line); 2 on bad input (one line: a bad flag, a missing trace, a
 * profile of another model shape or page size, a request beyond the engine's context).
 */
public final class ValidateSim {
    private static final List<String> CONFIGS = List.of("device", "host", "l3");
    private static final ObjectMapper JSON = new ObjectMapper();

    record Options(String trace, List<String> configs, Path json, Path profile, List<String> traceFlags,
                   List<String> engineFlags, boolean fixedProfile) {
    }

    /** Speed-probe readings in a replay's gaps below which the readings before and after it set the scale. */
    static final int MIN_GAP_READINGS = 5;

    private ValidateSim() {
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run(args);
        } catch (TraceBench.Usage e) {
            System.err.println("validate-sim: " + e.getMessage());
            code = 2;
        } catch (TraceBench.Failed e) {
            System.err.println("validate-sim: " + e.getMessage());
            code = 1;
        }
        System.exit(code);
    }

    static int run(String[] args) {
        Options o = parse(args);
        Path root = Path.of(System.getProperty("hicache.root", ".")).toAbsolutePath();
        if (o.profile != null) {
            checkProfile(o.profile, o.engineFlags);
        }
        checkTrace(o, root);
        Path work;
        try {
            work = Files.createTempDirectory("validate-sim");
        } catch (IOException e) {
            throw new TraceBench.Failed("cannot make a work folder: " + e.getMessage());
        }
        progress("work folder %s", work);
        Path profile = o.profile;
        if (profile == null) {
            profile = work.resolve("engine-profile.json");
            List<String> cmd = new ArrayList<>(List.of(root.resolve("scripts/serve").toString(), "--calibrate",
                profile.toString()));
            cmd.addAll(o.engineFlags);
            progress("calibrating the engine (%s)", String.join(" ", o.engineFlags));
            child(cmd, work.resolve("calibrate.log"), "the calibration");
        }
        checkProfile(profile, o.engineFlags);
        Map<String, Object> factors = factors(profile); // a speed scale leaves them as they are
        progress("engine profile %s", profile);
        Map<String, Object> out = new LinkedHashMap<>();
        for (String c : o.configs) {
            Path measured = work.resolve(c + "-measured.json");
            Path predicted = work.resolve(c + "-predicted.json");
            List<String> engine = BenchServe.flagsFor(c, o.engineFlags);
            if (c.equals("l3")) {
                engine.add("--storage");
                engine.add("file:" + work.resolve("l3-engine"));
            }
            List<String> bench = new ArrayList<>(List.of(root.resolve("scripts/bench-serve").toString(), "--trace",
                o.trace, "--json", measured.toString(), "--requests-json", work.resolve(c + "-requests.json").toString()));
            bench.addAll(o.traceFlags);
            if (!o.fixedProfile) {
                bench.add("--gap-probes");
                bench.add("--service-probe");
            }
            bench.addAll(engine);
            progress("%s: replaying the trace against the engine (%s)", c, String.join(" ", engine));
            child(bench, work.resolve(c + "-bench.log"), c + ": bench-serve");
            Map<String, Object> speed = o.fixedProfile ? null : speedScale(profile, measured);
            Path used = profile;
            if (speed != null) {
                used = work.resolve(c + "-engine-profile.json");
                TraceBench.writeAtomically(used, scaled(profile, (Double) speed.get("factor"), speed));
                progress("%s: the engine's speed probe took %.1f ms before the replay and %.1f ms after, %s in its "
                    + "gaps, where the profile's grid reads %.1f ms: its times scaled by %.3f (%s) for this replay "
                    + "(--fixed-profile: not)", c, speed.get("before_ms"), speed.get("after_ms"),
                    speed.containsKey("gap_median_ms") ? String.format(Locale.ROOT, "%.1f ms (median of %d)",
                        ((Number) speed.get("gap_median_ms")).doubleValue(),
                        ((Number) speed.get("gap_readings")).intValue()) : speed.get("gap_readings") + " readings",
                    speed.get("grid_ms"), speed.get("factor"), speed.get("from"));
                if (speed.get("service_factor") instanceof Double f) {
                    progress("%s: %d synthetic prefills on the replay's engine before it took %.3f x the grid "
                        + "scaled to their readings: its prefill service factor for this replay (the calibration's: %.3f)", c,
                        ((Number) speed.get("service_samples")).intValue(), f, factors.get("prefill_service_factor"));
                }
            }
            List<String> sim = new ArrayList<>(List.of(root.resolve("hicache-sim.sh").toString(), "replay", "--trace",
                o.trace, "--engine-profile", used.toString(), "--json", predicted.toString()));
            sim.addAll(o.traceFlags);
            sim.addAll(simFlags(c, engine, work));
            progress("%s: replaying the trace through the simulator (%s)", c, String.join(" ", sim.subList(2, sim.size())));
            child(sim, work.resolve(c + "-sim.log"), c + ": hicache-sim replay");
            Map<String, Object> pair = new LinkedHashMap<>();
            pair.put("measured", read(measured));
            pair.put("predicted", read(predicted));
            if (speed != null) {
                pair.put("speed_scale", speed);
            }
            pair.put("profile_factors", factors);
            out.put(c, pair);
        }
        printTable(out);
        if (o.json != null) {
            TraceBench.writeAtomically(o.json, out);
            progress("wrote %s", o.json);
        }
        return 0;
    }

    /**
     * How much slower (above 1) or faster the machine ran the engine during a replay than the profile's forward grid
     * says: the engine's speed probe (a forward of a fixed shape; {@code engine_speed_probe} in the measured JSON) over
     * the grid's own reading at that shape (as the simulator reads it). The probe is the median of its readings in
     * the replay's idle gaps ({@code bench-serve --gap-probes}) where there are at least {@link #MIN_GAP_READINGS},
     * else the mean of its readings right before and after the replay. The grid then keeps the calibration's shape
     * (how a forward's cost grows with tokens and context) and takes its level from the time of the replay. Null,
     * with a line saying why, when the replay has no probe or the grid reads 0 at its shape; a profile the simulator
     * refuses is bad input. Only synthetic probe forwards enter it, never the trace's.
     */
    static Map<String, Object> speedScale(Path profile, Path measured) {
        JsonNode p;
        JsonNode replay;
        try {
            p = JSON.readTree(profile.toFile());
            replay = JSON.readTree(measured.toFile());
        } catch (IOException e) {
            throw new TraceBench.Failed("cannot read " + profile + " or " + measured + ": " + e.getMessage());
        }
        JsonNode run = replay.path("engine_speed_probe");
        if (!run.path("before_ms").isNumber() || !run.path("after_ms").isNumber() || run.path("tokens").asInt() < 1) {
            progress("the replay has no speed probe: the profile is used as calibrated");
            return null;
        }
        int tokens = run.path("tokens").asInt();
        io.hicache.sim.model.EngineProfile grid; // as the simulator reads it
        try {
            grid = io.hicache.sim.model.EngineProfile.read(profile);
        } catch (IllegalArgumentException e) {
            throw new TraceBench.Usage("--engine-profile: " + e.getMessage());
        }
        double ref = grid.forwardMs(tokens, 0);
        if (!(ref > 0)) {
            progress("the profile's grid reads 0 ms at the probe's shape: the profile is used as calibrated");
            return null;
        }
        double before = run.path("before_ms").asDouble();
        double after = run.path("after_ms").asDouble();
        double[] gaps = readings(run.path("gaps").path("forward_ms"));
        Map<String, Object> m = new LinkedHashMap<>();
        if (gaps.length >= MIN_GAP_READINGS) {
            double median = io.hicache.serve.engine.Calibration.median(gaps);
            m.put("factor", median / ref);
            m.put("from", "the replay's gaps");
            m.put("gap_readings", gaps.length);
            m.put("gap_median_ms", median);
        } else {
            m.put("factor", (before + after) / 2 / ref);
            m.put("from", "before and after the replay");
            m.put("gap_readings", gaps.length);
        }
        m.put("tokens", tokens);
        m.put("grid_ms", ref);
        m.put("before_ms", before);
        m.put("after_ms", after);
        JsonNode samples = replay.path("engine_service_probe").path("samples");
        double service = ServiceProbe.factor(grid, samples, tokens);
        if (Double.isFinite(service) && service > 0) { // this replay's engine, measured seconds before it
            m.put("service_factor", service);
            m.put("service_samples", samples.size());
        }
        JsonNode cal = p.path("speed_probe").path("forward_ms");
        if (cal.isNumber()) {
            m.put("calibration_probe_ms", cal.asDouble());
        }
        return m;
    }

    /** The positive readings in {@code a} (an array of numbers; none when absent). */
    private static double[] readings(JsonNode a) {
        List<Double> v = new ArrayList<>();
        for (JsonNode x : a) {
            if (x.isNumber() && x.asDouble() > 0 && Double.isFinite(x.asDouble())) {
                v.add(x.asDouble());
            }
        }
        return v.stream().mapToDouble(Double::doubleValue).toArray();
    }

    /**
     * The profile with its engine-thread times (the forward grid, the logits, the step and request overheads)
     * multiplied by {@code factor}; the copy rates stay (they are memory bandwidth, not the engine thread's speed).
     * Where {@code speed} has the replay engine's own {@code service_factor}, it is the profile's
     * {@code prefill_service_factor} for the replay.
     */
    static JsonNode scaled(Path profile, double factor, Map<String, Object> speed) {
        com.fasterxml.jackson.databind.node.ObjectNode p;
        try {
            p = (com.fasterxml.jackson.databind.node.ObjectNode) JSON.readTree(profile.toFile());
        } catch (IOException e) {
            throw new TraceBench.Failed("cannot read " + profile + ": " + e.getMessage());
        }
        for (String grid : List.of("forward_ms", "forward_ms_medians")) {
            JsonNode rows = p.path(grid).path("ms");
            for (JsonNode row : rows) {
                com.fasterxml.jackson.databind.node.ArrayNode a = (com.fasterxml.jackson.databind.node.ArrayNode) row;
                for (int j = 0; j < a.size(); j++) {
                    a.set(j, a.get(j).asDouble() * factor);
                }
            }
        }
        for (String f : List.of("logits_ms", "step_overhead_ms", "request_overhead_ms")) {
            if (p.has(f)) {
                p.put(f, p.path(f).asDouble() * factor);
            }
        }
        if (speed.get("service_factor") instanceof Double f) {
            p.put("prefill_service_factor", f);
        }
        p.set("speed_scale", JSON.valueToTree(speed));
        return p;
    }

    /** The simulator's flags for configuration {@code c} of an engine run with {@code engine}. */
    static List<String> simFlags(String c, List<String> engine, Path work) {
        List<String> f = new ArrayList<>();
        f.add("--device-capacity-tokens");
        f.add(value(engine, "--device-tokens", "16384"));
        f.add("--host-capacity-tokens");
        f.add(c.equals("device") ? "0" : value(engine, "--host-tokens", "65536"));
        f.add("--page-size");
        f.add(value(engine, "--page-size", "16"));
        for (String[] m : new String[][] {{"--chunk-tokens", "--chunk-tokens"}, {"--max-running", "--max-running"},
            {"--write-policy", "--write-policy"}, {"--load-overlap", "--load-overlap"}}) {
            String v = value(engine, m[0], null);
            if (v != null) {
                f.add(m[1]);
                f.add(m[0].equals("--load-overlap") ? v.replace('_', '-') : v);
            }
        }
        if (c.equals("l3")) {
            f.add("--storage");
            f.add("file:" + work.resolve("l3-sim"));
        }
        return f;
    }

    /** Refuses, before anything runs, a trace the simulator cannot read or with a request beyond the engine's context. */
    static void checkTrace(Options o, Path root) {
        int context = Integer.parseInt(value(o.engineFlags, "--context-tokens",
            Integer.toString(ModelSpec.DEFAULT_CONTEXT)));
        long limit = Long.parseLong(value(o.traceFlags, "--limit", Long.toString(Long.MAX_VALUE)));
        try {
            io.hicache.sim.trace.TraceSource src = io.hicache.sim.trace.TraceSource.parse(o.trace,
                Path.of("").toAbsolutePath(), root, limit);
            src.scan();
            int blockTokens = Integer.parseInt(value(o.traceFlags, "--block-tokens", Integer.toString(src.blockSize())));
            if (blockTokens < 1) {
                throw new TraceBench.Usage("--block-tokens must be >= 1, got " + blockTokens);
            }
            // both sides send a block as blockTokens tokens (TraceTokens, the simulator's TokenExpander)
            io.hicache.sim.trace.TokenExpander expander = new io.hicache.sim.trace.TokenExpander(blockTokens);
            try (io.hicache.sim.trace.TraceReader r = src.open()) {
                io.hicache.sim.trace.Request q;
                while ((q = r.next()) != null) {
                    int prompt = expander.tokenCount(q);
                    if ((long) prompt + Math.max(1, q.outputLength()) > context) {
                        throw new TraceBench.Usage("--trace: request " + q.index() + " (trace id " + q.id() + ") needs "
                            + prompt + " prompt + " + q.outputLength() + " output tokens" + (prompt != q.inputLength()
                            ? " at --block-tokens " + blockTokens : "") + ", beyond the engine's context of " + context
                            + " tokens (--context-tokens, a smaller --block-tokens, or --limit the trace)");
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof TraceBench.Usage u) {
                throw u;
            }
            throw new TraceBench.Usage("--trace: " + e.getMessage());
        }
    }

    /** Refuses a profile that is not the engine's: its model shape and page size must be the flags'. */
    static void checkProfile(Path profile, List<String> engine) {
        JsonNode p;
        try {
            p = JSON.readTree(profile.toFile());
        } catch (IOException e) {
            throw new TraceBench.Usage("--engine-profile " + profile + ": cannot read it: " + e.getMessage());
        }
        if (!"hicache-engine-profile".equals(p.path("format").asText())) {
            throw new TraceBench.Usage("--engine-profile " + profile + " is not an engine profile (format "
                + p.path("format") + ")");
        }
        ModelSpec s;
        try {
            s = ModelSpec.parse(value(engine, "--model", "tiny"),
                Integer.parseInt(value(engine, "--context-tokens", Integer.toString(ModelSpec.DEFAULT_CONTEXT))),
                Long.parseLong(value(engine, "--seed", Long.toString(ModelSpec.DEFAULT_SEED))));
        } catch (IllegalArgumentException e) {
            throw new TraceBench.Usage(e.getMessage());
        }
        JsonNode m = p.path("model");
        long[] want = {s.layers(), s.hidden(), s.heads(), s.kvHeads(), s.ffn(), s.vocab(), s.contextTokens(),
            Integer.parseInt(value(engine, "--page-size", "16"))};
        long[] got = {m.path("layers").asLong(), m.path("hidden").asLong(), m.path("heads").asLong(),
            m.path("kv_heads").asLong(), m.path("ffn").asLong(), m.path("vocab").asLong(),
            m.path("context_tokens").asLong(), p.path("page_size").asLong()};
        if (!Arrays.equals(want, got)) {
            throw new TraceBench.Usage("--engine-profile " + profile + " was measured on layers,hidden,heads,kv_heads,"
                + "ffn,vocab,context,page " + Arrays.toString(got) + " but the engine runs " + Arrays.toString(want)
                + "; calibrate this engine (drop --engine-profile) or pass its --model/--context-tokens/--page-size");
        }
    }

    /** Runs {@code cmd} with its output in {@code log}; exit 2 of the child is bad input, any other failure exit 1. */
    private static void child(List<String> cmd, Path log, String what) {
        int exit;
        try {
            Process p = new ProcessBuilder(cmd).directory(Path.of("").toAbsolutePath().toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
            exit = p.waitFor();
        } catch (IOException e) {
            throw new TraceBench.Failed(what + " could not start: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TraceBench.Failed(what + " was interrupted");
        }
        if (exit == 0) {
            return;
        }
        String last = lastLine(log);
        if (exit == 2) {
            throw new TraceBench.Usage(what + ": " + last);
        }
        throw new TraceBench.Failed(what + " failed (exit " + exit + "): " + last + " (log " + log + ")");
    }

    private static String lastLine(Path log) {
        try {
            List<String> lines = Files.readAllLines(log).stream().map(String::strip)
                .filter(l -> !l.isEmpty() && !l.startsWith("WARNING") && !l.startsWith("[picocli")
                    && !l.contains(" WARN ")).toList();
            return lines.isEmpty() ? "(no output)" : lines.get(lines.size() - 1);
        } catch (IOException e) {
            return "(no log)";
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> read(Path f) {
        try {
            return JSON.readValue(f.toFile(), LinkedHashMap.class);
        } catch (IOException e) {
            throw new TraceBench.Failed("cannot read " + f + ": " + e.getMessage());
        }
    }

    /** The figures the table shows: a JSON path (field, or field.percentile). */
    static final List<String> FIGURES = List.of("token_hit_ratio", "block_hit_ratio", "device_hit_tokens",
        "host_hit_tokens", "ttft_ms.p50", "ttft_ms.p90", "ttft_ms.p99", "engine_ttft_ms.p50", "tpot_ms.p50", "tpot_ms.p90", "e2e_ms.p50",
        "e2e_ms.p90", "queue_ms.p50", "queue_ms.p90", "throughput_input_tokens_per_s", "throughput_output_tokens_per_s",
        "throughput_requests_per_s");

    @SuppressWarnings("unchecked")
    static Double figure(Map<String, Object> m, String path) {
        Object v = m;
        for (String k : path.split("\\.")) {
            if (!(v instanceof Map)) {
                return null;
            }
            v = ((Map<String, Object>) v).get(k);
        }
        return v instanceof Number n ? n.doubleValue() : null;
    }

    /** The profile's calibrated prefill factors, as the simulator reads them (1 where the profile does not say). */
    static Map<String, Object> factors(Path profile) {
        io.hicache.sim.model.EngineProfile p;
        try {
            p = io.hicache.sim.model.EngineProfile.read(profile);
        } catch (IllegalArgumentException e) {
            throw new TraceBench.Usage("--engine-profile: " + e.getMessage());
        }
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("prefill_service_factor", p.prefillServiceFactor());
        f.put("prefill_busy_factor", p.prefillBusyFactor());
        return f;
    }

    @SuppressWarnings("unchecked")
    private static void printTable(Map<String, Object> out) {
        for (Map.Entry<String, Object> e : out.entrySet()) {
            Map<String, Object> pair = (Map<String, Object>) e.getValue();
            Map<String, Object> m = (Map<String, Object>) pair.get("measured");
            Map<String, Object> p = (Map<String, Object>) pair.get("predicted");
            System.out.printf(Locale.ROOT, "%-8s %-32s %14s %14s %8s%n", e.getKey(), "figure", "measured", "predicted",
                "ratio");
            if (pair.get("speed_scale") instanceof Map<?, ?> sp) {
                System.out.printf(Locale.ROOT, "%-8s %-32s %14s %14s %8.3f%n", "", "profile time scale (speed probe)",
                    "", "", ((Number) sp.get("factor")).doubleValue());
                if (sp.get("service_factor") instanceof Number f) {
                    System.out.printf(Locale.ROOT, "%-8s %-32s %14s %14s %8.3f%n", "", "replay's prefill_service_factor",
                        "", "", f.doubleValue());
                }
            }
            if (pair.get("profile_factors") instanceof Map<?, ?> pf) {
                for (Map.Entry<?, ?> f : pf.entrySet()) {
                    System.out.printf(Locale.ROOT, "%-8s %-32s %14s %14s %8.3f%n", "", "calibrated " + f.getKey(), "", "",
                        ((Number) f.getValue()).doubleValue());
                }
            }
            for (String f : FIGURES) {
                Double a = figure(m, f);
                Double b = figure(p, f);
                String ratio = a == null || b == null || a == 0 ? "-" : String.format(Locale.ROOT, "%.3f", b / a);
                System.out.printf(Locale.ROOT, "%-8s %-32s %14s %14s %8s%n", "", f, num(a), num(b), ratio);
            }
        }
    }

    private static String num(Double v) {
        if (v == null) {
            return "-";
        }
        return Math.abs(v) < 10 && v != Math.rint(v) ? String.format(Locale.ROOT, "%.4f", v)
            : String.format(Locale.ROOT, "%.1f", v);
    }

    private static String value(List<String> flags, String name, String dflt) {
        int i = flags.indexOf(name);
        return i < 0 || i + 1 >= flags.size() ? dflt : flags.get(i + 1);
    }

    static Options parse(String[] args) {
        String trace = null;
        List<String> configs = List.of("device", "host");
        Path json = null;
        Path profile = null;
        List<String> traceFlags = new ArrayList<>();
        List<String> engine = new ArrayList<>();
        boolean fixed = false;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help")) {
                throw new TraceBench.Usage("usage: scripts/validate-sim --trace [FORMAT:]FILE [--configs device,host,l3] "
                    + "[--json FILE] [--engine-profile FILE] [--fixed-profile] [--block-tokens N] [--time-scale X] [--limit N] "
                    + "[engine flags: --model, --device-tokens, --host-tokens, --chunk-tokens, --page-size, ...]");
            }
            if (a.equals("--fixed-profile")) {
                fixed = true;
                continue;
            }
            if (ServeConfig.SWITCHES.contains(a)) {
                throw new TraceBench.Usage(a + ": the comparison needs the prefix cache");
            }
            if (i + 1 >= args.length) {
                throw new TraceBench.Usage(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--trace" -> trace = v;
                case "--configs" -> {
                    configs = Arrays.stream(v.split(",")).map(String::trim).toList();
                    for (String c : configs) {
                        if (!CONFIGS.contains(c)) {
                            throw new TraceBench.Usage("--configs: unknown configuration '" + c + "'; use "
                                + String.join(",", CONFIGS));
                        }
                    }
                }
                case "--json" -> json = Path.of(v);
                case "--engine-profile" -> {
                    profile = Path.of(v).toAbsolutePath();
                    if (!Files.isRegularFile(profile)) {
                        throw new TraceBench.Usage("--engine-profile: no such file " + v);
                    }
                }
                case "--block-tokens", "--time-scale", "--limit" -> {
                    traceFlags.add(a);
                    traceFlags.add(v);
                }
                default -> {
                    if (a.equals("--port") || a.equals("--host") || a.equals("--api-key") || a.equals("--storage")) {
                        throw new TraceBench.Usage(a + " is chosen by validate-sim for each engine it starts");
                    }
                    if (!ServeConfig.VALUE_FLAGS.contains(a)) {
                        throw new TraceBench.Usage("unknown argument " + a + " (--help lists the flags)");
                    }
                    engine.add(a);
                    engine.add(v);
                }
            }
        }
        if (trace == null) {
            throw new TraceBench.Usage("--trace FILE is required");
        }
        String file = trace.matches("^[a-z][a-z0-9_-]+:.*") ? trace.substring(trace.indexOf(':') + 1) : trace;
        if (!Files.isRegularFile(Path.of(file))) {
            throw new TraceBench.Usage("--trace: no such file " + file);
        }
        if (json != null && json.toAbsolutePath().getParent() != null
            && !Files.isDirectory(json.toAbsolutePath().getParent())) {
            throw new TraceBench.Usage("--json: no such folder " + json.toAbsolutePath().getParent());
        }
        return new Options(absolute(trace), configs, json, profile, List.copyOf(traceFlags), List.copyOf(engine),
            fixed);
    }

    /** The trace spec with its file made absolute (the children run in other folders). */
    private static String absolute(String spec) {
        int c = spec.matches("^[a-z][a-z0-9_-]+:.*") ? spec.indexOf(':') : -1;
        return c < 0 ? Path.of(spec).toAbsolutePath().toString()
            : spec.substring(0, c + 1) + Path.of(spec.substring(c + 1)).toAbsolutePath();
    }

    private static void progress(String fmt, Object... args) {
        System.err.println("validate-sim: " + String.format(Locale.ROOT, fmt, args));
    }
}
