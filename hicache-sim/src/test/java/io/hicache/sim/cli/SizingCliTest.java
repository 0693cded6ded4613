package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.DefaultEngineFactory;
import io.hicache.sim.EngineFactory;
import io.hicache.sim.HitStats;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimulationEngine;
import io.hicache.sim.report.SimResult;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Sizing the host tier from the command line: capacities in tokens or memory, the recommendation and its summary
 * file, the run header, overload warnings and the defaults that decide what a sweep runs.
 */
class SizingCliTest {

    @TempDir
    Path work;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(EngineFactory engines, String... args) {
        Main.Env env = new Main.Env(engines, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, MainTest.repoRoot(), false);
        return Main.run(env, args);
    }

    private int run(String... args) {
        return run(new DefaultEngineFactory(), args);
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    private JsonNode json(String file) throws IOException {
        return new ObjectMapper().readTree(work.resolve(file).toFile());
    }

    /** 24 chat clients x 4 turns of 512-token questions: about 70k tokens of conversations. */
    @BeforeEach
    void trace() {
        assertThat(run("gen-multiturn", "--out", "mt.jsonl", "--clients", "24", "--rounds", "4", "--request-tokens",
                "512", "--output-tokens", "64", "--rate", "4")).as(err()).isZero();
        out.reset();
    }

    @Test
    void aDeviceThatHoldsTheWorkingSetNeedsNoHostTier() throws IOException {
        int rc = run("sweep", "--trace", "mt.jsonl", "--instances", "1", "--model", "llama3-8b",
                "--host-capacity-tokens", "0,20k,50k,inf", "--json", "a.json", "--summary-json", "a.sum.json");
        assertThat(rc).as(err()).isZero();
        JsonNode s = json("a.sum.json");
        assertThat(s.get("recommendation").get("host_tokens").asLong()).isZero();
        assertThat(s.get("kv_bytes_per_token").asLong()).isEqualTo(131_072);
        assertThat(s.get("device_kv_tokens").asLong()).isGreaterThan(500_000);
        assertThat(s.get("overloaded").asBoolean()).isFalse();
        assertThat(out()).contains("Recommendation: no host tier needed: the device holds the working set (")
                .doesNotContain("Decision:");
        // the header: KV bytes per token and the device's KV room, in tokens and GB
        assertThat(out()).containsPattern("KV 131,072 B per token \\(32 layers x 4,096 B\\)")
                .containsPattern("device KV [0-9,]+ tokens = [0-9.]+ GB per instance: the GPUs' room");
        assertThat(json("a.json").isArray()).isTrue();
    }

    @Test
    void aSmallDeviceGetsTheSmallestSweptSizeWithinTheToleranceInTokensAndGb() throws IOException {
        int rc = run("sweep", "--trace", "mt.jsonl", "--instances", "1", "--model", "llama3-8b",
                "--device-capacity-tokens", "20k", "--host-capacity-tokens", "0,10k,30k,60k,100k,inf", "--json",
                "b.json", "--summary-json", "b.sum.json");
        assertThat(rc).as(err()).isZero();
        JsonNode runs = json("b.json");
        JsonNode rec = json("b.sum.json").get("recommendation");
        double best = 0;
        for (JsonNode r : runs) {
            best = Math.max(best, r.get("block_hit_ratio").asDouble());
        }
        long want = -1;
        for (JsonNode r : runs) {
            if (r.get("host_capacity_tokens").isNumber()
                    && r.get("block_hit_ratio").asDouble() >= best * (1 - rec.get("tolerance").asDouble())) {
                want = r.get("host_capacity_tokens").asLong();
                break; // ascending
            }
        }
        assertThat(want).as("the small device needs a host tier").isPositive();
        assertThat(rec.get("host_tokens").asLong()).isEqualTo(want);
        assertThat(rec.get("host_bytes").asLong()).isEqualTo(want * 131_072);
        assertThat(rec.get("tolerance").asDouble()).isEqualTo(0.01);
        assertThat(out()).containsPattern("Recommendation: a host tier of [0-9,]+ tokens = [0-9.]+ GB per instance")
                .contains("host_mem");
        // a tolerance of a half takes the first size with any help at all
        out.reset();
        assertThat(run("sweep", "--trace", "mt.jsonl", "--instances", "1", "--model", "llama3-8b",
                "--device-capacity-tokens", "20k", "--host-capacity-tokens", "0,10k,30k,60k,100k,inf", "--tolerance",
                "0.5", "--summary-json", "c.sum.json")).as(err()).isZero();
        assertThat(json("c.sum.json").get("recommendation").get("host_tokens").asLong()).isLessThanOrEqualTo(want);
        assertThat(json("c.sum.json").get("recommendation").get("tolerance").asDouble()).isEqualTo(0.5);
    }

    @Test
    void hostMemoryIsConvertedWithTheKvBytesPerTokenPerInstanceOrPerGpu() throws IOException {
        // 13.1072 GB / 131,072 B = 100,000 tokens of llama3-8b
        assertThat(run("replay", "--trace", "mt.jsonl", "--model", "llama3-8b", "--host-memory", "13.1072GB",
                "--json", "m.json", "--summary-json", "m.sum.json")).as(err()).isZero();
        assertThat(json("m.json").get("host_capacity_tokens").asLong()).isEqualTo(100_000);
        assertThat(json("m.sum.json").get("recommendation").isNull()).isTrue();
        assertThat(out()).contains("13.1 GB");
        // llama3-70b at TP 4: 327,680 B per token on the instance; 1 GiB per GPU x 4 GPUs
        assertThat(run("replay", "--trace", "mt.jsonl", "--limit", "20", "--host-memory", "1GiB/gpu", "--json",
                "g.json")).as(err()).isZero();
        assertThat(json("g.json").get("host_capacity_tokens").asLong()).isEqualTo(4L * (1L << 30) / 327_680);
        assertThat(run("replay", "--trace", "mt.jsonl", "--limit", "20", "--host-memory", "0", "--json",
                "z.json")).as(err()).isZero();
        assertThat(json("z.json").get("host_capacity_tokens").asLong()).isZero();
    }

    @Test
    void sweepRunsTheMainJobsFleetUnlessToldAndCompareRecommendsNoHostTierWhenItAddsNothing() throws IOException {
        List<ServingConfig> servings = new ArrayList<>();
        EngineFactory recording = new EngineFactory() {
            @Override
            public SimulationEngine create(io.hicache.sim.SimConfig config) {
                throw new AssertionError("timed runs only");
            }

            @Override
            public SimulationEngine create(io.hicache.sim.SimConfig config, ServingConfig serving) {
                servings.add(serving);
                return (c, trace, progress) -> SimResult.ofHits(c, trace.name(), new HitStats(c.blockTokens()), 0.01);
            }
        };
        assertThat(run(recording, "sweep", "--trace", "mt.jsonl", "--host-capacity-tokens", "0,1M")).as(err()).isZero();
        assertThat(servings).extracting(ServingConfig::instances).containsOnly(Main.DEFAULT_FLEET);
        // compare on a device that holds everything: the host tier buys nothing, and the decision says so
        out.reset();
        assertThat(run("compare", "--trace", "mt.jsonl", "--model", "llama3-8b", "--summary-json", "c.json"))
                .as(err()).isZero();
        assertThat(out()).contains("buys nothing here", "no host tier needed: the device holds the working set");
        assertThat(json("c.json").get("recommendation").get("host_tokens").asLong()).isZero();
    }

    /** Before: a log line written while the runs went on landed between the table's rows. */
    @Test
    void theTableIsPrintedInOnePieceAfterEveryRun() {
        ByteArrayOutputStream both = new ByteArrayOutputStream();
        PrintStream shared = new PrintStream(both, true, StandardCharsets.UTF_8);
        EngineFactory noisy = new EngineFactory() {
            @Override
            public SimulationEngine create(io.hicache.sim.SimConfig config) {
                return create(config, null);
            }

            @Override
            public SimulationEngine create(io.hicache.sim.SimConfig config, ServingConfig serving) {
                return (c, trace, progress) -> {
                    shared.println("[main] WARN io.hicache.core - said during a run");
                    return SimResult.ofHits(c, trace.name(), new HitStats(c.blockTokens()), 0.01);
                };
            }
        };
        Main.Env env = new Main.Env(noisy, shared, shared, work, MainTest.repoRoot(), false);
        assertThat(Main.run(env, "compare", "--trace", "mt.jsonl")).isZero();
        List<String> lines = both.toString(StandardCharsets.UTF_8).lines().toList();
        int header = lines.indexOf(lines.stream().filter(l -> l.startsWith("configuration")).findFirst().orElseThrow());
        assertThat(lines.subList(header + 1, header + 4)).allSatisfy(l -> assertThat(l).doesNotContain("WARN"));
        assertThat(lines.subList(0, header)).filteredOn(l -> l.contains("WARN")).hasSize(3);
    }

    @Test
    void anOverloadedRunSaysSoWithTheInstancesThatWouldKeepUp() throws IOException {
        int rc = run("replay", "--limit", "1500", "--json", "o.json", "--summary-json", "o.sum.json");
        assertThat(rc).as(err()).isZero();
        JsonNode o = json("o.json").get("overload");
        assertThat(o.get("overloaded").asBoolean()).isTrue();
        assertThat(o.get("instances_to_keep_up").asInt()).isGreaterThan(1);
        assertThat(o.get("queue_p50_last_fifth_ms").asDouble()).isGreaterThan(o.get("queue_p50_first_fifth_ms").asDouble());
        assertThat(json("o.sum.json").get("overloaded").asBoolean()).isTrue();
        assertThat(out()).contains("WARNING: overloaded (layered): the instance cannot keep up",
                "instances would keep up", "rerun with --instances " + o.get("instances_to_keep_up").asInt());
    }

    @Test
    void deprecatedGpuNamesStillRunWithAWarningAndResolveToWhatTheyMeant() throws IOException {
        int rc = run("replay", "--trace", "mt.jsonl", "--limit", "20", "--gpu", "h100-pcie5", "--json", "d.json");
        assertThat(rc).as(err()).isZero();
        assertThat(err()).contains("hicache-sim: warning: --gpu h100-pcie5 is deprecated: it is an H100 SXM on a "
                + "PCIe 5.0 host link, now named h100-sxm; the H100 PCIe card is h100-pcie");
        assertThat(json("d.json").get("gpu").asText()).isEqualTo("h100-sxm");
    }
}
