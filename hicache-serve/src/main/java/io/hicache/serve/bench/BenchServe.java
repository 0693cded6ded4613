package io.hicache.serve.bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.hicache.serve.ServeConfig;
import io.hicache.serve.engine.RestoreBench;
import io.hicache.serve.model.ModelSpec;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code scripts/bench-serve}: starts the engine once per configuration ({@code none}: no prefix cache;
 * {@code device}: device pool only; {@code host}: device and host tier; {@code l3}: device, host and L3 on a real
 * redis-server it starts), drives the same {@link Workload} against each over HTTP ({@link BenchClient}), and prints
 * one table (stdout) and one JSON file: per configuration TTFT and end-to-end percentiles, requests/s, output tokens/s,
 * the cached-token share the server reported and where the time to first token went; {@code outputs_identical}
 * (every answer the same in every configuration); and the restore row ({@link RestoreBench}). Engine flags pass
 * through to every engine; a configuration's own setting wins. Progress goes to stderr. Exit 0 when every request of
 * every configuration succeeded, 1 otherwise, 2 on a bad command line.
 */
public final class BenchServe {
    private static final List<String> CONFIGS = List.of("none", "device", "host", "l3");

    private BenchServe() {
    }

    private record Options(int clients, int rounds, int requestTokens, int outputTokens, double rate, int maxParallel,
                           List<String> configs, Path json, long seed, int restoreTokens, List<String> engineFlags) {
    }

    public static void main(String[] args) throws Exception {
        if (TraceBench.wanted(args)) {
            TraceBench.main(args);
            return;
        }
        Options o;
        try {
            o = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("bench-serve: " + e.getMessage());
            System.exit(2);
            return;
        }
        Path root = Path.of(System.getProperty("hicache.root", ".")).toAbsolutePath();
        Workload w = new MultiTurnWorkload(o.clients, o.rounds, o.requestTokens, o.outputTokens, o.seed);
        Map<String, Object> configs = new LinkedHashMap<>();
        Map<String, List<BenchClient.Result>> all = new LinkedHashMap<>();
        Path work = Files.createTempDirectory("bench-serve");
        boolean ok = true;
        for (String c : o.configs) {
            List<String> flags = flagsFor(c, o.engineFlags);
            Processes.Redis redis = null;
            try {
                if (c.equals("l3")) {
                    redis = Processes.Redis.start(root, work.resolve("redis"));
                    flags.add("--storage");
                    flags.add("redis://127.0.0.1:" + redis.port);
                }
                progress("%s: starting the engine (%s)", c, String.join(" ", flags));
                try (Processes.EngineProcess e = Processes.EngineProcess.start(root, flags, work.resolve(c + ".log"))) {
                    progress("%s: %s", c, e.readyLine.replaceFirst("^serve: ", ""));
                    BenchClient client = new BenchClient("http://127.0.0.1:" + e.port, o.rate, o.maxParallel, o.seed);
                    long t0 = System.nanoTime();
                    int[] n = {0};
                    int total = o.clients * o.rounds;
                    List<BenchClient.Result> rs = client.run(w, r -> {
                        synchronized (n) {
                            n[0]++;
                            if (!r.ok()) {
                                progress("%s: request %d/%d (client %d turn %d) failed: %s", c, n[0], total, r.session(),
                                    r.turn(), r.error());
                            } else if (n[0] % Math.max(1, total / 10) == 0 || n[0] == total) {
                                progress("%s: %d/%d requests, last TTFT %.0f ms, cached %d of %d prompt tokens", c,
                                    n[0], total, r.ttftMs(), r.cachedTokens(), r.promptTokens());
                            }
                        }
                    });
                    double wallS = (System.nanoTime() - t0) / 1e9;
                    int exit = e.stop();
                    if (exit != 0) {
                        progress("%s: the engine exited %d: %s", c, exit, Processes.tail(e.log));
                    }
                    all.put(c, rs);
                    Map<String, Object> s = summarize(rs, wallS);
                    configs.put(c, s);
                    ok &= ((Number) s.get("failed")).intValue() == 0;
                }
            } finally {
                if (redis != null) {
                    redis.close();
                }
            }
        }
        boolean identical = identical(all);
        progress("restore: backing up a %d-token prefix, then restoring it from the host tier", o.restoreTokens);
        RestoreBench.Result rb = RestoreBench.run(model(o.engineFlags), o.restoreTokens, pageSize(o.engineFlags), 9);
        Map<String, Object> restore = new LinkedHashMap<>();
        restore.put("tokens", rb.tokens());
        restore.put("bytes", rb.bytes());
        restore.put("restore_gbps", round(rb.restoreGbps()));
        restore.put("plain_copy_gbps", round(rb.plainCopyGbps()));
        restore.put("ratio", round(rb.ratio()));
        restore.put("load_wait_share", round(rb.loadWaitShare()));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("configs", configs);
        out.put("outputs_identical", identical);
        Map<String, Object> wl = new LinkedHashMap<>(w.describe());
        wl.put("rate", o.rate);
        wl.put("max_parallel", o.maxParallel);
        wl.put("engine_flags", o.engineFlags);
        out.put("workload", wl);
        out.put("restore", restore);
        printTable(configs, identical, restore);
        if (o.json != null) {
            ObjectMapper m = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
            Path tmp = o.json.resolveSibling(o.json.getFileName() + ".tmp");
            m.writeValue(tmp.toFile(), out);
            Files.move(tmp, o.json, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            progress("wrote %s", o.json);
        }
        System.exit(ok ? 0 : 1);
    }

    /** The engine flags of configuration {@code c}: the passed-through ones, with the configuration's own winning. */
    static List<String> flagsFor(String c, List<String> engineFlags) {
        List<String> f = new ArrayList<>();
        for (int i = 0; i < engineFlags.size(); i++) {
            String a = engineFlags.get(i);
            boolean value = ServeConfig.VALUE_FLAGS.contains(a);
            boolean overridden = switch (c) {
                case "none" -> a.equals("--host-tokens") || a.equals("--storage") || a.equals("--disable-radix-cache");
                case "device" -> a.equals("--host-tokens") || a.equals("--storage");
                case "host" -> a.equals("--storage");
                default -> a.equals("--storage");
            };
            if (!overridden) {
                f.add(a);
                if (value) {
                    f.add(engineFlags.get(i + 1));
                }
            }
            if (value) {
                i++;
            }
        }
        switch (c) {
            case "none" -> f.add("--disable-radix-cache");
            case "device" -> {
                f.add("--host-tokens");
                f.add("0");
            }
            default -> {
                if (!f.contains("--host-tokens")) {
                    f.add("--host-tokens");
                    f.add("65536");
                }
            }
        }
        return f;
    }

    private static Options parse(String[] args) {
        int clients = 8;
        int rounds = 3;
        int request = 256;
        int output = 32;
        double rate = 2;
        int parallel = 4;
        List<String> configs = List.of("none", "device", "host");
        Path json = null;
        long seed = 1;
        int restoreTokens = 2048;
        List<String> engine = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help")) {
                throw new IllegalArgumentException("usage: scripts/bench-serve [--clients 8] [--rounds 3] "
                    + "[--request-tokens 256] [--output-tokens 32] [--rate 2] [--max-parallel 4] "
                    + "[--configs none,device,host,l3] [--json FILE] [--seed 1] [--restore-tokens 2048] "
                    + "[engine flags: --model, --device-tokens, --host-tokens, --chunk-tokens, ...]");
            }
            if (ServeConfig.SWITCHES.contains(a)) {
                engine.add(a);
                continue;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--clients" -> clients = positive(a, v);
                case "--rounds" -> rounds = positive(a, v);
                case "--request-tokens" -> request = positive(a, v);
                case "--output-tokens" -> output = positive(a, v);
                case "--max-parallel" -> parallel = positive(a, v);
                case "--restore-tokens" -> restoreTokens = positive(a, v);
                case "--seed" -> seed = positive(a, v);
                case "--rate" -> {
                    try {
                        rate = Double.parseDouble(v);
                    } catch (NumberFormatException e) {
                        rate = -1;
                    }
                    if (!(rate >= 0)) {
                        throw new IllegalArgumentException("--rate must be a number of requests per second >= 0 "
                            + "(0: no wait), got " + v);
                    }
                }
                case "--configs" -> {
                    configs = Arrays.stream(v.split(",")).map(String::trim).toList();
                    for (String c : configs) {
                        if (!CONFIGS.contains(c)) {
                            throw new IllegalArgumentException("--configs: unknown configuration '" + c + "'; use "
                                + String.join(",", CONFIGS));
                        }
                    }
                }
                case "--json" -> json = Path.of(v);
                default -> {
                    if (a.equals("--port") || a.equals("--host") || a.equals("--api-key")) {
                        throw new IllegalArgumentException(a + " is chosen by bench-serve for each engine it starts");
                    }
                    if (!ServeConfig.VALUE_FLAGS.contains(a)) {
                        throw new IllegalArgumentException("unknown argument " + a + " (--help lists the flags)");
                    }
                    engine.add(a);
                    engine.add(v);
                }
            }
        }
        return new Options(clients, rounds, request, output, rate, parallel, configs, json, seed, restoreTokens,
            List.copyOf(engine));
    }

    private static int positive(String flag, String v) {
        try {
            int x = Integer.parseInt(v);
            if (x >= 1) {
                return x;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(flag + " must be a positive integer, got " + v);
    }

    private static ModelSpec model(List<String> flags) {
        String m = value(flags, "--model", "tiny");
        int ctx = Integer.parseInt(value(flags, "--context-tokens", Integer.toString(ModelSpec.DEFAULT_CONTEXT)));
        long seed = Long.parseLong(value(flags, "--seed", Long.toString(ModelSpec.DEFAULT_SEED)));
        return ModelSpec.parse(m, ctx, seed);
    }

    private static int pageSize(List<String> flags) {
        return Integer.parseInt(value(flags, "--page-size", "16"));
    }

    private static String value(List<String> flags, String name, String dflt) {
        int i = flags.indexOf(name);
        return i < 0 ? dflt : flags.get(i + 1);
    }

    private static Map<String, Object> summarize(List<BenchClient.Result> rs, double wallS) {
        List<BenchClient.Result> ok = rs.stream().filter(BenchClient.Result::ok).toList();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("requests", ok.size());
        s.put("failed", rs.size() - ok.size());
        s.put("ttft_ms", percentiles(ok.stream().mapToDouble(BenchClient.Result::ttftMs).toArray()));
        s.put("e2e_ms", percentiles(ok.stream().mapToDouble(BenchClient.Result::e2eMs).toArray()));
        s.put("requests_per_s", round(ok.size() / wallS));
        long out = ok.stream().mapToLong(BenchClient.Result::completionTokens).sum();
        s.put("output_tokens_per_s", round(out / wallS));
        long prompt = ok.stream().mapToLong(BenchClient.Result::promptTokens).sum();
        long cached = ok.stream().mapToLong(BenchClient.Result::cachedTokens).sum();
        s.put("cached_token_ratio", prompt == 0 ? 0.0 : round((double) cached / prompt));
        s.put("prompt_tokens", prompt);
        s.put("cached_tokens", cached);
        s.put("wall_s", round(wallS));
        Map<String, Object> where = new LinkedHashMap<>();
        for (String k : List.of("queue_ms", "prefix_wait_ms", "load_wait_ms", "prefill_ms", "other_steps_ms")) {
            where.put(k, round(median(ok.stream().mapToDouble(r -> r.timing() == null ? 0 : r.timing().path(k)
                .asDouble()).toArray())));
        }
        s.put("ttft_median_breakdown_ms", where);
        return s;
    }

    private static Map<String, Double> percentiles(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        Map<String, Double> p = new LinkedHashMap<>();
        p.put("p50", round(pct(s, 50)));
        p.put("p90", round(pct(s, 90)));
        p.put("p99", round(pct(s, 99)));
        p.put("mean", round(Arrays.stream(s).average().orElse(0)));
        return p;
    }

    /** Nearest-rank percentile of sorted {@code s}. */
    static double pct(double[] s, double p) {
        if (s.length == 0) {
            return 0;
        }
        int rank = (int) Math.ceil(p / 100.0 * s.length);
        return s[Math.min(s.length - 1, Math.max(0, rank - 1))];
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return pct(s, 50);
    }

    private static boolean identical(Map<String, List<BenchClient.Result>> all) {
        Map<String, String> first = null;
        for (List<BenchClient.Result> rs : all.values()) {
            Map<String, String> answers = new LinkedHashMap<>();
            rs.stream().sorted(Comparator.comparingInt(BenchClient.Result::session).thenComparingInt(BenchClient.Result::turn))
                .forEach(r -> answers.put(r.session() + "/" + r.turn(), r.ok() ? r.text() : null));
            if (answers.containsValue(null)) {
                return false;
            }
            if (first == null) {
                first = answers;
            } else if (!first.equals(answers)) {
                return false;
            }
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    private static void printTable(Map<String, Object> configs, boolean identical, Map<String, Object> restore) {
        System.out.printf(Locale.ROOT, "%-7s %6s %6s %9s %9s %9s %9s %9s %7s %8s %7s  %s%n", "config", "reqs", "failed",
            "ttft_p50", "ttft_p90", "ttft_p99", "e2e_p50", "e2e_p99", "req/s", "out_tok/s", "cached",
            "ttft p50 parts ms: queue/prefix/load/prefill/other");
        for (Map.Entry<String, Object> e : configs.entrySet()) {
            Map<String, Object> s = (Map<String, Object>) e.getValue();
            Map<String, Double> t = (Map<String, Double>) s.get("ttft_ms");
            Map<String, Double> x = (Map<String, Double>) s.get("e2e_ms");
            Map<String, Object> b = (Map<String, Object>) s.get("ttft_median_breakdown_ms");
            System.out.printf(Locale.ROOT, "%-7s %6s %6s %9.1f %9.1f %9.1f %9.1f %9.1f %7.2f %8.1f %7.3f  %s/%s/%s/%s/%s%n",
                e.getKey(), s.get("requests"), s.get("failed"), t.get("p50"), t.get("p90"), t.get("p99"), x.get("p50"),
                x.get("p99"), num(s.get("requests_per_s")), num(s.get("output_tokens_per_s")), num(s.get("cached_token_ratio")),
                b.get("queue_ms"), b.get("prefix_wait_ms"), b.get("load_wait_ms"), b.get("prefill_ms"),
                b.get("other_steps_ms"));
        }
        System.out.printf(Locale.ROOT, "outputs_identical: %b%n", identical);
        System.out.printf(Locale.ROOT, "restore %s tokens (%s bytes of KV) host tier -> attention buffers: %s GB/s; "
                + "plain copy of the same bytes: %s GB/s; ratio %s (waiting for loaded layers: %s of the restore)%n",
            restore.get("tokens"), restore.get("bytes"), restore.get("restore_gbps"), restore.get("plain_copy_gbps"),
            restore.get("ratio"), restore.get("load_wait_share"));
    }

    private static double num(Object o) {
        return ((Number) o).doubleValue();
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    private static void progress(String fmt, Object... args) {
        System.err.println("bench-serve: " + String.format(Locale.ROOT, fmt, args));
    }
}
