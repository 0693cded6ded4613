package io.hicache.serve.bench;

import com.fasterxml.jackson.databind.JsonNode;
import io.hicache.serve.ServiceFactor;
import io.hicache.sim.model.EngineProfile;
import io.hicache.sim.trace.Request;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * {@code bench-serve --trace --service-probe}: the calibration's service-factor samples ({@link ServiceFactor}:
 * synthetic conversations of random ids, one request at a time, each after a short speed-probe reading and an idle
 * moment) taken on the replay's own engine right before its replay, then {@code /flush_cache}, so the replay starts on
 * an empty cache as without it. How much longer a served prefill takes than the bare forward the probe times moves
 * between JVMs and minutes on a shared VM by more than the speed probe tracks; {@code validate-sim} prices this
 * replay's prefills with the factor these samples give on the profile's grid ({@link #factor}). Never the trace's
 * requests. Runs on the replay's thread before the replay.
 */
final class ServiceProbe {
    private ServiceProbe() {
    }

    /** Takes the samples on the engine {@code client} talks to and flushes its cache; the JSON of the samples. */
    static Map<String, Object> run(TraceBench.Client client, int vocab, int context, int deviceTokens) {
        List<ServiceFactor.Sample> samples;
        try {
            samples = ServiceFactor.samples(vocab, context, deviceTokens, new ServiceFactor.Target() {
                @Override
                public double readingMs() throws IOException, InterruptedException {
                    return client.gapReading();
                }

                @Override
                public ServiceFactor.Served prefill(int[] prompt) throws IOException {
                    Request shape = new Request(0, -1, 0, prompt.length, 1, new int[] {0}, prompt.length);
                    TraceBench.Outcome x = client.generate(shape, prompt, System.nanoTime(), false);
                    if (!x.ok()) {
                        throw new IOException("a service-probe request failed: " + x.error());
                    }
                    JsonNode t = x.timing();
                    return new ServiceFactor.Served(t.path("prefill_ms").asDouble() - t.path("load_wait_ms").asDouble(),
                        x.cached());
                }
            }, new SplittableRandom(11), ServiceFactor.IDLE_MS);
        } catch (IOException e) {
            throw new TraceBench.Failed("the service probe failed: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TraceBench.Failed("interrupted");
        }
        client.flush();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (ServiceFactor.Sample s : samples) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("prompt_tokens", s.promptTokens());
            m.put("cached_tokens", s.cachedTokens());
            m.put("served_ms", s.servedMs());
            m.put("reading_ms", s.readingMs());
            rows.add(m);
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("idle_ms", ServiceFactor.IDLE_MS);
        out.put("samples", rows);
        return out;
    }

    /**
     * The service factor that {@code samples} (the measured JSON's {@code engine_service_probe.samples}) give on
     * {@code p}'s grid as the simulator reads it: the median of each prefill over the grid's reading of its chunks
     * (from its cached tokens; the logits on the last), over the grid scaled to the median reading (over the grid at
     * {@code probeTokens} new tokens and no context). NaN when fewer than three samples can be priced.
     */
    static double factor(EngineProfile p, JsonNode samples, int probeTokens) {
        List<ServiceFactor.Sample> read = new ArrayList<>();
        for (JsonNode s : samples) {
            read.add(new ServiceFactor.Sample(s.path("prompt_tokens").asInt(), s.path("cached_tokens").asInt(),
                s.path("served_ms").asDouble(), s.path("reading_ms").asDouble()));
        }
        return ServiceFactor.price(read, x -> ServiceFactor.gridMs(p::forwardMs, p.logitsMs(), p.chunkTokens(),
            x.promptTokens(), x.cachedTokens()), p.forwardMs(probeTokens, 0)).factor();
    }
}
