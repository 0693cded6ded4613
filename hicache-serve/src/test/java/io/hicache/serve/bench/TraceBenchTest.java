package io.hicache.serve.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.serve.Calibrate;
import io.hicache.serve.TestServer;
import io.hicache.sim.trace.MultiTurnGenerator;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TraceFormat;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

class TraceBenchTest {

    @Test
    void aReplayHitsTheAnswerItsParentGotAsTheSimulatorsKeysDo(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("mt.jsonl");
        new MultiTurnGenerator(2, 2, 60, 12, 50, 0, 3).write(trace);
        Path json = dir.resolve("out.json");
        try (TestServer s = TestServer.start(TestServer.config(1024, 0))) {
            int code = TraceBench.run(new String[] {"--trace", trace.toString(), "--url", s.url(""), "--json",
                json.toString(), "--requests-json", dir.resolve("requests.json").toString()});
            assertThat(code).isZero();
        }
        JsonNode rows = new ObjectMapper().readTree(dir.resolve("requests.json").toFile());
        assertThat(rows.size()).isEqualTo(4);
        for (int i = 0; i < rows.size(); i++) {
            JsonNode row = rows.get(i);
            assertThat(row.path("index").asInt()).isEqualTo(i); // trace order
            assertThat(row.path("ok").asBoolean()).isTrue();
            assertThat(row.path("ttft_ms").asDouble()).isPositive().isLessThanOrEqualTo(row.path("e2e_ms").asDouble());
            assertThat(row.path("engine_timing").path("prefill_ms").asDouble()).isPositive();
        }
        // a follow-up finds its parent's prompt and the whole pages of the answer whose KV was computed (all but
        // the last token's), which is only possible when it resends the answer the engine gave
        Map<Long, Request> byId = new HashMap<>();
        long input = 0;
        long hit = 0;
        try (TraceReader r = new TraceSource(TraceFormat.MOONCAKE, trace, "mt", Long.MAX_VALUE).open()) {
            Request q;
            while ((q = r.next()) != null) {
                input += q.inputLength();
                Request p = byId.get(q.parentId());
                if (p != null) {
                    hit += (p.inputLength() + p.outputLength() - 1) / 16 * 16L;
                }
                byId.put(q.id(), q);
            }
        }
        JsonNode m = new ObjectMapper().readTree(json.toFile());
        assertThat(m.path("requests").asInt()).isEqualTo(4);
        assertThat(m.path("failed").asInt()).isZero();
        assertThat(m.path("input_tokens").asLong()).isEqualTo(input);
        assertThat(m.path("device_hit_tokens").asLong()).isEqualTo(hit);
        assertThat(m.path("token_hit_ratio").asDouble()).isEqualTo((double) hit / input);
        for (String f : List.of("ttft_ms", "tpot_ms", "e2e_ms", "queue_ms")) {
            assertThat(m.path(f).path("p50").asDouble()).as(f).isLessThanOrEqualTo(m.path(f).path("p90").asDouble());
        }
        assertThat(m.path("ttft_ms").path("p50").asDouble()).isPositive()
            .isLessThan(m.path("e2e_ms").path("max").asDouble());
        assertThat(m.path("throughput_output_tokens_per_s").asDouble()).isPositive();
        JsonNode probe = m.path("engine_speed_probe"); // read before and after the replay, on the engine's own pool
        assertThat(probe.path("before_ms").asDouble()).isPositive();
        assertThat(probe.path("after_ms").asDouble()).isPositive();
    }

    @Test
    void gapProbesReadTheEnginesSpeedInTheReplaysIdleGaps(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("gap.jsonl"); // two requests three seconds apart: a gap between them
        Files.writeString(trace, "{\"timestamp\": 0, \"input_length\": 32, \"output_length\": 2, \"hash_ids\": [1]}\n"
            + "{\"timestamp\": 3000, \"input_length\": 32, \"output_length\": 2, \"hash_ids\": [2]}\n");
        Path json = dir.resolve("out.json");
        try (TestServer s = TestServer.start(TestServer.config(1024, 0))) {
            assertThat(TraceBench.run(new String[] {"--trace", trace.toString(), "--url", s.url(""), "--json",
                json.toString(), "--gap-probes", "--service-probe"})).isZero();
            // the service probe's conversations were flushed before the replay: only the trace's two prompts
            // (34 tokens each, two whole pages) stay cached
            assertThat(s.engine.inspect().join().devicePagesCached()).isLessThanOrEqualTo(4);
        }
        JsonNode measuredJson = new ObjectMapper().readTree(json.toFile());
        JsonNode samples = measuredJson.path("engine_service_probe").path("samples");
        assertThat(samples.size()).isGreaterThanOrEqualTo(3);
        int fresh = 0;
        for (JsonNode x : samples) {
            assertThat(x.path("served_ms").asDouble()).isPositive();
            assertThat(x.path("reading_ms").asDouble()).isPositive();
            assertThat(x.path("cached_tokens").asInt()).isLessThan(x.path("prompt_tokens").asInt());
            fresh += x.path("cached_tokens").asInt() == 0 ? 1 : 0;
        }
        assertThat(fresh).isLessThan(samples.size()); // follow-up turns found their conversation's prefix
        JsonNode gaps = measuredJson.path("engine_speed_probe").path("gaps");
        assertThat(gaps.path("runs").asInt()).isEqualTo(GapProbes.RUNS);
        assertThat(gaps.path("warm").asInt()).isEqualTo(GapProbes.WARM);
        assertThat(gaps.path("forward_ms").size()).isPositive().isEqualTo(gaps.path("at_ms").size());
        for (JsonNode at : gaps.path("at_ms")) {
            assertThat(at.asDouble()).isBetween(0.0, 3000.0); // in the gap, before the second request was due
        }
        for (JsonNode ms : gaps.path("forward_ms")) {
            assertThat(ms.asDouble()).isPositive();
        }
    }

    @Test
    void validateSimScalesTheProfileByTheSpeedProbeAroundTheReplay(@TempDir Path dir) throws Exception {
        ObjectMapper json = new ObjectMapper();
        var cfg = io.hicache.serve.ServeConfig.parse(new String[] {"--model", "small"}, Map.of()).engine();
        var grid = new io.hicache.serve.engine.Calibration.Grid(new int[] {1, 16}, new int[] {0, 64},
            new double[][] {{1, 2}, {10, 20}});
        var copy = new io.hicache.serve.engine.Calibration.Copy(1e9, 0.5);
        Path profile = dir.resolve("p.json");
        Calibrate.write(profile, Calibrate.profile(cfg, new io.hicache.serve.engine.Calibration.Result(grid, grid, 0.1,
            copy, copy, 1024, 1), new Calibrate.Overheads(0.2, 4, 1, 1), new io.hicache.serve.SpeedProbe.Reading(16, 7, 10),
            1));
        Path measured = dir.resolve("m.json");
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 16, \"runs\": 7, \"before_ms\": 11, "
            + "\"after_ms\": 13}}");
        Map<String, Object> speed = ValidateSim.speedScale(profile, measured);
        assertThat((Double) speed.get("grid_ms")).isEqualTo(10.0); // the grid at the probe's shape (16 tokens, no context)
        assertThat((Double) speed.get("factor")).isEqualTo(1.2);
        assertThat((Double) speed.get("calibration_probe_ms")).isEqualTo(10.0);
        JsonNode scaled = ValidateSim.scaled(profile, 1.2, speed);
        assertThat(scaled.path("forward_ms").path("ms").get(1).get(1).asDouble()).isEqualTo(24.0);
        assertThat(scaled.path("logits_ms").asDouble()).isCloseTo(0.12, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(scaled.path("request_overhead_ms").asDouble()).isEqualTo(4.8);
        assertThat(scaled.path("load").path("bytes_per_s").asLong()).isEqualTo(1_000_000_000L); // copies stay
        Path out = dir.resolve("scaled.json");
        TraceBench.writeAtomically(out, scaled);
        io.hicache.sim.model.EngineProfile read = io.hicache.sim.model.EngineProfile.read(out);
        assertThat(read.forwardMs(16, 64)).isEqualTo(24.0); // the simulator reads the scaled grid
        // the grid is read as the simulator reads it, also between its points
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 8, \"before_ms\": 11, \"after_ms\": 11}}");
        assertThat((Double) ValidateSim.speedScale(profile, measured).get("grid_ms")).isEqualTo(1 + 9 * 7 / 15.0);
        // readings in the replay's gaps set the scale where there are enough of them (their median)
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 16, \"before_ms\": 11, \"after_ms\": 13, "
            + "\"gaps\": {\"forward_ms\": [12, 30, 14, 16, 12]}}}");
        speed = ValidateSim.speedScale(profile, measured);
        assertThat((Double) speed.get("factor")).isEqualTo(1.4);
        assertThat(speed.get("gap_readings")).isEqualTo(5);
        assertThat(speed.get("from")).isEqualTo("the replay's gaps");
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 16, \"before_ms\": 11, \"after_ms\": 13, "
            + "\"gaps\": {\"forward_ms\": [30, 30, 30, 30]}}}");
        assertThat((Double) ValidateSim.speedScale(profile, measured).get("factor")).isEqualTo(1.2); // too few
        // the replay engine's own service samples set the replay's service factor: prefills of 16 fresh tokens
        // (the grid reads 10 + 0.1 ms of logits) served at 2, 3 and 4 times that, after readings whose median is
        // twice the grid at the probe's shape: 3 / 2
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 16, \"before_ms\": 11, \"after_ms\": 13}, "
            + "\"engine_service_probe\": {\"samples\": ["
            + "{\"prompt_tokens\": 16, \"cached_tokens\": 0, \"served_ms\": 20.2, \"reading_ms\": 20},"
            + "{\"prompt_tokens\": 16, \"cached_tokens\": 0, \"served_ms\": 30.3, \"reading_ms\": 20},"
            + "{\"prompt_tokens\": 16, \"cached_tokens\": 0, \"served_ms\": 40.4, \"reading_ms\": 40}]}}");
        speed = ValidateSim.speedScale(profile, measured);
        assertThat((Double) speed.get("service_factor")).isCloseTo(1.5, org.assertj.core.data.Offset.offset(1e-9));
        assertThat(ValidateSim.scaled(profile, 1.2, speed).path("prefill_service_factor").asDouble())
            .isCloseTo(1.5, org.assertj.core.data.Offset.offset(1e-9));
        // fewer than three samples price nothing: the calibration's factor stays
        Files.writeString(measured, "{\"engine_speed_probe\": {\"tokens\": 16, \"before_ms\": 11, \"after_ms\": 13}, "
            + "\"engine_service_probe\": {\"samples\": ["
            + "{\"prompt_tokens\": 16, \"cached_tokens\": 0, \"served_ms\": 20.2, \"reading_ms\": 20}]}}");
        speed = ValidateSim.speedScale(profile, measured);
        assertThat(speed).doesNotContainKey("service_factor");
        assertThat(ValidateSim.scaled(profile, 1.2, speed).path("prefill_service_factor").asDouble()).isEqualTo(1.0);
        // a replay without a probe leaves the profile as calibrated
        Files.writeString(measured, "{}");
        assertThat(ValidateSim.speedScale(profile, measured)).isNull();
        assertThat(json.readTree(profile.toFile()).path("speed_probe").path("forward_ms").asDouble()).isEqualTo(10.0);
    }

    @Test
    void aRequestBeyondTheEnginesContextIsBadInput(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("long.jsonl");
        Files.writeString(trace, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n");
        try (TestServer s = TestServer.start(TestServer.config(1024, 0))) {
            assertThatThrownBy(() -> TraceBench.run(new String[] {"--trace", trace.toString(), "--url", s.url("")}))
                .isInstanceOf(TraceBench.Usage.class).hasMessageContaining("context of 512");
        }
    }

    @Test
    void anUnreachableEngineFailsTheRunAndWritesNothing(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("t.jsonl");
        new MultiTurnGenerator(1, 1, 16, 2, 1, 0, 1).write(trace);
        Path json = dir.resolve("out.json");
        assertThatThrownBy(() -> TraceBench.run(new String[] {"--trace", trace.toString(), "--url",
            "http://127.0.0.1:1", "--json", json.toString()}))
            .isInstanceOf(TraceBench.Failed.class).hasMessageContaining("not reachable");
        assertThat(json).doesNotExist();
    }

    @Test
    void badCommandLinesAreOneLineEach(@TempDir Path dir) {
        String t = dir.resolve("none.jsonl").toString();
        assertThatThrownBy(() -> TraceBench.parse(new String[] {"--time-scale", "1"})).hasMessageContaining("--trace");
        assertThatThrownBy(() -> TraceBench.parse(new String[] {"--trace", t, "--time-scale", "0"}))
            .hasMessageContaining("--time-scale");
        assertThatThrownBy(() -> TraceBench.parse(new String[] {"--trace", t, "--bogus", "1"}))
            .hasMessageContaining("--bogus");
        assertThatThrownBy(() -> TraceBench.parse(new String[] {"--trace", t, "--url", "http://x", "--model", "tiny"}))
            .hasMessageContaining("--url");
        assertThatThrownBy(() -> TraceBench.run(new String[] {"--trace", t, "--url", "http://127.0.0.1:1"}))
            .isInstanceOf(TraceBench.Usage.class).hasMessageContaining("no such file");
        assertThatThrownBy(() -> ValidateSim.parse(new String[] {"--configs", "device"})).hasMessageContaining("--trace");
        assertThatThrownBy(() -> ValidateSim.parse(new String[] {"--trace", t})).hasMessageContaining("no such file");
    }

    @Test
    void validateSimRefusesConfigurationsAndProfilesThatAreNotTheEngines(@TempDir Path dir) throws Exception {
        Path trace = dir.resolve("t.jsonl");
        new MultiTurnGenerator(1, 1, 16, 2, 1, 0, 1).write(trace);
        String t = trace.toString();
        assertThatThrownBy(() -> ValidateSim.parse(new String[] {"--trace", t, "--configs", "device,gpu"}))
            .hasMessageContaining("gpu");
        assertThatThrownBy(() -> ValidateSim.parse(new String[] {"--trace", t, "--storage", "file:/x"}))
            .hasMessageContaining("--storage");
        ValidateSim.checkTrace(ValidateSim.parse(new String[] {"--trace", t}), dir);
        Path tooLong = dir.resolve("long.jsonl");
        Files.writeString(tooLong, "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 4, \"hash_ids\": [1, 2]}\n");
        assertThatThrownBy(() -> ValidateSim.checkTrace(ValidateSim.parse(new String[] {"--trace", tooLong.toString(),
            "--context-tokens", "512"}), dir)).isInstanceOf(TraceBench.Usage.class).hasMessageContaining("context of 512");
        Path profile = dir.resolve("p.json");
        var cfg = io.hicache.serve.ServeConfig.parse(new String[] {"--model", "small"}, Map.of()).engine();
        var grid = new io.hicache.serve.engine.Calibration.Grid(new int[] {1}, new int[] {0}, new double[][] {{1}});
        var copy = new io.hicache.serve.engine.Calibration.Copy(1e9, 0);
        Calibrate.write(profile, Calibrate.profile(cfg, new io.hicache.serve.engine.Calibration.Result(grid, grid, 0.1, copy,
            copy, 1024, 1), new Calibrate.Overheads(0, 0, 1.05, 1.125), null, 1));
        ValidateSim.checkProfile(profile, List.of("--model", "small"));
        assertThat(ValidateSim.factors(profile)).containsEntry("prefill_service_factor", 1.125)
            .containsEntry("prefill_busy_factor", 1.05); // kept per configuration, as the simulator reads them
        assertThatThrownBy(() -> ValidateSim.checkProfile(profile, List.of("--model", "tiny")))
            .isInstanceOf(TraceBench.Usage.class).hasMessageContaining("was measured on");
        assertThatThrownBy(() -> ValidateSim.checkProfile(profile, List.of("--model", "small", "--page-size", "32")))
            .isInstanceOf(TraceBench.Usage.class).hasMessageContaining("page");
        assertThat(ValidateSim.simFlags("device", List.of("--device-tokens", "1024", "--host-tokens", "0",
            "--load-overlap", "previous_batch"), dir)).containsExactly("--device-capacity-tokens", "1024",
            "--host-capacity-tokens", "0", "--page-size", "16", "--load-overlap", "previous-batch");
    }
}
