package io.hicache.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The client side of the engine's speed probe ({@code POST /hicache/speed_probe}, answered by
 * {@link io.hicache.serve.engine.ForwardProbe}): how long one forward of a fixed synthetic shape takes in the engine's
 * JVM right now. The calibration records the same reading in the profile ({@code speed_probe}); {@code bench-serve
 * --trace} reads the engine's right before and after a replay, so that {@code validate-sim} can tell how fast the
 * machine ran the replay against how fast it ran the calibration. Runs on the calling thread.
 */
public final class SpeedProbe {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A reading: the median of {@code runs} forwards of {@code tokens} new tokens over an empty KV, in ms. */
    public record Reading(int tokens, int runs, double forwardMs) {
    }

    private SpeedProbe() {
    }

    /**
     * Reads the engine at {@code baseUrl} ({@code http://host:port}).
     *
     * @throws IOException the engine is unreachable or answers anything but 200 with a reading
     */
    public static Reading measure(HttpClient client, String baseUrl, int runs) throws IOException, InterruptedException {
        return measure(client, baseUrl, runs, -1);
    }

    /**
     * Reads the engine at {@code baseUrl} with {@code warm} untimed forwards first (the engine's default when
     * negative).
     *
     * @throws IOException the engine is unreachable or answers anything but 200 with a reading
     */
    public static Reading measure(HttpClient client, String baseUrl, int runs, int warm)
        throws IOException, InterruptedException {
        URI uri = URI.create(baseUrl + "/hicache/speed_probe?runs=" + runs + (warm >= 0 ? "&warm=" + warm : ""));
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofMinutes(5))
            .POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("the engine answered /hicache/speed_probe with HTTP " + r.statusCode() + ": "
                + r.body().strip());
        }
        JsonNode d = JSON.readTree(r.body());
        if (!d.path("forward_ms").isNumber() || !d.path("tokens").isInt()) {
            throw new IOException("the engine's /hicache/speed_probe answer has no forward_ms and tokens: " + r.body());
        }
        return new Reading(d.path("tokens").asInt(), d.path("runs").asInt(runs), d.path("forward_ms").asDouble());
    }
}
