package io.hicache.sim.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HicacheTraceReaderTest {

    @TempDir
    Path dir;

    private Path file(String text) throws IOException {
        Path p = dir.resolve("h.jsonl");
        Files.writeString(p, text);
        return p;
    }

    private static List<Request> readAll(Path p) throws IOException {
        List<Request> out = new ArrayList<>();
        try (TraceReader r = TraceFormat.HICACHE.open(p, Long.MAX_VALUE)) {
            Request q;
            while ((q = r.next()) != null) {
                out.add(q);
            }
        }
        return out;
    }

    @Test
    void recordsCarryTheirBlockSizeAndSayWhetherTheIdsCoverTheAnswer() throws IOException {
        Path p = file("""
                {"timestamp_ms": 10, "input_length": 20, "output_length": 8, "block_tokens": 16, "hash_ids": [0, 1], "covers_answer": true, "chat_id": 0, "parent_chat_id": -1, "conversation_id": "c1", "turn": 0}
                {"timestamp_ms": 12.5, "input_length": 40, "output_length": 4, "block_tokens": 16, "hash_ids": [0, 2, 3], "covers_answer": false, "chat_id": 1, "parent_chat_id": 0}
                """);
        List<Request> rs = readAll(p);
        assertThat(rs).extracting(Request::blockSize).containsOnly(16);
        assertThat(rs).extracting(Request::coversAnswer).containsExactly(true, false);
        assertThat(rs).extracting(Request::arrivalNs).containsExactly(10_000_000L, 12_500_000L);
        assertThat(rs).extracting(Request::parentId).containsExactly(-1L, 0L);
        // the answer ends inside the prompt's last block, and the record still says the ids cover it
        assertThat(rs.getFirst().coversAnswer()).isTrue();
        assertThat(HicacheTraceReader.blockTokensOf(p)).isEqualTo(16);
        TraceSource s = TraceSource.parse("hicache:" + p, dir, dir, Long.MAX_VALUE);
        assertThat(s.format()).isEqualTo(TraceFormat.HICACHE);
        assertThat(s.blockSize()).isEqualTo(16);
    }

    @Test
    void aTraceHasOneBlockSizeAndAnExplicitAnswerCoverage() throws IOException {
        Path p = file("""
                {"timestamp_ms": 0, "input_length": 16, "output_length": 1, "block_tokens": 16, "hash_ids": [0], "covers_answer": false}
                {"timestamp_ms": 1, "input_length": 16, "output_length": 1, "block_tokens": 32, "hash_ids": [0], "covers_answer": false}
                """);
        assertThatThrownBy(() -> readAll(p)).hasMessageContaining(":2: block_tokens 32 differs from line 1's 16");
        Path q = file("""
                {"timestamp_ms": 0, "input_length": 16, "output_length": 1, "block_tokens": 16, "hash_ids": [0, 1]}
                """);
        assertThatThrownBy(() -> readAll(q)).hasMessageContaining(":1: missing field 'covers_answer'");
        Path r = file("""
                {"timestamp_ms": 0, "input_length": 16, "output_length": 1, "block_tokens": 0, "hash_ids": [], "covers_answer": false}
                """);
        assertThatThrownBy(() -> readAll(r)).hasMessageContaining("block_tokens must be in [1, ");
    }

    @Test
    void labelledRecordsAreNoted() throws IOException {
        Path p = file("""
                {"timestamp_ms": 0, "input_length": 16, "output_length": 1, "block_tokens": 16, "hash_ids": [0], "covers_answer": false, "unique_prefixes": true}
                {"timestamp_ms": 1, "input_length": 16, "output_length": 1, "block_tokens": 16, "hash_ids": [1], "covers_answer": false, "tokens": "whitespace"}
                """);
        try (TraceReader r = TraceFormat.HICACHE.open(p, Long.MAX_VALUE)) {
            while (r.next() != null) {
                assertThat(r.lineNumber()).isPositive();
            }
            assertThat(r.notes()).hasSize(2);
            assertThat(r.notes().get(0)).contains("1 records have prefixes made up by 'convert --unique-prefixes'");
            assertThat(r.notes().get(1)).contains("whitespace");
        }
    }

    /** Logs without prefix hashes used to fail with "missing field 'input_length'" and no word on what to do. */
    @Test
    void aLogWithoutPrefixHashesNamesTheConverter() throws IOException {
        Path ids = file("{\"timestamp\": 0, \"input_ids\": [1, 2, 3], \"output_length\": 4}\n");
        assertThatThrownBy(() -> readAllMooncake(ids)).hasMessageContaining("missing field 'input_length'")
                .hasMessageContaining("hicache-sim convert --from token-ids");
        Path chat = file("{\"timestamp\": 0, \"messages\": [], \"completion\": \"x\"}\n");
        assertThatThrownBy(() -> readAllMooncake(chat)).hasMessageContaining("convert --from openai-chat");
        Path sessions = file("{\"timestamp\": 0, \"conversation_id\": \"a\", \"turn\": 0, \"input_length\": 5,"
                + " \"output_length\": 1}\n");
        assertThatThrownBy(() -> readAllMooncake(sessions)).hasMessageContaining("missing field 'hash_ids'")
                .hasMessageContaining("convert --from sessions");
        Path csv = file("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n");
        assertThatThrownBy(() -> readAllMooncake(csv)).hasMessageContaining(":1: malformed JSON")
                .hasMessageContaining("convert --from azure-csv").hasMessageContaining("--unique-prefixes");
        Path plain = file("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n");
        assertThatThrownBy(() -> readAllMooncake(plain)).hasMessageContaining("no per-block prefix hashes")
                .hasMessageContaining("hicache-sim convert --from");
        Path hicache = file("{\"timestamp_ms\": 0, \"input_length\": 16, \"output_length\": 1, \"block_tokens\": 16,"
                + " \"hash_ids\": [0], \"covers_answer\": false}\n");
        assertThatThrownBy(() -> readAllMooncake(hicache)).hasMessageContaining("--trace hicache:FILE");
    }

    private static void readAllMooncake(Path p) throws IOException {
        try (TraceReader r = TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE)) {
            while (r.next() != null) {
                // read to the end
            }
        }
    }
}
