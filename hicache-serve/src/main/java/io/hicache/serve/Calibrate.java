package io.hicache.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.hicache.serve.engine.Calibration;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.ForwardProbe;
import io.hicache.serve.engine.ServeMetrics;
import io.hicache.serve.http.HttpServer;
import io.hicache.serve.model.ModelSpec;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;

/**
 * {@code scripts/serve --calibrate OUT.json [engine flags]}: measures the engine on synthetic shapes (never a trace)
 * and writes its engine profile (docs/SERVING.md, "Calibration"; the format is the simulator's
 * {@code --engine-profile}). The model-level figures come from {@link Calibration}; the per-step and per-request
 * overheads from a few tiny requests through the real HTTP path of an engine started here with the given flags: a
 * one-token answer's time to first token, less the prefill (forward and logits) the engine reports it spent on it, is
 * a request's overhead plus one step's; the time per token after the first, less a decode forward and the logits, is a step's overhead. The
 * profile is written to a temporary file in the same folder and renamed: nothing half-written. Runs on the main
 * thread; exit 0, 1 (a measurement or the write failed), 2 (bad flags).
 */
public final class Calibrate {
    /** Figures are medians of this many repeats. */
    static final int REPEATS = 5;
    private static final ObjectMapper JSON = new ObjectMapper();

    private Calibrate() {
    }

    /** Runs the calibration for {@code cfg}, writing {@code out}; returns the exit status. */
    static int run(ServeConfig cfg, Path out) {
        Path abs = out.toAbsolutePath();
        if (abs.getParent() != null && !Files.isDirectory(abs.getParent())) {
            System.err.println("serve: --calibrate: no such folder " + abs.getParent());
            return 2;
        }
        long t0 = System.nanoTime();
        EngineConfig e = cfg.engine();
        try {
            Calibration.Result m = Calibration.measure(e, REPEATS, Calibrate::progress);
            progress("per-step and per-request overheads through HTTP");
            SpeedProbe.Reading probe;
            try (ForwardProbe fp = ForwardProbe.open(e)) {
                probe = new SpeedProbe.Reading(fp.tokens(), ForwardProbe.RUNS, fp.medianMs(ForwardProbe.RUNS));
            }
            progress("speed probe: a forward of " + probe.tokens() + " tokens takes " + String.format(Locale.ROOT,
                "%.3f", probe.forwardMs()) + " ms");
            Overheads over = overheads(cfg, m);
            Map<String, Object> profile = profile(e, m, over, probe, (System.nanoTime() - t0) / 1e9);
            write(abs, profile);
            System.out.printf(Locale.ROOT, "serve: wrote the engine profile %s (%.0f s): step overhead %.3f ms, request "
                + "overhead %.3f ms, busy prefill factor %.3f, service prefill factor %.3f, logits %.3f ms, decode at "
                + "context 0 %.3f ms, speed probe (%d tokens) %.3f ms%n", out, (System.nanoTime() - t0) / 1e9,
                over.stepMs, over.requestMs,
                over.prefillBusyFactor, over.prefillServiceFactor, m.logitsMs(), m.forward().ms()[0][0],
                probe.tokens(), probe.forwardMs());
            return 0;
        } catch (IOException | RuntimeException ex) {
            if (Boolean.getBoolean("hicache.debug")) {
                ex.printStackTrace();
            }
            System.err.println("serve: calibration failed: " + (ex.getMessage() == null ? ex.toString() : ex.getMessage()));
            return 1;
        }
    }

    /**
     * The profile in the contract's format (docs/SERVING.md, "Calibration"), as a JSON tree of maps and arrays. Pure:
     * any thread.
     */
    public static Map<String, Object> profile(EngineConfig e, Calibration.Result m, Overheads over,
                                              SpeedProbe.Reading probe, double seconds) {
        ModelSpec s = e.model();
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("format", "hicache-engine-profile");
        p.put("version", 1);
        p.put("engine", "hicache-serve (Jlama " + s.id() + ", one sequence per forward)");
        Map<String, Object> model = new LinkedHashMap<>();
        model.put("id", s.id());
        model.put("layers", s.layers());
        model.put("hidden", s.hidden());
        model.put("heads", s.heads());
        model.put("kv_heads", s.kvHeads());
        model.put("ffn", s.ffn());
        model.put("vocab", s.vocab());
        model.put("context_tokens", s.contextTokens());
        p.put("model", model);
        p.put("page_size", e.pageSize());
        p.put("kv_bytes_per_token", m.kvBytesPerToken());
        Map<String, Object> sched = new LinkedHashMap<>();
        sched.put("chunk_tokens", e.chunkTokens());
        sched.put("max_running", e.maxRunning());
        sched.put("policy", "per step: one prefill chunk (<= chunk_tokens) of the oldest prefilling request, then one "
            + "decode token for every decoding request; each a forward of one sequence; FCFS admission up to "
            + "max_running, device pages reserved for the prompt and the most it may generate");
        p.put("scheduler", sched);
        Map<String, Object> fwd = new LinkedHashMap<>();
        fwd.put("tokens", m.forward().tokens());
        fwd.put("context", m.forward().context());
        fwd.put("ms", round(m.forward().ms()));
        p.put("forward_ms", fwd);
        Map<String, Object> raw = new LinkedHashMap<>(); // not read by the simulator: the medians the fit smoothed
        raw.put("tokens", m.measured().tokens());
        raw.put("context", m.measured().context());
        raw.put("ms", round(m.measured().ms()));
        p.put("forward_ms_medians", raw);
        p.put("logits_ms", round(m.logitsMs()));
        p.put("step_overhead_ms", round(over.stepMs()));
        p.put("request_overhead_ms", round(over.requestMs()));
        p.put("prefill_busy_factor", round(over.prefillBusyFactor()));
        p.put("prefill_service_factor", round(over.prefillServiceFactor()));
        p.put("load", copy(m.load()));
        p.put("backup", copy(m.backup()));
        if (probe != null) { // not read by the simulator: validate-sim's reference for the machine's speed
            Map<String, Object> sp = new LinkedHashMap<>();
            sp.put("tokens", probe.tokens());
            sp.put("runs", probe.runs());
            sp.put("forward_ms", round(probe.forwardMs()));
            p.put("speed_probe", sp);
        }
        Map<String, Object> cal = new LinkedHashMap<>();
        cal.put("date", Instant.now().toString());
        cal.put("machine", System.getProperty("os.arch") + ", " + Runtime.getRuntime().availableProcessors()
            + " processors, Java " + Runtime.version());
        cal.put("runs", m.repeats());
        cal.put("notes", String.format(Locale.ROOT, "synthetic shapes only (random ids, no trace); forward_ms: "
            + "medians of %d rounds over the grid after a JIT warm-up, fitted (decode a + b*ctx; prefill a + b*t + c*ctx "
            + "+ d*t*ctx + e*t^2; forward_ms_medians has the medians); overheads from tiny requests over HTTP; the "
            + "service factor from synthetic conversations over HTTP; took %.0f s", m.repeats(), seconds));
        p.put("calibration", cal);
        return p;
    }

    private static Map<String, Object> copy(Calibration.Copy c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("bytes_per_s", Math.round(c.bytesPerS()));
        m.put("fixed_ms", round(c.fixedMs()));
        return m;
    }

    /**
     * The HTTP-path figures: per-step and per-request overheads in ms, the prefill's busy factor (beside decoding
     * streams) and its service factor (the served prefill over the grid, {@link ServiceFactor}).
     */
    public record Overheads(double stepMs, double requestMs, double prefillBusyFactor, double prefillServiceFactor) {
    }

    /**
     * The overheads from an engine with {@code cfg}'s flags on a free port, sent tiny requests of fresh random ids
     * (no cache hit), interleaved: nine one-token answers (TTFT) and five of 33 tokens (the time per token after the
     * first).
     */
    static Overheads overheads(ServeConfig cfg, Calibration.Result m) throws IOException {
        Engine engine = new Engine(cfg.engine(), new ServeMetrics());
        engine.start();
        HttpServer http = new HttpServer(engine, "127.0.0.1", 0, null, cfg.maxBodyBytes());
        try {
            int port = http.start();
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10)).build();
            String url = "http://127.0.0.1:" + port + "/generate";
            SplittableRandom rnd = new SplittableRandom(5);
            int vocab = cfg.engine().model().vocab();
            int prompt = 16;
            int decode = 33;
            for (int i = 0; i < 12; i++) { // the HTTP path's JIT (the forwards are warm already)
                timed(client, url, ids(rnd, prompt, vocab), 4);
            }
            // interleaved, so that the machine's load at one moment weighs on both figures alike
            double[] ttft = new double[9];
            double[] perToken = new double[5];
            for (int i = 0; i < ttft.length; i++) {
                Timed t1 = timed(client, url, ids(rnd, prompt, vocab), 1);
                ttft[i] = t1.ttftMs() - t1.prefillMs(); // less the prefill the engine itself timed (forward, logits)
                if (i < perToken.length) {
                    Timed t = timed(client, url, ids(rnd, prompt, vocab), decode);
                    perToken[i] = (t.e2eMs() - t.ttftMs()) / (decode - 1);
                }
            }
            Calibration.Grid g = m.forward();
            double decodeMs = interpolate(g, 1, prompt + decode / 2.0);
            double step = Math.max(0, Calibration.median(perToken) - decodeMs - m.logitsMs());
            double request = Math.max(0, Calibration.median(ttft) - step);
            double busy = busyFactor(cfg, client, url, rnd);
            return new Overheads(step, request, busy,
                ServiceFactor.measure(cfg.engine(), m, client, url, rnd, ServiceFactor.IDLE_MS).factor());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            http.closeListener();
            engine.shutdown(0);
            http.stop();
        }
    }

    /**
     * How much longer a prefill takes while other requests decode beside it, streaming their tokens to a client, than
     * alone: the engine's own prefill time of fresh prompts of the speed probe's length, in three blocks of four alone
     * and then up to five while {@code bg} streams decode (each a fresh prompt of 16 tokens, as many new tokens as the
     * device pool leaves room for, read line by line and parsed as a client does); the ratio of the medians. 1 when the
     * pool leaves no room for streams of 32 tokens or more.
     */
    private static double busyFactor(ServeConfig cfg, HttpClient client, String url, SplittableRandom rnd)
        throws IOException, InterruptedException {
        EngineConfig e = cfg.engine();
        int vocab = e.model().vocab();
        int ps = e.pageSize();
        int probe = ForwardProbe.tokens(e.model().contextTokens());
        int bg = Math.max(1, Math.min(3, e.maxRunning() - 1));
        int room = e.deviceTokens() - probe - 2 * ps;
        int out = Math.min(Math.min(400, room / bg - 16 - 2 * ps), e.model().contextTokens() - 32);
        if (e.maxRunning() < 2 || out < 32) {
            return 1;
        }
        // three blocks of prefills alone then beside fresh streams, so that the machine's drift weighs on both alike
        double[] alone = new double[3 * ALONE_PER_BLOCK];
        double[] busy = new double[3 * BUSY_PER_BLOCK];
        int n = 0;
        for (int block = 0; block < 3; block++) {
            for (int i = 0; i < ALONE_PER_BLOCK; i++) {
                alone[block * ALONE_PER_BLOCK + i] = timed(client, url, ids(rnd, probe, vocab), 1).prefillMs();
            }
            n += busyBlock(client, url, rnd, bg, out, probe, vocab, busy, n);
        }
        if (n < 6) {
            progress("busy prefill: the streams ended before six prefills were timed beside them; factor 1");
            return 1;
        }
        double a = Calibration.median(alone);
        double b = Calibration.median(Arrays.copyOf(busy, n));
        progress(String.format(Locale.ROOT, "busy prefill: %d tokens take %.1f ms alone and %.1f ms beside %d decoding "
            + "streams (median of %d and %d)", probe, a, b, bg, alone.length, n));
        return b / a;
    }

    private static final int ALONE_PER_BLOCK = 4;
    private static final int BUSY_PER_BLOCK = 5;

    /**
     * Starts {@code bg} decoding streams, times up to {@link #BUSY_PER_BLOCK} prefills beside them into
     * {@code busy[from...]} (each kept only if every stream still decoded when it ended), waits for the streams to end;
     * returns how many it kept.
     */
    private static int busyBlock(HttpClient client, String url, SplittableRandom rnd, int bg, int out, int probe,
                                 int vocab, double[] busy, int from) throws InterruptedException, IOException {
        java.util.concurrent.CountDownLatch decoding = new java.util.concurrent.CountDownLatch(bg);
        java.util.concurrent.atomic.AtomicInteger finished = new java.util.concurrent.atomic.AtomicInteger();
        List<Thread> streams = new java.util.ArrayList<>();
        for (int b = 0; b < bg; b++) {
            int[] p = ids(rnd, 16, vocab);
            streams.add(Thread.ofVirtual().start(() -> {
                try {
                    stream(client, url, p, out, decoding);
                } catch (IOException | RuntimeException ex) {
                    decoding.countDown();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                } finally {
                    finished.incrementAndGet();
                }
            }));
        }
        decoding.await();
        int n = 0;
        while (n < BUSY_PER_BLOCK && finished.get() == 0) {
            double ms = timed(client, url, ids(rnd, probe, vocab), 1).prefillMs();
            if (finished.get() == 0) {
                busy[from + n++] = ms;
            }
        }
        for (Thread t : streams) {
            t.join();
        }
        return n;
    }

    /** Streams one {@code /generate} of {@code max} new tokens, counting {@code first} down at its first token. */
    private static void stream(HttpClient client, String url, int[] ids, int max,
                               java.util.concurrent.CountDownLatch first) throws IOException, InterruptedException {
        String body = generateBody(ids, max);
        HttpResponse<Stream<String>> r = client.send(HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
            HttpResponse.BodyHandlers.ofLines());
        boolean counted = false;
        try (Stream<String> lines = r.body()) {
            for (String line : (Iterable<String>) lines::iterator) {
                if (line.startsWith("data:") && !line.contains("[DONE]")) {
                    JSON.readTree(line.substring(5).strip()); // as a client parses each event
                    if (!counted) {
                        first.countDown();
                        counted = true;
                    }
                }
            }
        } finally {
            if (!counted) {
                first.countDown();
            }
        }
    }

    /** A streamed, greedy {@code /generate} of {@code ids} with exactly {@code max} new tokens. */
    private static String generateBody(int[] ids, int max) {
        return "{\"input_ids\":" + Arrays.toString(ids).replace(" ", "") + ",\"stream\":true,"
            + "\"sampling_params\":{\"max_new_tokens\":" + max + ",\"temperature\":0,\"ignore_eos\":true}}";
    }

    static int[] ids(SplittableRandom rnd, int n, int vocab) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = 3 + rnd.nextInt(vocab - 3);
        }
        return ids;
    }

    /**
     * One timed request: time to first token and end to end on the client's clock; the engine's prefill, its load
     * wait and the prompt tokens it found cached, from the final event's {@code meta_info}
     * ({@code hicache_timing.prefill_ms}, {@code hicache_timing.load_wait_ms}, {@code cached_tokens}).
     */
    record Timed(double ttftMs, double e2eMs, double prefillMs, double loadWaitMs, int cachedTokens) {
    }

    /** Streams one {@code /generate} of {@code ids} with {@code max} new tokens and times it. */
    static Timed timed(HttpClient client, String url, int[] ids, int max) throws IOException, InterruptedException {
        String body = generateBody(ids, max);
        long t0 = System.nanoTime();
        HttpResponse<Stream<String>> r = client.send(HttpRequest.newBuilder(URI.create(url))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
            HttpResponse.BodyHandlers.ofLines());
        double ttft = -1;
        double prefill = 0;
        int cached = 0;
        double loadWait = 0;
        try (Stream<String> lines = r.body()) {
            if (r.statusCode() != 200) {
                throw new IOException("the engine answered a calibration request with HTTP " + r.statusCode() + ": "
                    + String.join(" ", lines.toList()));
            }
            for (String line : (Iterable<String>) lines::iterator) {
                if (!line.startsWith("data:")) {
                    continue;
                }
                String v = line.substring(5).strip();
                if (v.equals("[DONE]")) {
                    double e2e = (System.nanoTime() - t0) / 1e6;
                    return new Timed(ttft < 0 ? e2e : ttft, e2e, prefill, loadWait, cached);
                }
                JsonNode d = JSON.readTree(v);
                if (ttft < 0 && !d.path("text").asText().isEmpty()) {
                    ttft = (System.nanoTime() - t0) / 1e6;
                }
                JsonNode timing = d.path("meta_info").path("hicache_timing");
                if (timing.has("prefill_ms")) {
                    prefill = timing.path("prefill_ms").asDouble();
                    loadWait = timing.path("load_wait_ms").asDouble();
                    cached = d.path("meta_info").path("cached_tokens").asInt();
                }
            }
        }
        throw new IOException("a calibration request's stream ended without [DONE]");
    }

    /**
     * The profile's reading of the grid: bilinear inside, linear extrapolation from the last two points past the last
     * row or column, clamped at 0.
     */
    static double interpolate(Calibration.Grid g, double tokens, double context) {
        int[] ta = g.tokens();
        int[] ca = g.context();
        int i = segment(ta, tokens);
        int j = segment(ca, context);
        double fi = ta.length == 1 ? 0 : (tokens - ta[i]) / (ta[i + 1] - ta[i]);
        double fj = ca.length == 1 ? 0 : (context - ca[j]) / (ca[j + 1] - ca[j]);
        double[][] ms = g.ms();
        int i1 = Math.min(i + 1, ta.length - 1);
        int j1 = Math.min(j + 1, ca.length - 1);
        double a = ms[i][j] + (ms[i][j1] - ms[i][j]) * fj;
        double b = ms[i1][j] + (ms[i1][j1] - ms[i1][j]) * fj;
        return Math.max(0, a + (b - a) * fi);
    }

    /** The index {@code k} of the segment {@code [axis[k], axis[k+1]]} to read {@code x} on (the last for beyond). */
    private static int segment(int[] axis, double x) {
        if (axis.length == 1) {
            return 0;
        }
        int k = 0;
        while (k < axis.length - 2 && x > axis[k + 1]) {
            k++;
        }
        return k;
    }

    /**
     * Writes {@code profile} to {@code out} whole or not at all (a temporary file in the same folder, renamed over
     * it). Any thread; one writer per file.
     *
     * @throws IOException the folder cannot take the file (nothing is left behind)
     */
    public static void write(Path out, Map<String, Object> profile) throws IOException {
        Path tmp = out.resolveSibling("." + out.getFileName() + ".tmp");
        try {
            JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValue(tmp.toFile(), profile);
            Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private static double round(double v) {
        return Math.round(v * 10000) / 10000.0;
    }

    private static double[][] round(double[][] v) {
        double[][] r = new double[v.length][];
        for (int i = 0; i < v.length; i++) {
            r[i] = Arrays.stream(v[i]).map(Calibrate::round).toArray();
        }
        return r;
    }

    static void progress(String line) {
        System.err.println("serve: calibrate: " + line);
    }

    /** {@code args} without {@code --calibrate FILE}, and the file (null when absent). */
    static Map.Entry<List<String>, String> split(String[] args) {
        List<String> rest = new java.util.ArrayList<>();
        String file = null;
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--calibrate")) {
                if (i + 1 >= args.length) {
                    throw new ServeConfig.UsageException("--calibrate needs a file (the profile to write)");
                }
                file = args[++i];
            } else {
                rest.add(args[i]);
            }
        }
        return Map.entry(rest, file == null ? "" : file);
    }
}
