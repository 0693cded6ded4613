package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.DefaultEngineFactory;
import io.hicache.sim.EngineFactory;
import io.hicache.sim.SimulationEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/** Your own logs, end to end through the command line: convert, then replay, and every misreading refused or said. */
class OwnTracesCliTest {

    @TempDir
    Path work;

    private ByteArrayOutputStream out = new ByteArrayOutputStream();
    private ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int run(EngineFactory engines, String... args) {
        out = new ByteArrayOutputStream();
        err = new ByteArrayOutputStream();
        Main.Env env = new Main.Env(engines, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, work, false);
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

    private JsonNode json(String name) throws IOException {
        return new ObjectMapper().readTree(work.resolve(name).toFile());
    }

    private void write(String name, String text) throws IOException {
        Files.writeString(work.resolve(name), text);
    }

    private static String mooncake(long ts, int input, int firstId) {
        return "{\"timestamp\": " + ts + ", \"input_length\": " + input + ", \"output_length\": 8, \"hash_ids\": "
                + IntStream.range(firstId, firstId + (input + 511) / 512).mapToObj(Integer::toString)
                .collect(Collectors.joining(", ", "[", "]")) + "}\n";
    }

    @Test
    void aTokenIdLogConvertsAndReplaysWithTheHitRatioItsSharedPrefixImplies() throws IOException {
        String a = IntStream.range(1, 97).mapToObj(Integer::toString).collect(Collectors.joining(", "));
        String b = IntStream.range(1, 65).mapToObj(Integer::toString).collect(Collectors.joining(", "))
                + ", " + IntStream.range(1000, 1016).mapToObj(Integer::toString).collect(Collectors.joining(", "));
        write("ids.jsonl", "{\"timestamp\": 0, \"input_ids\": [" + a + "], \"output_length\": 4}\n"
                + "{\"timestamp\": 1000, \"input_ids\": [" + b + "], \"output_length\": 4}\n");
        assertThat(run("convert", "--from", "token-ids", "ids.jsonl", "--out", "ids.hc.jsonl")).as(err()).isZero();
        assertThat(out()).contains("converted 2 of 2 records").contains("64 prompt tokens (0.3636)");
        assertThat(run("replay", "--trace", "hicache:ids.hc.jsonl", "--cache-only", "--device-capacity-tokens", "inf",
                "--json", "r.json")).as(err()).isZero();
        assertThat(json("r.json").get("token_hit_ratio").asDouble()).isEqualTo(64.0 / 176);
        assertThat(json("r.json").get("block_tokens").asInt()).isEqualTo(16);
    }

    @Test
    void usageErrorsOfConvertExitTwo() throws IOException {
        write("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n");
        write("chat.jsonl", "{\"timestamp\": 0, \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], "
                + "\"completion\": \"yo\"}\n");
        assertThat(run("convert", "--from", "azure-csv", "azure.csv", "--out", "a.jsonl")).isEqualTo(2);
        assertThat(err()).contains("no prefix information").contains("--unique-prefixes");
        assertThat(work.resolve("a.jsonl")).doesNotExist();
        assertThat(run("convert", "--from", "openai-chat", "chat.jsonl", "--out", "c.jsonl")).isEqualTo(2);
        assertThat(err()).contains("--tokenizer FILE").contains("--whitespace-tokens");
        assertThat(run("convert", "--from", "token-ids", "chat.jsonl", "--out", "c.jsonl", "--whitespace-tokens"))
                .isEqualTo(2);
        assertThat(run("convert", "--from", "parquet", "chat.jsonl", "--out", "c.jsonl")).isEqualTo(2);
        assertThat(err()).contains("valid: openai-chat|token-ids|sessions|azure-csv");
        assertThat(run("convert", "--from", "sessions", "nope.jsonl", "--out", "c.jsonl")).isEqualTo(2);
        assertThat(run("convert", "--from", "azure-csv", "azure.csv", "--out", "a.jsonl", "--unique-prefixes"))
                .as(err()).isZero();
        assertThat(out()).contains("measures no reuse");
        assertThat(run("replay", "--trace", "hicache:a.jsonl", "--cache-only")).as(err()).isZero();
        assertThat(out()).contains("made up by 'convert --unique-prefixes'");
        assertThat(run("convert", "--from", "openai-chat", "chat.jsonl", "--out", "c.jsonl", "--whitespace-tokens"))
                .as(err()).isZero();
        assertThat(run("replay", "--trace", "hicache:c.jsonl", "--time-unit", "s")).isEqualTo(2);
        assertThat(err()).contains("does not apply to a hicache trace");
        assertThat(run("replay", "--trace", "hicache:c.jsonl", "--time-unit", "minutes")).isEqualTo(2);
    }

    /** Seconds read as milliseconds used to replay silently (TTFT p50 701 -> 3,501 ms). */
    @Test
    void secondsReadAsMillisecondsWarnAndTheUnitFlagReadsThemRight() throws IOException {
        StringBuilder t = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            t.append(mooncake(2L * i, 600, 10 * i));
        }
        write("seconds.jsonl", t.toString());
        assertThat(run("replay", "--trace", "seconds.jsonl", "--json", "ms.json")).as(err()).isZero();
        assertThat(err()).contains("warning").contains("timestamps read as ms").contains("--time-unit s");
        assertThat(run("replay", "--trace", "seconds.jsonl", "--time-unit", "s", "--json", "s.json")).as(err()).isZero();
        assertThat(err()).doesNotContain("warning");
        assertThat(json("s.json").get("simulated_seconds").asDouble()).isGreaterThan(14);
        assertThat(json("ms.json").get("simulated_seconds").asDouble()).isLessThan(14);
        assertThat(run("replay", "--trace", "seconds.jsonl", "--cache-only")).isZero();
        assertThat(err()).doesNotContain("warning"); // cache-only ignores timing
    }

    /** Epoch-ms timestamps used to start the clock at 0: simulated_seconds 1.7e9, GPU busy 0.0 %. */
    @Test
    void epochTimestampsReplayFromTheFirstArrival() throws IOException {
        write("epoch.jsonl", mooncake(1_700_000_000_000L, 600, 0) + mooncake(1_700_000_000_500L, 600, 0));
        assertThat(run("replay", "--trace", "epoch.jsonl", "--json", "e.json")).as(err()).isZero();
        assertThat(json("e.json").get("simulated_seconds").asDouble()).isLessThan(60);
    }

    /** Unsorted timestamps used to be replayed in file order against their own timestamps (goodput 1.0 -> 0.25). */
    @Test
    void anUnsortedTraceIsRefusedWithItsLineAndSortGivesTheSortedTracesFigures() throws IOException {
        write("unsorted.jsonl", mooncake(0, 600, 1) + mooncake(2000, 600, 1) + mooncake(1000, 600, 1));
        write("sorted.jsonl", mooncake(0, 600, 1) + mooncake(1000, 600, 1) + mooncake(2000, 600, 1));
        assertThat(run("replay", "--trace", "unsorted.jsonl", "--json", "u.json")).isEqualTo(1);
        assertThat(err()).contains("unsorted.jsonl:3: timestamp 1000 ms is earlier than line 2's 2000 ms");
        assertThat(work.resolve("u.json")).doesNotExist();
        assertThat(run("replay", "--trace", "unsorted.jsonl", "--sort", "--json", "u.json")).as(err()).isZero();
        assertThat(out()).contains("1 of 3 records came earlier than a record before them");
        assertThat(run("replay", "--trace", "sorted.jsonl", "--json", "s.json")).as(err()).isZero();
        for (String field : new String[] {"block_hit_ratio", "token_hit_ratio", "simulated_seconds"}) {
            assertThat(json("u.json").get(field)).as(field).isEqualTo(json("s.json").get(field));
        }
        assertThat(json("u.json").get("ttft_ms")).isEqualTo(json("s.json").get("ttft_ms"));
    }

    /** A prompt larger than the device used to go through uncached (TTFT 8.6 years) after taking 5.3 GB. */
    @Test
    void aPromptLargerThanTheDeviceIsRefusedWithItsLineOrSkipped() throws IOException {
        write("big.jsonl", mooncake(0, 600, 0) + mooncake(5, 40_000, 100) + mooncake(9, 600, 0));
        assertThat(run("replay", "--trace", "big.jsonl", "--device-capacity-tokens", "20000")).isEqualTo(1);
        assertThat(err()).contains("big.jsonl:2: input_length 40000 tokens is larger than 20000 tokens");
        assertThat(run("replay", "--trace", "big.jsonl", "--device-capacity-tokens", "20000", "--skip-oversized",
                "--cache-only", "--json", "b.json")).as(err()).isZero();
        assertThat(out()).contains("skipped 1 prompts larger than");
        assertThat(json("b.json").get("requests").asInt()).isEqualTo(2);
    }

    /** A truncated last line used to fail only after every earlier record had been replayed, with no JSON. */
    @Test
    void aBadLastLineFailsTheRunBeforeAnyReplay() throws IOException {
        write("cut.jsonl", mooncake(0, 600, 0) + mooncake(1, 600, 0) + "{\"timestamp\": 2, \"input_len");
        AtomicInteger runs = new AtomicInteger();
        EngineFactory counting = c -> {
            SimulationEngine real = new DefaultEngineFactory().create(c);
            return (cfg, trace, progress) -> {
                runs.incrementAndGet();
                return real.run(cfg, trace, progress);
            };
        };
        assertThat(run(counting, "replay", "--trace", "cut.jsonl", "--cache-only")).isEqualTo(1);
        assertThat(err()).contains("cut.jsonl:3: last line has no newline");
        assertThat(runs.get()).isZero();
    }

    /** An answer that ends inside the prompt's last block used to be never cached (ids count = prompt blocks). */
    @Test
    void anAnswerEndingInsideThePromptsLastBlockIsCachedWhenTheTraceSaysSo() throws IOException {
        String second = "{\"timestamp_ms\": 1, \"input_length\": 40, \"output_length\": 4, \"block_tokens\": 16,"
                + " \"hash_ids\": [0, 1, 2], \"covers_answer\": false}\n";
        write("said.jsonl", "{\"timestamp_ms\": 0, \"input_length\": 20, \"output_length\": 8, \"block_tokens\": 16,"
                + " \"hash_ids\": [0, 1], \"covers_answer\": true}\n" + second);
        write("unsaid.jsonl", "{\"timestamp_ms\": 0, \"input_length\": 20, \"output_length\": 8, \"block_tokens\": 16,"
                + " \"hash_ids\": [0, 1], \"covers_answer\": false}\n" + second);
        for (String f : new String[] {"said", "unsaid"}) {
            assertThat(run("replay", "--trace", "hicache:" + f + ".jsonl", "--cache-only", "--page-size", "1",
                    "--device-capacity-tokens", "inf", "--json", f + ".json")).as(err()).isZero();
        }
        // 20 prompt tokens and 7 of the 8 answer tokens (the last one's KV is never computed) are cached
        assertThat(json("said.json").get("token_hit_ratio").asDouble()).isEqualTo(27.0 / 60);
        assertThat(json("unsaid.json").get("token_hit_ratio").asDouble()).isEqualTo(20.0 / 60);
    }

    @Test
    void helpDocumentsEveryFieldOfTheFormats() {
        assertThat(run("convert", "--help")).isZero();
        String help = out();
        for (String field : new String[] {"timestamp_ms", "block_tokens", "covers_answer", "hash_ids rule",
                "parent_chat_id", "unique_prefixes", "input_ids", "output_ids", "conversation_id", "ContextTokens",
                "tokenizer.json", "--time-unit", "--sort"}) {
            assertThat(help).as(field).contains(field);
        }
        assertThat(run("replay", "--help")).isZero();
        assertThat(out()).contains("hicache (what 'convert' writes)").contains("--skip-oversized").contains("--time-unit");
    }
}
