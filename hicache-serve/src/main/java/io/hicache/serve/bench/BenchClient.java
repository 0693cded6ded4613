package io.hicache.serve.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Drives a {@link Workload} against one engine over HTTP the way {@code bench_multiturn.py} does: a session's next
 * turn becomes ready when its answer arrived; ready turns are sent at Poisson times (rate {@code λ}, a seeded stream)
 * in arrival order, at most {@code maxParallel} in flight; every request is SGLang's streaming {@code /generate}
 * ({@code temperature 0}, {@code ignore_eos}), read line by line: TTFT is the first {@code data:} line with text, the
 * end-to-end time is the {@code [DONE]} line, and the usage comes from the last {@code meta_info}. One instance per run.
 */
public final class BenchClient {
    /** One request's result. */
    public record Result(int session, int turn, boolean ok, String error, double ttftMs, double e2eMs, String text,
                         int promptTokens, int completionTokens, int cachedTokens, JsonNode timing) {
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
        .version(HttpClient.Version.HTTP_1_1).build();
    private final String baseUrl;
    private final double rate;
    private final int maxParallel;
    private final long seed;

    public BenchClient(String baseUrl, double rate, int maxParallel, long seed) {
        this.baseUrl = baseUrl;
        this.rate = rate;
        this.maxParallel = maxParallel;
        this.seed = seed;
    }

    /** Runs the workload to the end; {@code progress} sees every result as it lands. */
    public List<Result> run(Workload w, Consumer<Result> progress) throws InterruptedException {
        int total = 0;
        for (int s = 0; s < w.sessions(); s++) {
            total += w.turns(s);
        }
        List<List<String>> answers = new ArrayList<>();
        ArrayDeque<int[]> ready = new ArrayDeque<>();
        for (int s = 0; s < w.sessions(); s++) {
            answers.add(Collections.synchronizedList(new ArrayList<>()));
            ready.add(new int[] {s, 0});
        }
        ConcurrentLinkedQueue<int[]> becameReady = new ConcurrentLinkedQueue<>();
        List<Result> results = Collections.synchronizedList(new ArrayList<>());
        Semaphore slots = new Semaphore(maxParallel);
        AtomicInteger done = new AtomicInteger();
        SplittableRandom arrivals = new SplittableRandom(seed);
        Object signal = new Object();
        int sent = 0;
        while (done.get() < total) {
            int[] next;
            while ((next = becameReady.poll()) != null) {
                ready.add(next);
            }
            if (sent < total && !ready.isEmpty() && slots.tryAcquire()) {
                int[] turn = ready.poll();
                sent++;
                Workload.Request req = w.request(turn[0], turn[1], answers.get(turn[0]));
                Thread.ofVirtual().start(() -> {
                    Result r;
                    try {
                        r = send(turn[0], turn[1], req);
                    } finally {
                        slots.release();
                    }
                    results.add(r);
                    answers.get(turn[0]).add(r.ok() ? r.text() : "");
                    if (turn[1] + 1 < w.turns(turn[0])) {
                        becameReady.add(new int[] {turn[0], turn[1] + 1});
                    }
                    done.incrementAndGet();
                    progress.accept(r);
                    synchronized (signal) {
                        signal.notifyAll();
                    }
                });
                if (rate > 0) {
                    double waitS = -Math.log(1 - arrivals.nextDouble()) / rate;
                    Thread.sleep((long) (waitS * 1000), (int) ((waitS * 1e9) % 1_000_000));
                }
                continue;
            }
            synchronized (signal) {
                signal.wait(20);
            }
        }
        return results;
    }

    private Result send(int s, int t, Workload.Request req) {
        ObjectNode body = JSON.createObjectNode();
        if (req.text() != null) {
            body.put("text", req.text());
        } else {
            ArrayNode ids = body.putArray("input_ids");
            for (int id : req.inputIds()) {
                ids.add(id);
            }
        }
        ObjectNode sp = body.putObject("sampling_params");
        sp.put("temperature", 0.0);
        sp.put("max_new_tokens", req.maxNewTokens());
        sp.put("ignore_eos", true);
        body.put("stream", true);
        long t0 = System.nanoTime();
        try {
            HttpRequest hr = HttpRequest.newBuilder(URI.create(baseUrl + "/generate")).timeout(Duration.ofMinutes(30))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body)))
                .build();
            HttpResponse<Stream<String>> resp = http.send(hr, HttpResponse.BodyHandlers.ofLines());
            if (resp.statusCode() != 200) {
                String err = String.join(" ", resp.body().toList());
                return new Result(s, t, false, "HTTP " + resp.statusCode() + ": " + err, 0, 0, "", 0, 0, 0, null);
            }
            double ttft = 0;
            JsonNode last = null;
            double e2e = 0;
            try (Stream<String> lines = resp.body()) {
                for (String line : (Iterable<String>) lines::iterator) {
                    line = line.strip();
                    if (!line.startsWith("data:")) {
                        continue;
                    }
                    String v = line.substring(5).strip();
                    if (v.equals("[DONE]")) {
                        e2e = (System.nanoTime() - t0) / 1e6;
                        break;
                    }
                    JsonNode d = JSON.readTree(v);
                    if (d.has("error")) {
                        return new Result(s, t, false, d.get("error").path("message").asText(), 0, 0, "", 0, 0, 0, null);
                    }
                    if (ttft == 0 && !d.path("text").asText().isEmpty()) {
                        ttft = (System.nanoTime() - t0) / 1e6;
                    }
                    last = d;
                }
            }
            if (last == null || e2e == 0) {
                return new Result(s, t, false, "the stream ended without [DONE]", 0, 0, "", 0, 0, 0, null);
            }
            JsonNode m = last.path("meta_info");
            return new Result(s, t, true, null, ttft, e2e, last.path("text").asText(), m.path("prompt_tokens").asInt(),
                m.path("completion_tokens").asInt(), m.path("cached_tokens").asInt(), m.path("hicache_timing"));
        } catch (java.io.IOException e) {
            return new Result(s, t, false, e.toString(), 0, 0, "", 0, 0, 0, null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(s, t, false, "interrupted", 0, 0, "", 0, 0, 0, null);
        }
    }

}
