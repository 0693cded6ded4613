package io.hicache.serve.engine;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * The server's own meters, in a Prometheus registry, named after SGLang's ({@code sglang:*}) with the prefix
 * {@code hicache_serve_} (docs/SERVING.md has them side by side with SGLang's and vLLM's); the library's meters keep
 * their own names and are appended to the scrape ({@link Engine#scrape()}). Counters and timers are thread-safe;
 * the gauges read fields the engine thread publishes once per step ({@link #publish}).
 */
public final class ServeMetrics {
    /** TTFT and end-to-end buckets in seconds (vLLM's TTFT buckets, from 1 ms to 160 s). */
    private static final double[] LATENCY_BUCKETS_S = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
        1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0};
    /** Inter-token latency buckets in seconds (vLLM's). */
    private static final double[] ITL_BUCKETS_S = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15,
        0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5};

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    final Counter promptTokens;
    final Counter generationTokens;
    final Counter cachedDevice;
    final Counter cachedHost;
    final Counter cachedStorage;
    final Counter finished;
    final Counter abortedDisconnect;
    final Counter abortedShutdown;
    final Counter refusedQueueFull;
    final Counter failed;
    final Counter recomputed;
    final Timer ttft;
    final Timer itl;
    final Timer e2e;
    final Timer queue;
    private volatile double running;
    private volatile double queued;
    private volatile double deviceUsed;
    private volatile double deviceTotal;
    private volatile double hostUsed;
    private volatile double hostTotal;

    public ServeMetrics() {
        promptTokens = Counter.builder("hicache.serve.prompt.tokens").description("Prompt tokens requested (the hit "
            + "ratio's denominator)").baseUnit("tokens").register(registry);
        generationTokens = Counter.builder("hicache.serve.generation.tokens").description("Tokens generated")
            .baseUnit("tokens").register(registry);
        cachedDevice = cached("device");
        cachedHost = cached("host");
        cachedStorage = cached("storage");
        finished = requests("finished", "none");
        abortedDisconnect = requests("aborted", "client_disconnect");
        abortedShutdown = requests("aborted", "shutdown");
        refusedQueueFull = requests("refused", "queue_full");
        failed = requests("failed", "engine_error");
        recomputed = Counter.builder("hicache.serve.recomputed.requests").description("Requests served again without "
            + "their host hit because the load they depended on failed").register(registry);
        ttft = latency("hicache.serve.time.to.first.token", "Arrival to first token", LATENCY_BUCKETS_S);
        itl = latency("hicache.serve.inter.token.latency", "Time between two tokens of one request", ITL_BUCKETS_S);
        e2e = latency("hicache.serve.e2e.request.latency", "Arrival to last token", LATENCY_BUCKETS_S);
        queue = latency("hicache.serve.queue.time", "Arrival to admission (waiting for a running slot and device pages)",
            LATENCY_BUCKETS_S);
        Gauge.builder("hicache.serve.num.running.reqs", this, m -> m.running).description("Requests prefilling or "
            + "decoding").register(registry);
        Gauge.builder("hicache.serve.num.queue.reqs", this, m -> m.queued).description("Requests waiting for admission")
            .register(registry);
        Gauge.builder("hicache.serve.token.usage", this, m -> m.deviceTotal == 0 ? 0 : m.deviceUsed / m.deviceTotal)
            .description("Share of the device KV pool in use (running requests and cached prefixes)").register(registry);
        Gauge.builder("hicache.serve.device.used.tokens", this, m -> m.deviceUsed).baseUnit("tokens").register(registry);
        Gauge.builder("hicache.serve.device.total.tokens", this, m -> m.deviceTotal).baseUnit("tokens")
            .register(registry);
        Gauge.builder("hicache.serve.host.used.tokens", this, m -> m.hostUsed).baseUnit("tokens").register(registry);
        Gauge.builder("hicache.serve.host.total.tokens", this, m -> m.hostTotal).baseUnit("tokens").register(registry);
    }

    private Counter cached(String source) {
        return Counter.builder("hicache.serve.cached.tokens").description("Prompt tokens served from a cache tier, not "
            + "computed").baseUnit("tokens").tag("cache_source", source).register(registry);
    }

    private Counter requests(String outcome, String reason) {
        return Counter.builder("hicache.serve.requests").description("Requests by outcome").tag("outcome", outcome)
            .tag("reason", reason).register(registry);
    }

    private Timer latency(String name, String description, double[] bucketsS) {
        Duration[] slo = new Duration[bucketsS.length];
        for (int i = 0; i < bucketsS.length; i++) {
            slo[i] = Duration.ofNanos(Math.round(bucketsS[i] * 1e9));
        }
        return Timer.builder(name).description(description).serviceLevelObjectives(slo).register(registry);
    }

    /** The engine thread's view of the gauges, once per step. */
    void publish(int runningReqs, int queuedReqs, long deviceUsedTokens, long deviceTotalTokens, long hostUsedTokens,
                 long hostTotalTokens) {
        running = runningReqs;
        queued = queuedReqs;
        deviceUsed = deviceUsedTokens;
        deviceTotal = deviceTotalTokens;
        hostUsed = hostUsedTokens;
        hostTotal = hostTotalTokens;
    }

    static void record(Timer t, long ns) {
        t.record(Math.max(0, ns), TimeUnit.NANOSECONDS);
    }

    /** The server's meters in Prometheus text format. Any thread. */
    String scrape() {
        return registry.scrape();
    }

    /** Requests aborted because their client went away (for tests and logs). */
    public long disconnects() {
        return (long) abortedDisconnect.count();
    }
}
