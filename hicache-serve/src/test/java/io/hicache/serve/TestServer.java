package io.hicache.serve;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.serve.engine.Inspection;
import io.hicache.serve.engine.ServeMetrics;
import io.hicache.serve.http.HttpServer;
import io.hicache.serve.model.ModelSpec;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/** An engine and its HTTP server in this JVM, on a small seeded model, for the tests. */
public final class TestServer implements AutoCloseable {
    /** 2 layers, hidden 64, the smallest byte vocabulary, a 512-token context: fast enough for unit tests. */
    public static final ModelSpec SMALL = new ModelSpec(null, 2, 64, 2, 1, 64, 320, 512, 5);

    public final Engine engine;
    public final ServeMetrics metrics;
    public final HttpServer http;
    public final int port;
    private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
        .connectTimeout(Duration.ofSeconds(5)).build();

    private TestServer(EngineConfig cfg, String apiKey, int maxBody) {
        metrics = new ServeMetrics();
        engine = new Engine(cfg, metrics);
        engine.start();
        http = new HttpServer(engine, "127.0.0.1", 0, apiKey, maxBody);
        port = http.start();
    }

    public static EngineConfig config(boolean radix, int deviceTokens, int hostTokens, int maxRunning, int maxQueued,
                                      String storage, LoadOverlap overlap, WritePolicy write) {
        return new EngineConfig(SMALL, radix, deviceTokens, radix ? hostTokens : 0, 16, 32, maxRunning, maxQueued, write,
            overlap, storage, StorageWritePolicy.WRITE_THROUGH, PrefetchPolicy.WAIT_COMPLETE, 0, null, 1);
    }

    public static EngineConfig config(int deviceTokens, int hostTokens) {
        return config(true, deviceTokens, hostTokens, 4, 8, null, LoadOverlap.SAME_FORWARD, WritePolicy.WRITE_THROUGH);
    }

    public static TestServer start(EngineConfig cfg) {
        return new TestServer(cfg, null, 1 << 20);
    }

    public static TestServer start(EngineConfig cfg, String apiKey, int maxBody) {
        return new TestServer(cfg, apiKey, maxBody);
    }

    public String url(String path) {
        return "http://127.0.0.1:" + port + path;
    }

    public HttpResponse<String> post(String path, String json, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path))).timeout(Duration.ofSeconds(120))
            .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(json));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    public HttpResponse<String> get(String path, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path))).timeout(Duration.ofSeconds(60)).GET();
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    public HttpClient client() {
        return client;
    }

    /**
     * Asks the engine what it holds until nothing is (its backups and loads drain on their own), for at most 30 s.
     * Each ask is a round trip through the engine thread's queue, not a sleep.
     */
    public Inspection awaitIdle() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Inspection i = engine.inspect().join();
        while (!i.idle() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            i = engine.inspect().join();
        }
        return i;
    }

    @Override
    public void close() {
        http.closeListener();
        engine.shutdown(TimeUnit.SECONDS.toNanos(5));
        http.stop();
    }
}
