package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.DefaultEngineFactory;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code replay --engine-profile}: the replay JSON's fields, the Assumptions line, and one-line usage errors. */
class ProfileCliTest {
    static final String PROFILE = """
            {"format": "hicache-engine-profile", "version": 1, "engine": "hicache-serve",
             "model": {"id": "tiny", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 512,
                       "vocab": 1000, "context_tokens": 2048},
             "page_size": 16, "kv_bytes_per_token": 4096,
             "scheduler": {"chunk_tokens": 256, "max_running": 4},
             "forward_ms": {"tokens": [1, 256], "context": [0, 2048], "ms": [[2, 4], [20, 40]]},
             "logits_ms": 0.3, "step_overhead_ms": 0.05, "request_overhead_ms": 1,
             "load": {"bytes_per_s": 1e9, "fixed_ms": 0.1}, "backup": {"bytes_per_s": 1e9, "fixed_ms": 0.1}}
            """;

    @TempDir
    Path work;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void files() throws IOException {
        Files.writeString(work.resolve("p.json"), PROFILE);
        Files.writeString(work.resolve("t.jsonl"), """
                {"chat_id": 0, "parent_chat_id": -1, "timestamp": 0, "input_length": 300, "output_length": 16, "hash_ids": [0], "covers_answer": true}
                {"chat_id": 1, "parent_chat_id": -1, "timestamp": 5, "input_length": 300, "output_length": 16, "hash_ids": [1], "covers_answer": true}
                {"chat_id": 2, "parent_chat_id": 0, "timestamp": 900, "input_length": 700, "output_length": 16, "hash_ids": [0, 2], "covers_answer": true}
                """);
        Files.writeString(work.resolve("long.jsonl"), """
                {"timestamp": 0, "input_length": 2040, "output_length": 16, "hash_ids": [0, 1, 2, 3]}
                """);
    }

    private int run(String... args) {
        Main.Env env = new Main.Env(new DefaultEngineFactory(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, work, false);
        return Main.run(env, args);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void replayWritesTheReplayJsonFieldsAndTheAssumptionsLine() throws IOException {
        int rc = run("replay", "--engine-profile", "p.json", "--trace", "t.jsonl", "--device-capacity-tokens", "4096",
                "--host-capacity-tokens", "16384", "--max-running", "2", "--json", "r.json", "--html", "r.html");
        assertThat(rc).as(err()).isZero();
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("profile tiny on engine hicache-serve")
                .contains("Assumptions: times from the engine profile").contains("Validation against the serving engine");
        JsonNode n = new ObjectMapper().readTree(work.resolve("r.json").toFile());
        for (String f : new String[] {"ttft_ms", "tpot_ms", "e2e_ms", "queue_ms"}) {
            assertThat(n.get(f).get("p50").asDouble()).as(f).isGreaterThanOrEqualTo(0);
            assertThat(n.get(f).has("p90")).isTrue();
        }
        assertThat(n.get("ttft_ms").get("p50").asDouble()).isPositive();
        for (String f : new String[] {"block_hit_ratio", "token_hit_ratio", "device_hit_tokens", "host_hit_tokens",
            "throughput_input_tokens_per_s", "throughput_output_tokens_per_s"}) {
            assertThat(n.has(f)).as(f).isTrue();
        }
        assertThat(n.get("requests").asInt()).isEqualTo(3);
        assertThat(n.get("token_hit_ratio").asDouble()).isPositive(); // the follow-up's first block
        assertThat(n.get("model").asText()).isEqualTo("tiny");
        assertThat(n.get("page_size").asInt()).isEqualTo(16);
        assertThat(n.get("chunk_tokens").asInt()).isEqualTo(256);
        assertThat(n.get("engine_profile").get("max_running").asInt()).isEqualTo(2);
        assertThat(Files.readString(work.resolve("r.html"))).contains("Assumptions: times from the engine profile");
    }

    @Test
    void presetRunsSayTheirTimesAreRooflineEstimates() {
        int rc = run("replay", "--trace", "t.jsonl", "--model", "llama3-8b", "--gpu", "h100-sxm",
                "--device-capacity-tokens", "100k", "--html", "r.html");
        assertThat(rc).as(err()).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("Assumptions: times are estimates of a roofline");
    }

    @Test
    void blockTokensExpandEachTraceBlockToThatManyEngineTokens() throws IOException {
        // 512-token blocks (Mooncake) at --block-tokens 16: a 2040-token prompt is 64 tokens for the engine, within its
        // context of 2048, and times exactly as a trace of 16-token blocks with the same block structure does
        Files.writeString(work.resolve("mc.jsonl"), """
                {"timestamp": 0, "input_length": 2040, "output_length": 40, "hash_ids": [0, 1, 2, 3]}
                {"timestamp": 30, "input_length": 1500, "output_length": 20, "hash_ids": [0, 1, 5]}
                {"timestamp": 60, "input_length": 2048, "output_length": 30, "hash_ids": [0, 1, 2, 7]}
                """);
        Files.writeString(work.resolve("b16.jsonl"), """
                {"timestamp_ms": 0, "input_length": 64, "output_length": 40, "block_tokens": 16, "hash_ids": [0, 1, 2, 3], "covers_answer": false}
                {"timestamp_ms": 30, "input_length": 47, "output_length": 20, "block_tokens": 16, "hash_ids": [0, 1, 5], "covers_answer": false}
                {"timestamp_ms": 60, "input_length": 64, "output_length": 30, "block_tokens": 16, "hash_ids": [0, 1, 2, 7], "covers_answer": false}
                """);
        int rc = run("replay", "--engine-profile", "p.json", "--trace", "mc.jsonl", "--block-tokens", "16",
                "--device-capacity-tokens", "4096", "--json", "scaled.json");
        assertThat(rc).as(err()).isZero();
        rc = run("replay", "--engine-profile", "p.json", "--trace", "hicache:b16.jsonl", "--device-capacity-tokens",
                "4096", "--json", "native.json");
        assertThat(rc).as(err()).isZero();
        ObjectMapper m = new ObjectMapper();
        JsonNode scaled = m.readTree(work.resolve("scaled.json").toFile());
        JsonNode exact = m.readTree(work.resolve("native.json").toFile());
        for (String f : new String[] {"ttft_ms", "tpot_ms", "e2e_ms"}) {
            assertThat(scaled.get(f).get("p50").asDouble()).as(f).isPositive()
                    .isEqualTo(exact.get(f).get("p50").asDouble());
            assertThat(scaled.get(f).get("max").asDouble()).as(f).isEqualTo(exact.get(f).get("max").asDouble());
        }
        assertThat(scaled.get("block_hit_ratio").asDouble()).isPositive()
                .isEqualTo(exact.get("block_hit_ratio").asDouble());
        assertThat(scaled.get("device_hit_tokens").asLong()).isEqualTo(exact.get("device_hit_tokens").asLong());
        // the same long prompt at its own block size is beyond the context; a page size that does not divide the
        // block tokens cannot carry the blocks
        refused("beyond the engine profile's context of 2048 tokens", "replay", "--engine-profile", "p.json",
                "--trace", "mc.jsonl", "--device-capacity-tokens", "4096", "--json", "x.json");
        refused("--block-tokens 8 is not a multiple of the engine profile's page_size 16", "replay",
                "--engine-profile", "p.json", "--trace", "mc.jsonl", "--block-tokens", "8",
                "--device-capacity-tokens", "4096", "--json", "x.json");
    }

    private void refused(String expect, String... args) {
        err.reset();
        int rc = run(args);
        assertThat(rc).as(err()).isEqualTo(2);
        assertThat(err()).contains(expect);
        assertThat(err().lines().findFirst().orElseThrow()).contains(expect); // one line says it
        assertThat(work.resolve("x.json")).doesNotExist();
    }

    @Test
    void refusesWhatContradictsTheProfileInOneLine() throws IOException {
        String[] base = {"replay", "--engine-profile", "p.json", "--trace", "t.jsonl", "--json", "x.json"};
        refused("--engine-profile replaces --model", concat(base, "--device-capacity-tokens", "4096", "--model",
                "llama3-8b"));
        refused("--engine-profile replaces --gpu", concat(base, "--device-capacity-tokens", "4096", "--gpu", "h100-sxm"));
        refused("--engine-profile replaces --tp", concat(base, "--device-capacity-tokens", "4096", "--tp", "2"));
        refused("--engine-profile replaces --cache-only", concat(base, "--device-capacity-tokens", "4096",
                "--cache-only"));
        refused("--page-size 32 does not match the engine profile's page_size 16", concat(base,
                "--device-capacity-tokens", "4096", "--page-size", "32"));
        refused("--engine-profile needs --device-capacity-tokens", base);
        refused("--max-running needs --engine-profile", "replay", "--trace", "t.jsonl", "--max-running", "2");
        refused("beyond the engine profile's context of 2048 tokens", "replay", "--engine-profile", "p.json",
                "--trace", "long.jsonl", "--device-capacity-tokens", "4096", "--json", "x.json");
        refused("device pages", "replay", "--engine-profile", "p.json", "--trace", "t.jsonl",
                "--device-capacity-tokens", "704", "--json", "x.json");
        Files.writeString(work.resolve("bad.json"), PROFILE.replace("\"version\": 1", "\"version\": 7"));
        refused("--engine-profile: engine profile", "replay", "--engine-profile", "bad.json", "--trace", "t.jsonl",
                "--device-capacity-tokens", "4096", "--json", "x.json");
        refused("version 7 is not supported", "replay", "--engine-profile", "bad.json", "--trace", "t.jsonl",
                "--device-capacity-tokens", "4096");
    }

    private static String[] concat(String[] a, String... b) {
        String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
