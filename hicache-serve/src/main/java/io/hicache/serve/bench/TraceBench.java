package io.hicache.serve.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.serve.ServeConfig;
import io.hicache.serve.SpeedProbe;
import io.hicache.serve.model.ByteTokenizer;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TraceFormatException;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * {@code scripts/bench-serve --trace FILE}: replays a trace in any format the simulator reads against the engine over
 * HTTP and writes the fields of {@code hicache-sim replay --json} as the client and the engine measured them. Each
 * request is SGLang's streaming {@code /generate} with {@code input_ids} ({@link TraceTokens}: the simulator's expansion,
 * remapped into the engine's vocabulary), {@code max_new_tokens} = the trace's output length, {@code ignore_eos} and
 * temperature 0, sent at its trace time divided by {@code --time-scale}; a turn whose trace names an earlier request
 * it follows is sent no earlier than that one finished (the simulator's closed loop), with the answer the engine
 * actually gave in place of the trace's answer tokens (the part of its prompt that repeats the earlier prompt and
 * answer, as a chat client resends them), so the engine's cache can find the answer as the simulator's finds it under
 * the trace's keys. TTFT is the first streamed event with text, the end-to-end time the {@code [DONE]} line, TPOT
 * their difference over the tokens after the first; queueing and the cached tokens per tier come from the engine's
 * {@code meta_info}.
 *
 * <p>Runs on the calling thread with one virtual thread per request. Exit 0 when every request succeeded, 1 when the
 * engine is unreachable or a request failed, 2 on a bad command line or a trace the engine cannot take (a request
 * longer than its context). The JSON is written whole or not at all (a temporary file, then a rename).
 */
public final class TraceBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A bad command line or trace: one line, exit 2. */
    static final class Usage extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Usage(String m) {
            super(m, null, false, false);
        }
    }

    /** A run that failed: one line, exit 1. */
    static final class Failed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failed(String m) {
            super(m, null, false, false);
        }
    }

    /**
     * The flags of a replay; {@code gapProbes}: read the engine's speed probe in the replay's idle gaps;
     * {@code serviceProbe}: take {@link ServiceProbe}'s samples before the replay.
     */
    record Options(String trace, double timeScale, long limit, int blockTokens, Path json, String url,
                   boolean closedLoop, int warmup, List<String> engineFlags, Path requestsJson, boolean gapProbes,
                   boolean serviceProbe) {
        Options(String trace, double timeScale, long limit, int blockTokens, Path json, String url, boolean closedLoop,
                int warmup, List<String> engineFlags) {
            this(trace, timeScale, limit, blockTokens, json, url, closedLoop, warmup, engineFlags, null, false, false);
        }
    }

    /** One request's outcome, on the client's clock (ms since the replay started) and the engine's usage. */
    record Outcome(Request request, boolean ok, String error, double sentMs, double ttftMs, double e2eMs, int[] prompt,
                   int[] generated, int cached, int cachedDevice, int cachedHost, int cachedStorage, double queueMs,
                   double engineTtftMs, boolean waited, JsonNode timing) {
    }

    private TraceBench() {
    }

    /** Whether {@code args} ask for a trace replay. */
    public static boolean wanted(String[] args) {
        return Arrays.asList(args).contains("--trace");
    }

    public static void main(String[] args) {
        int code;
        try {
            code = run(args);
        } catch (Usage e) {
            System.err.println("bench-serve: " + e.getMessage());
            code = 2;
        } catch (Failed e) {
            System.err.println("bench-serve: " + e.getMessage());
            code = 1;
        }
        System.exit(code);
    }

    static int run(String[] args) {
        Options o = parse(args);
        Path root = Path.of(System.getProperty("hicache.root", ".")).toAbsolutePath();
        TraceSource src;
        List<Request> requests = new ArrayList<>();
        try {
            src = TraceSource.parse(o.trace, Path.of("").toAbsolutePath(), root, o.limit);
            if (!Files.isRegularFile(src.path())) {
                throw new Usage("--trace: no such file " + src.path());
            }
            src.scan();
            try (TraceReader r = src.open()) {
                Request q;
                while ((q = r.next()) != null) {
                    requests.add(q);
                }
            }
        } catch (TraceFormatException | IllegalArgumentException e) {
            throw new Usage("--trace: " + e.getMessage());
        } catch (IOException | java.io.UncheckedIOException e) {
            throw new Usage("--trace: " + e.getMessage());
        }
        if (requests.isEmpty()) {
            throw new Usage("--trace: the trace has no requests");
        }
        int blockTokens = o.blockTokens > 0 ? o.blockTokens : src.blockSize();
        Processes.EngineProcess started = null;
        try {
            String url = o.url;
            if (url == null) {
                Path log;
                try {
                    log = Files.createTempFile("bench-serve-trace", ".log");
                    progress("starting the engine (%s)", String.join(" ", o.engineFlags));
                    started = Processes.EngineProcess.start(root, o.engineFlags, log);
                } catch (IOException e) {
                    throw new Failed("the engine did not start: " + e.getMessage());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new Failed("interrupted while the engine started");
                }
                url = "http://127.0.0.1:" + started.port;
            }
            Client client = new Client(url);
            JsonNode model = client.getJson("/get_model_info");
            JsonNode server = client.getJson("/get_server_info");
            int vocab = model.path("vocab_size").asInt();
            int context = model.path("max_context_length").asInt();
            int pageSize = server.path("page_size").asInt(16);
            TraceTokens tokens;
            try {
                tokens = new TraceTokens(blockTokens, pageSize, vocab);
            } catch (IllegalArgumentException e) {
                throw new Usage(e.getMessage());
            }
            List<int[]> raw = new ArrayList<>();
            List<int[]> rawConv = new ArrayList<>();
            for (Request r : requests) {
                int[] t = tokens.raw(r);
                if ((long) t.length + Math.max(1, r.outputLength()) > context) {
                    throw new Usage("request " + r.index() + " (trace id " + r.id() + ") needs " + t.length
                        + " prompt + " + r.outputLength() + " output tokens, beyond the engine's context of " + context
                        + " tokens (--context-tokens, or --limit the trace)");
                }
                raw.add(t);
                rawConv.add(tokens.rawConversation(r));
            }
            if (o.warmup > 0) {
                progress("warming the engine up with %d synthetic requests, then flushing its cache", o.warmup);
                client.warmUp(o.warmup, vocab, Math.max(pageSize,
                    Math.min(Math.min(context / 2, 512), server.path("device_tokens").asInt(1024) / 2 / pageSize * pageSize - 16)));
                client.flush();
            }
            Map<String, Object> service = null;
            if (o.serviceProbe()) {
                progress("timing synthetic prefills for the service factor (random ids), then flushing the cache");
                service = ServiceProbe.run(client, vocab, context, server.path("device_tokens").asInt(1024));
            }
            SpeedProbe.Reading before = client.probe();
            progress("replaying %d requests of %s at time scale %s against %s", requests.size(), src.name(),
                o.timeScale, url);
            GapProbes gaps = o.gapProbes() && before != null
                ? new GapProbes(client::gapReading, before.forwardMs() * (GapProbes.RUNS + GapProbes.WARM)) : null;
            List<Outcome> out = replay(client, requests, raw, rawConv, tokens, o, gaps);
            Map<String, Object> s = summarize(out, src.name(), blockTokens, pageSize, o);
            SpeedProbe.Reading after = before == null ? null : client.probe();
            if (after != null) { // the machine's speed around the replay, for validate-sim (not a replay figure)
                Map<String, Object> sp = new LinkedHashMap<>();
                sp.put("tokens", before.tokens());
                sp.put("runs", before.runs());
                sp.put("before_ms", before.forwardMs());
                sp.put("after_ms", after.forwardMs());
                if (gaps != null) {
                    sp.put("gaps", gaps.summary());
                }
                s.put("engine_speed_probe", sp);
                progress("speed probe (a forward of %d tokens): %.1f ms before the replay, %.1f ms after%s",
                    before.tokens(), before.forwardMs(), after.forwardMs(), gaps == null ? "" : ", " + gaps);
            }
            if (service != null) { // the service factor's samples before the replay, for validate-sim
                s.put("engine_service_probe", service);
            }
            printSummary(s);
            if (o.requestsJson != null) {
                writeAtomically(o.requestsJson, perRequest(out));
                progress("wrote %s", o.requestsJson);
            }
            if (o.json != null) {
                writeAtomically(o.json, s);
                progress("wrote %s", o.json);
            }
            long failed = out.stream().filter(x -> !x.ok).count();
            if (failed > 0) {
                Outcome f = out.stream().filter(x -> !x.ok).findFirst().orElseThrow();
                progress("%d requests failed; the first (request %d): %s", failed, f.request.index(), f.error);
                return 1;
            }
            return 0;
        } finally {
            if (started != null) {
                started.close();
            }
        }
    }

    // ------------------------------------------------------------------ the replay

    /**
     * Sends every request at its time (and after the turn it follows), each on a virtual thread; returns the
     * outcomes in trace order. With {@code gaps}, reads the engine's speed probe in the replay's idle gaps.
     */
    static List<Outcome> replay(Client client, List<Request> requests, List<int[]> raw, List<int[]> rawConv,
                                TraceTokens tokens, Options o, GapProbes gaps) {
        Map<Long, Integer> byId = new HashMap<>();
        List<CompletableFuture<Outcome>> done = new ArrayList<>();
        // released(i): request i has been handed to the HTTP client, or waits for the turn it follows; the next
        // request waits for it, so that requests of one arrival time reach the engine in trace order
        List<CompletableFuture<Void>> released = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            done.add(new CompletableFuture<>());
            released.add(new CompletableFuture<>());
        }
        long t0 = System.nanoTime();
        if (gaps != null) {
            long[] due = new long[requests.size()];
            for (int i = 0; i < due.length; i++) {
                due[i] = t0 + (long) (requests.get(i).arrivalNs() / o.timeScale);
            }
            gaps.start(t0, due);
        }
        for (int i = 0; i < requests.size(); i++) {
            Request r = requests.get(i);
            Integer parent = o.closedLoop && r.parentId() >= 0 ? byId.get(r.parentId()) : null;
            byId.put(r.id(), i);
            int index = i;
            Thread.ofVirtual().start(() -> {
                Outcome res;
                try {
                    long at = t0 + (long) (r.arrivalNs() / o.timeScale);
                    for (long now; (now = System.nanoTime()) < at; ) {
                        LockSupport.parkNanos(at - now);
                    }
                    if (index > 0) {
                        released.get(index - 1).join();
                    }
                    CompletableFuture<Outcome> p = parent == null ? null : done.get(parent);
                    if (p != null && !p.isDone()) {
                        released.get(index).complete(null);
                    }
                    Outcome po = p == null ? null : p.join();
                    boolean waited = po != null && System.nanoTime() > at;
                    int[] prompt = prompt(tokens, raw.get(index), po, po == null ? null : rawConv.get(parent));
                    if (gaps != null) {
                        gaps.sending(index);
                    }
                    try {
                        res = client.generate(r, prompt, t0, waited, released.get(index));
                    } finally {
                        if (gaps != null) {
                            gaps.finished();
                        }
                    }
                } catch (RuntimeException e) {
                    res = failed(r, e.toString());
                }
                released.get(index).complete(null);
                done.get(index).complete(res);
            });
        }
        List<Outcome> out = new ArrayList<>();
        int n = 0;
        for (CompletableFuture<Outcome> f : done) {
            Outcome x = f.join();
            out.add(x);
            n++;
            if (!x.ok) {
                progress("request %d failed: %s", x.request.index(), x.error);
            } else if (n % Math.max(1, requests.size() / 10) == 0 || n == requests.size()) {
                progress("%d/%d requests, TTFT %.0f ms, cached %d of %d prompt tokens", n, requests.size(), x.ttftMs,
                    x.cached, x.prompt.length);
            }
        }
        if (gaps != null) {
            gaps.close(); // every request is answered: no more gaps
        }
        return out;
    }

    /**
     * The ids sent for a request: the remapped expansion of its prompt, where it repeats the prompt and answer of the
     * turn it follows ({@code parent}; the common prefix of its expansion and the parent's conversation expansion),
     * with what was sent for the parent's prompt and the tokens the engine generated for its answer instead.
     */
    static int[] prompt(TraceTokens tokens, int[] raw, Outcome parent, int[] parentConversation) {
        int[] prompt = tokens.remap(raw);
        if (parent == null || !parent.ok) {
            return prompt;
        }
        int common = 0;
        int lim = Math.min(raw.length, parentConversation.length);
        while (common < lim && raw[common] == parentConversation[common]) {
            common++;
        }
        int[] sent = parent.prompt;
        int[] gen = parent.generated;
        for (int i = 0; i < common; i++) {
            if (i < sent.length) {
                prompt[i] = sent[i];
            } else if (i - sent.length < gen.length) {
                prompt[i] = gen[i - sent.length];
            } else {
                break;
            }
        }
        return prompt;
    }

    private static Outcome failed(Request r, String error) {
        return new Outcome(r, false, error, 0, 0, 0, new int[0], new int[0], 0, 0, 0, 0, 0, 0, false, null);
    }

    /** The HTTP side: one client, streaming {@code /generate}, retrying 503 (a full queue) after its Retry-After. */
    static final class Client {
        private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1).build();
        private final String url;

        Client(String url) {
            this.url = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
        }

        JsonNode getJson(String path) {
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + path))
                    .timeout(Duration.ofSeconds(30)).GET().build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new Failed("the engine at " + url + " answered " + path + " with HTTP " + r.statusCode());
                }
                return JSON.readTree(r.body());
            } catch (IOException | IllegalArgumentException e) {
                throw new Failed("the engine at " + url + " is not reachable: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new Failed("interrupted");
            }
        }

        /** One reading in a replay's gap: {@link GapProbes#RUNS} forwards after {@link GapProbes#WARM}. */
        double gapReading() throws IOException, InterruptedException {
            return SpeedProbe.measure(http, url, GapProbes.RUNS, GapProbes.WARM).forwardMs();
        }

        /** The engine's {@link SpeedProbe} reading, or null (with a line) when the engine has no speed probe. */
        SpeedProbe.Reading probe() {
            try {
                return SpeedProbe.measure(http, url, io.hicache.serve.engine.ForwardProbe.RUNS);
            } catch (IOException e) {
                progress("no speed probe: %s", e.getMessage());
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new Failed("interrupted");
            }
        }

        /**
         * Sends {@code n} requests of random ids ({@code tokens} long, 8 new tokens) one after the other, so that the
         * engine's JIT has compiled its paths before the replay's clock starts.
         */
        void warmUp(int n, int vocab, int tokens) {
            java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
            for (int i = 0; i < n; i++) {
                // a prompt, then the same prompt extended: the second prefill runs over a cached context, as a
                // follow-up turn's does
                int[] ids = new int[tokens];
                for (int k = 0; k < tokens; k++) {
                    ids[k] = ByteTokenizer.FIRST_BYTE + rnd.nextInt(vocab - ByteTokenizer.FIRST_BYTE);
                }
                for (int len : new int[] {Math.max(1, tokens / 2), tokens}) {
                    Request shape = new Request(0, -1, 0, len, 8, new int[] {0}, len);
                    Outcome x = generate(shape, Arrays.copyOf(ids, len), System.nanoTime(), false);
                    if (!x.ok) {
                        throw new Failed("a warm-up request failed: " + x.error);
                    }
                }
            }
        }

        /** Empties the engine's cache ({@code /flush_cache}, retried while requests are still held). */
        void flush() {
            try {
                for (int attempt = 0; ; attempt++) {
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/flush_cache"))
                        .timeout(Duration.ofSeconds(30)).POST(HttpRequest.BodyPublishers.noBody()).build(),
                        HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 200) {
                        return;
                    }
                    if (r.statusCode() != 409 || attempt > 600) {
                        throw new Failed("the engine refused /flush_cache: HTTP " + r.statusCode());
                    }
                    Thread.sleep(50);
                }
            } catch (IOException e) {
                throw new Failed("the engine at " + url + " is not reachable: " + e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new Failed("interrupted");
            }
        }

        Outcome generate(Request r, int[] prompt, long t0, boolean waited) {
            return generate(r, prompt, t0, waited, null);
        }

        /** Sends one request; {@code sending}, when given, completes as the request goes to the HTTP client. */
        Outcome generate(Request r, int[] prompt, long t0, boolean waited, CompletableFuture<Void> sending) {
            ObjectNode body = JSON.createObjectNode();
            ArrayNode ids = body.putArray("input_ids");
            for (int id : prompt) {
                ids.add(id);
            }
            ObjectNode sp = body.putObject("sampling_params");
            sp.put("temperature", 0.0);
            sp.put("max_new_tokens", Math.max(1, r.outputLength()));
            sp.put("ignore_eos", true);
            body.put("stream", true);
            long sent = System.nanoTime();
            try {
                String json = JSON.writeValueAsString(body);
                for (int attempt = 0; ; attempt++) {
                    HttpRequest hr = HttpRequest.newBuilder(URI.create(url + "/generate")).timeout(Duration.ofMinutes(30))
                        .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json))
                        .build();
                    CompletableFuture<HttpResponse<Stream<String>>> pending =
                        http.sendAsync(hr, HttpResponse.BodyHandlers.ofLines());
                    if (sending != null) {
                        sending.complete(null);
                    }
                    HttpResponse<Stream<String>> resp;
                    try {
                        resp = pending.get();
                    } catch (java.util.concurrent.ExecutionException e) {
                        return failed(r, String.valueOf(e.getCause()));
                    }
                    if (resp.statusCode() == 503 && attempt < 1000) {
                        resp.body().close();
                        long ms = resp.headers().firstValueAsLong("Retry-After").orElse(1) * 1000;
                        Thread.sleep(Math.min(ms, 200));
                        continue;
                    }
                    if (resp.statusCode() != 200) {
                        String err;
                        try (Stream<String> b = resp.body()) {
                            err = String.join(" ", b.toList());
                        }
                        return failed(r, "HTTP " + resp.statusCode() + ": " + err);
                    }
                    return read(r, prompt, resp, t0, sent, waited);
                }
            } catch (IOException e) {
                return failed(r, e.toString());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return failed(r, "interrupted");
            }
        }

        private Outcome read(Request r, int[] prompt, HttpResponse<Stream<String>> resp, long t0, long sent,
                             boolean waited) throws IOException {
            double ttft = -1;
            double e2e = -1;
            JsonNode last = null;
            try (Stream<String> lines = resp.body()) {
                for (String line : (Iterable<String>) lines::iterator) {
                    line = line.strip();
                    if (!line.startsWith("data:")) {
                        continue;
                    }
                    String v = line.substring(5).strip();
                    if (v.equals("[DONE]")) {
                        e2e = (System.nanoTime() - sent) / 1e6;
                        break;
                    }
                    JsonNode d = JSON.readTree(v);
                    if (d.has("error")) {
                        return failed(r, d.get("error").path("message").asText());
                    }
                    if (ttft < 0 && !d.path("text").asText().isEmpty()) {
                        ttft = (System.nanoTime() - sent) / 1e6;
                    }
                    last = d;
                }
            }
            if (last == null || e2e < 0) {
                return failed(r, "the stream ended without [DONE]");
            }
            JsonNode m = last.path("meta_info");
            JsonNode det = m.path("cached_tokens_details");
            int[] gen = ByteTokenizer.encode(last.path("text").asText());
            return new Outcome(r, true, null, (sent - t0) / 1e6, ttft < 0 ? e2e : ttft, e2e, prompt, gen,
                m.path("cached_tokens").asInt(), det.path("device").asInt(), det.path("host").asInt(),
                det.path("storage").asInt(), m.path("hicache_timing").path("queue_ms").asDouble(),
                m.path("hicache_timing").path("ttft_ms").asDouble(), waited, m.path("hicache_timing"));
        }
    }

    // ------------------------------------------------------------------ the figures

    /** The replay JSON's fields (as {@code hicache-sim replay --json} names them), from the outcomes. */
    static Map<String, Object> summarize(List<Outcome> all, String trace, int blockTokens, int pageSize, Options o) {
        List<Outcome> ok = all.stream().filter(x -> x.ok).toList();
        long input = 0;
        long blocks = 0;
        double hitBlocks = 0;
        long hitPrompt = 0;
        long device = 0;
        long host = 0;
        long storage = 0;
        long output = 0;
        double first = Double.MAX_VALUE;
        double last = 0;
        List<Double> tpot = new ArrayList<>();
        for (Outcome x : ok) {
            Request r = x.request;
            input += r.inputLength();
            blocks += r.blockCount();
            int tokenCount = x.prompt.length;
            // the engine's tokens are the simulator's expansion (blockTokens a block), so the hits count as the
            // simulator's HitStats counts them: whole blocks of the expansion, tokens scaled to the trace's own
            int hit = Math.min(x.cached, tokenCount);
            hitBlocks += hit >= tokenCount ? r.blockCount() : hit / blockTokens;
            hitPrompt += Math.min((long) hit * r.blockSize() / blockTokens, r.inputLength());
            device += x.cachedDevice;
            host += x.cachedHost;
            storage += x.cachedStorage;
            output += x.generated.length;
            first = Math.min(first, x.sentMs);
            last = Math.max(last, x.sentMs + x.e2eMs);
            if (x.generated.length > 1) {
                tpot.add((x.e2eMs - x.ttftMs) / (x.generated.length - 1));
            }
        }
        double spanS = ok.isEmpty() ? 0 : Math.max(1e-9, (last - first) / 1000);
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("trace", trace);
        s.put("engine", "hicache-serve");
        s.put("page_size", pageSize);
        s.put("block_tokens", blockTokens);
        s.put("time_scale", o.timeScale);
        s.put("closed_loop", o.closedLoop);
        s.put("requests", ok.size());
        s.put("failed", all.size() - ok.size());
        s.put("input_tokens", input);
        s.put("blocks", blocks);
        s.put("block_hit_ratio", blocks == 0 ? 0.0 : hitBlocks / blocks);
        s.put("token_hit_ratio", input == 0 ? 0.0 : (double) hitPrompt / input);
        s.put("device_hit_tokens", device);
        s.put("host_hit_tokens", host);
        s.put("storage_hit_tokens", storage);
        s.put("ttft_ms", latency(ok.stream().mapToDouble(Outcome::ttftMs).toArray()));
        s.put("tpot_ms", latency(tpot.stream().mapToDouble(Double::doubleValue).toArray()));
        s.put("e2e_ms", latency(ok.stream().mapToDouble(Outcome::e2eMs).toArray()));
        s.put("queue_ms", latency(ok.stream().mapToDouble(Outcome::queueMs).toArray()));
        // beyond the simulator's fields: the engine's own clock, arrival to first token (the client's TTFT less
        // the HTTP round trip and the client's threads)
        s.put("engine_ttft_ms", latency(ok.stream().mapToDouble(Outcome::engineTtftMs).toArray()));
        s.put("throughput_input_tokens_per_s", spanS == 0 ? 0.0 : input / spanS);
        s.put("throughput_output_tokens_per_s", spanS == 0 ? 0.0 : output / spanS);
        s.put("throughput_requests_per_s", spanS == 0 ? 0.0 : ok.size() / spanS);
        s.put("follow_ups_waited", ok.stream().filter(Outcome::waited).count());
        s.put("span_s", spanS);
        s.put("engine_flags", o.engineFlags);
        return s;
    }

    /**
     * One object per request in trace order ({@code --requests-json}): its index and trace id, when it was sent (ms
     * after the replay began), its TTFT and end-to-end time on the client's clock, prompt and output tokens, the
     * cached tokens and the engine's {@code hicache_timing} (where its time to first token went).
     */
    static List<Map<String, Object>> perRequest(List<Outcome> out) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Outcome x : out) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("index", x.request.index());
            m.put("id", x.request.id());
            m.put("ok", x.ok);
            if (!x.ok) {
                m.put("error", x.error);
            } else {
                m.put("sent_ms", x.sentMs);
                m.put("ttft_ms", x.ttftMs);
                m.put("e2e_ms", x.e2eMs);
                m.put("prompt_tokens", x.prompt.length);
                m.put("output_tokens", x.generated.length);
                m.put("cached_tokens", x.cached);
                m.put("engine_timing", x.timing);
            }
            rows.add(m);
        }
        return rows;
    }

    /** p50, p90, p99 (nearest rank), max and mean, as the simulator's {@code Latency}. */
    static Map<String, Double> latency(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        Map<String, Double> p = new LinkedHashMap<>();
        p.put("p50", BenchServe.pct(s, 50));
        p.put("p90", BenchServe.pct(s, 90));
        p.put("p99", BenchServe.pct(s, 99));
        p.put("max", s.length == 0 ? 0.0 : s[s.length - 1]);
        p.put("mean", Arrays.stream(s).average().orElse(0));
        return p;
    }

    @SuppressWarnings("unchecked")
    private static void printSummary(Map<String, Object> s) {
        Map<String, Double> t = (Map<String, Double>) s.get("ttft_ms");
        Map<String, Double> p = (Map<String, Double>) s.get("tpot_ms");
        System.out.printf(Locale.ROOT, "requests %s (failed %s)  token_hit %.4f  block_hit %.4f  device/host/storage hit "
                + "tokens %s/%s/%s  ttft p50 %.1f p90 %.1f ms  tpot p50 %.1f ms  out %.1f tok/s%n", s.get("requests"),
            s.get("failed"), (Double) s.get("token_hit_ratio"), (Double) s.get("block_hit_ratio"),
            s.get("device_hit_tokens"), s.get("host_hit_tokens"), s.get("storage_hit_tokens"), t.get("p50"),
            t.get("p90"), p.get("p50"), (Double) s.get("throughput_output_tokens_per_s"));
    }

    /** Writes {@code value} as JSON to {@code file} through a temporary file in the same folder and a rename. */
    static void writeAtomically(Path file, Object value) {
        Path abs = file.toAbsolutePath();
        Path tmp = abs.resolveSibling("." + abs.getFileName() + ".tmp");
        try {
            JSON.copy().enable(SerializationFeature.INDENT_OUTPUT).writeValue(tmp.toFile(), value);
            Files.move(tmp, abs, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // nothing more to clean up
            }
            throw new Failed("cannot write " + file + ": " + e.getMessage());
        }
    }

    // ------------------------------------------------------------------ the command line

    static Options parse(String[] args) {
        String trace = null;
        double timeScale = 1;
        long limit = Long.MAX_VALUE;
        int blockTokens = 0;
        Path json = null;
        String url = null;
        boolean closedLoop = true;
        int warmup = -1;
        Path requestsJson = null;
        boolean gapProbes = false;
        boolean serviceProbe = false;
        List<String> engine = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help")) {
                throw new Usage("usage: scripts/bench-serve --trace [FORMAT:]FILE [--time-scale 1] [--limit N] "
                    + "[--block-tokens N] [--json FILE] [--requests-json FILE] [--url http://HOST:PORT (a running engine) | engine flags: "
                    + "--model, --device-tokens, --host-tokens, --chunk-tokens, --page-size, ...] [--no-closed-loop] [--warmup N (default 4 for an engine it starts, 0 with --url: a warm-up flushes the cache)] "
                    + "[--gap-probes (read the engine's speed probe in the replay's idle gaps, for validate-sim)] "
                    + "[--service-probe (time synthetic prefills before the replay, then flush, for validate-sim)]");
            }
            if (a.equals("--no-closed-loop")) {
                closedLoop = false;
                continue;
            }
            if (a.equals("--gap-probes")) {
                gapProbes = true;
                continue;
            }
            if (a.equals("--service-probe")) {
                serviceProbe = true;
                continue;
            }
            if (ServeConfig.SWITCHES.contains(a)) {
                engine.add(a);
                continue;
            }
            if (i + 1 >= args.length) {
                throw new Usage(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--trace" -> trace = v;
                case "--time-scale" -> {
                    timeScale = number(a, v);
                    if (!(timeScale > 0) || Double.isInfinite(timeScale)) {
                        throw new Usage("--time-scale must be a finite number > 0, got " + v);
                    }
                }
                case "--limit" -> limit = integer(a, v);
                case "--block-tokens" -> blockTokens = (int) integer(a, v);
                case "--json" -> json = Path.of(v);
                case "--requests-json" -> requestsJson = Path.of(v);
                case "--url" -> url = v;
                case "--warmup" -> {
                    warmup = v.equals("0") ? 0 : (int) integer(a, v);
                }
                default -> {
                    if (a.equals("--port") || a.equals("--host") || a.equals("--api-key")) {
                        throw new Usage(a + " is chosen by bench-serve for the engine it starts (--url for a running one)");
                    }
                    if (!ServeConfig.VALUE_FLAGS.contains(a)) {
                        throw new Usage("unknown argument " + a + " (--help lists the flags)");
                    }
                    engine.add(a);
                    engine.add(v);
                }
            }
        }
        if (trace == null) {
            throw new Usage("--trace FILE is required");
        }
        if (url != null && !engine.isEmpty()) {
            throw new Usage("engine flags (" + engine.get(0) + ") go to an engine bench-serve starts, not to --url");
        }
        if (json != null && json.toAbsolutePath().getParent() != null && !Files.isDirectory(json.toAbsolutePath().getParent())) {
            throw new Usage("--json: no such folder " + json.toAbsolutePath().getParent());
        }
        return new Options(trace, timeScale, limit, blockTokens, json, url, closedLoop,
            warmup >= 0 ? warmup : url == null ? 4 : 0, List.copyOf(engine), requestsJson, gapProbes,
            serviceProbe);
    }

    private static double number(String flag, String v) {
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new Usage(flag + " must be a number, got " + v);
        }
    }

    private static long integer(String flag, String v) {
        try {
            long x = Long.parseLong(v);
            if (x >= 1) {
                return x;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new Usage(flag + " must be a positive integer, got " + v);
    }

    private static void progress(String fmt, Object... args) {
        System.err.println("bench-serve: " + String.format(Locale.ROOT, fmt, args));
    }
}
