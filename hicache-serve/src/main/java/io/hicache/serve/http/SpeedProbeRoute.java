package io.hicache.serve.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.serve.engine.EngineConfig;
import io.hicache.serve.engine.ForwardProbe;
import io.netty.channel.Channel;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.QueryStringDecoder;

import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * {@code POST /hicache/speed_probe[?runs=N][&warm=W]}: times {@code N} (default {@link ForwardProbe#RUNS}, 1 to
 * 101) forwards of the {@link ForwardProbe}'s fixed shape in this JVM after {@code W} untimed ones (default
 * {@link ForwardProbe#WARM}, 0 to 10) and answers {@code {"tokens", "runs", "warm", "forward_ms"}} (the median). A
 * benchmarking aid: {@code bench-serve --trace} reads it around a replay (and with {@code --gap-probes} in its idle
 * gaps) so that {@code validate-sim} can scale the engine profile to the machine's speed at the time. The probe has
 * its own model and pool and runs on a thread of its own, one probe at a time, beside whatever the engine serves
 * (read it on an idle engine). Bad {@code runs} or {@code warm}: 400; a probe that fails: 500. Event loops call
 * {@link #handle}; {@link #close} ends the thread.
 */
final class SpeedProbeRoute implements AutoCloseable {
    private final EngineConfig config;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(
        Thread.ofPlatform().daemon().name("hicache-speed-probe").factory());
    private ForwardProbe probe; // the probe thread's

    SpeedProbeRoute(EngineConfig config) {
        this.config = config;
    }

    void handle(Channel ch, FullHttpRequest req, boolean keepAlive, HttpMethod m) {
        if (!m.equals(HttpMethod.POST)) {
            throw new ApiException(405, "invalid_request_error", null, "use POST here, not " + m);
        }
        java.util.Map<String, List<String>> q = new QueryStringDecoder(req.uri()).parameters();
        int n = parameter(q, "runs", ForwardProbe.RUNS, 1, 101);
        int warm = parameter(q, "warm", ForwardProbe.WARM, 0, 10);
        try {
            thread.execute(() -> {
                String body;
                HttpResponseStatus status;
                try {
                    if (probe == null) {
                        probe = ForwardProbe.open(config);
                    }
                    double ms = probe.medianMs(n, warm);
                    ObjectNode o = Json.object();
                    o.put("tokens", probe.tokens());
                    o.put("runs", n);
                    o.put("warm", warm);
                    o.put("forward_ms", ms);
                    body = Json.write(o);
                    status = HttpResponseStatus.OK;
                } catch (RuntimeException e) {
                    body = Json.error(500, "server_error", null, "the speed probe failed: " + e);
                    status = HttpResponseStatus.INTERNAL_SERVER_ERROR;
                }
                String b = body;
                HttpResponseStatus s = status;
                ch.eventLoop().execute(() -> ApiHandler.send(ch, s, "application/json", b, keepAlive, null));
            });
        } catch (RejectedExecutionException e) {
            throw new ApiException(503, "server_shutting_down", null, "the server is shutting down");
        }
    }

    private static int parameter(java.util.Map<String, List<String>> q, String name, int absent, int min, int max) {
        List<String> v = q.get(name);
        if (v == null || v.isEmpty()) {
            return absent;
        }
        int n;
        try {
            n = Integer.parseInt(v.get(0));
        } catch (NumberFormatException e) {
            n = min - 1;
        }
        if (n < min || n > max) {
            throw new ApiException(400, "invalid_request_error", name, name + " must be " + min + " to " + max
                + ", got " + v.get(0));
        }
        return n;
    }

    /** Ends the probe thread after the probe it runs, and frees the probe. Any thread. */
    @Override
    public void close() {
        try {
            thread.execute(() -> {
                if (probe != null) {
                    probe.close();
                    probe = null;
                }
            });
        } catch (RejectedExecutionException e) {
            return;
        }
        thread.shutdown();
        try {
            thread.awaitTermination(1, TimeUnit.MINUTES);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
