package io.hicache.bench.gpu;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The GPU check's Java steps on the simulated device, so their logic runs in every build: the layered
 * run commits, verifies every host byte and hides copy time that all-layers exposes; bandwidth figures
 * are fractions of the peak; the report folds step files into JSON and markdown.
 */
class GpuCheckSimulatedTest {

    @Test
    void layeredRunVerifiesBytesAndHidesCopiesThatAllLayersExposes() {
        try (SimulatedCudaRuntime sim = new SimulatedCudaRuntime()) {
            Map<String, Object> out = GpuLayeredRun.compare(sim, 8, 16, 4);
            assertThat(out.get("bytes_verified")).isEqualTo(true);
            @SuppressWarnings("unchecked") Map<String, Object> layered = (Map<String, Object>) out.get("layered");
            @SuppressWarnings("unchecked") Map<String, Object> all = (Map<String, Object>) out.get("all_layers");
            assertThat(((Number) layered.get("committed")).longValue()).isEqualTo(4);
            assertThat(((Number) all.get("committed")).longValue()).isEqualTo(4);
            assertThat(((Number) layered.get("commit_latency_p50_ms")).doubleValue())
                    .isLessThan(((Number) all.get("commit_latency_p50_ms")).doubleValue());
            assertThat(sim.leakReport().clean()).as("%s", sim.leakReport()).isTrue();
        }
    }

    @Test
    void bandwidthFiguresAreFractionsOfThePeak() {
        try (SimulatedCudaRuntime sim = new SimulatedCudaRuntime()) {
            Map<String, Object> out = new GpuBandwidth(sim, 16L << 20).run();
            for (String dir : new String[] {"d2h", "h2d"}) {
                @SuppressWarnings("unchecked") Map<String, Object> d = (Map<String, Object>) out.get(dir);
                assertThat(((Number) d.get("peak_gb_per_s")).doubleValue()).isPositive();
                for (String page : new String[] {"page_16", "page_64", "page_256"}) {
                    @SuppressWarnings("unchecked") Map<String, Object> p = (Map<String, Object>) d.get(page);
                    for (String k : new String[] {"per_page_of_peak", "coalesced_of_peak", "batched_of_peak"}) {
                        assertThat(((Number) p.get(k)).doubleValue()).as("%s %s %s", dir, page, k).isBetween(0.0, 1.05);
                    }
                }
            }
            assertThat(sim.leakReport().clean()).isTrue();
        }
    }

    @Test
    void reportFoldsStepsIntoJsonAndMarkdown(@TempDir Path dir) throws IOException {
        Path steps = Files.createDirectories(dir.resolve("steps"));
        Files.writeString(steps.resolve("1-probe.status"), "ok 0.4\n");
        Files.writeString(steps.resolve("1-probe.json"), "{\"device_count\": 1, \"gpu\": true}");
        Files.writeString(steps.resolve("2-tests.status"), "failed 12.5\n");
        Files.writeString(steps.resolve("3-layered.status"), "timeout 90\n");
        Files.writeString(steps.resolve("3-layered.json"), "not json");
        Files.writeString(steps.resolve("4-jmh.status"), "ok 70.1\n");
        Files.writeString(steps.resolve("4-jmh.json"), "[{\"benchmark\": \"io.hicache.bench.B.ffmEventQuery\","
                + " \"params\": {\"critical\": \"true\"}, \"primaryMetric\": {\"score\": 186.14, \"scoreError\": 5.2,"
                + " \"scoreUnit\": \"ns/op\"}}]");
        String md = GpuCheck.report(dir);
        assertThat(md).contains("| probe | ok | 0.4 |", "| tests | failed | 12.5 |", "| layered | timeout | 90 |",
                "`device_count`: 1", "| ffmEventQuery | critical=true | 186.1 | 5.2 | ns/op |");
        assertThat(md).doesNotContain("- ``:");
        JsonNode json = GpuCheck.JSON.readTree(dir.resolve("gpu-check.json").toFile());
        assertThat(json.get("gpu").asBoolean()).isTrue();
        assertThat(json.at("/steps/probe/result/device_count").asInt()).isEqualTo(1);
        assertThat(json.at("/steps/tests/status").asText()).isEqualTo("failed");
        assertThat(json.at("/steps/layered/result_error").asText()).startsWith("not JSON");
        assertThat(Files.readString(dir.resolve("gpu-check.md"))).isEqualTo(md);
    }
}
