package io.hicache.sim.trace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TraceReaderTest {

    @TempDir
    Path dir;

    static Path repoRoot() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath();
    }

    static Path bailianSample() {
        return repoRoot().resolve("hicache-sim/src/test/resources/traces/bailian_sample.jsonl");
    }

    private Path file(String text) throws IOException {
        Path p = dir.resolve("t.jsonl");
        Files.writeString(p, text);
        return p;
    }

    private static List<Request> readAll(TraceReader r) throws IOException {
        List<Request> out = new ArrayList<>();
        try (r) {
            Request q;
            while ((q = r.next()) != null) {
                out.add(q);
            }
        }
        return out;
    }

    @Test
    void mooncakeRecordsBecomeRequestsWithNanosecondArrivals() throws IOException {
        Path p = file("""
                {"timestamp": 0, "input_length": 1000, "output_length": 7, "hash_ids": [0, 1]}
                {"timestamp": 27, "input_length": 512, "output_length": 0, "hash_ids": [0], "extra": {"x": [1]}}
                {"hash_ids": [], "output_length": 1, "input_length": 0, "timestamp": 30}
                """);
        List<Request> rs = readAll(TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE));
        assertThat(rs).hasSize(3);
        assertThat(rs.get(0)).isEqualTo(new Request(0, 0, 0, 1000, 7, new int[] {0, 1}, 512));
        assertThat(rs.get(1).arrivalNs()).isEqualTo(27_000_000L);
        assertThat(rs.get(1).index()).isEqualTo(1);
        assertThat(rs.get(2).blockIds()).isEmpty();
    }

    @Test
    void bundledTraceHasAllRecordsAndLimitStopsEarly() throws IOException {
        Path bundled = repoRoot().resolve(TraceSource.BUNDLED_TRACE);
        List<Request> all = readAll(TraceFormat.MOONCAKE.open(bundled, Long.MAX_VALUE));
        assertThat(all).hasSize(12_031);
        assertThat(all.stream().mapToLong(Request::blockCount).sum()).isEqualTo(288_500);
        assertThat(all.getFirst().blockIds()).startsWith(0, 1, 2, 3);
        assertThat(readAll(TraceFormat.MOONCAKE.open(bundled, 10))).hasSize(10);
    }

    /** gen-multiturn's records say which turn each follows; Mooncake's own have no such fields. */
    @Test
    void mooncakeRecordsMayNameTheTurnTheyFollow() throws IOException {
        Path p = file("""
                {"chat_id": 7, "parent_chat_id": -1, "timestamp": 0, "input_length": 512, "output_length": 7, "hash_ids": [0]}
                {"chat_id": 9, "parent_chat_id": 7, "timestamp": 5, "input_length": 1024, "output_length": 7, "hash_ids": [0, 1]}
                {"timestamp": 6, "input_length": 512, "output_length": 7, "hash_ids": [4]}
                """);
        List<Request> rs = readAll(TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE));
        assertThat(rs).extracting(Request::id).containsExactly(7L, 9L, 2L);
        assertThat(rs).extracting(Request::parentId).containsExactly(-1L, 7L, -1L);
    }

    @Test
    void bailianSampleReadsSecondsChatIdsAndSkipsBlankLines() throws IOException {
        List<Request> rs = readAll(TraceFormat.BAILIAN.open(bailianSample(), Long.MAX_VALUE));
        assertThat(rs).hasSize(4);
        assertThat(rs.get(1).id()).isEqualTo(101);
        assertThat(rs).extracting(Request::parentId).startsWith(-1L, 100L, -1L);
        assertThat(rs.get(1).arrivalNs()).isEqualTo(1_250_000_000L);
        assertThat(rs.get(3).arrivalNs()).isEqualTo(3_000_000_001L);
        assertThat(rs.get(3).blockSize()).isEqualTo(16);
        assertThat(rs.get(3).blockIds()).containsExactly(1, 2, 4, 5, 6, 8, 9);
    }

    @Test
    void gzipTracesAreReadTransparently() throws IOException {
        Path gz = dir.resolve("t.jsonl.gz");
        try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(gz))) {
            out.write("{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [9]}\n"
                    .getBytes(StandardCharsets.UTF_8));
        }
        assertThat(readAll(TraceFormat.MOONCAKE.open(gz, Long.MAX_VALUE))).hasSize(1);
    }

    @Test
    void lastLineWithoutNewlineIsAcceptedWhenComplete() throws IOException {
        Path p = file("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [3]}");
        assertThat(readAll(TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE))).hasSize(1);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            malformed JSON        | {"timestamp": 0, "input_length": 1,, "output_length": 1, "hash_ids": [0]}              | malformed JSON
            not an object         | [1, 2]                                                                                 | expected a JSON object, got an array
            missing field         | {"timestamp": 0, "output_length": 1, "hash_ids": [0]}                                  | missing field 'input_length'
            wrong type            | {"timestamp": 0, "input_length": "12", "output_length": 1, "hash_ids": [0]}            | field 'input_length' must be an integer, got string "12"
            float length          | {"timestamp": 0, "input_length": 1.5, "output_length": 1, "hash_ids": [0]}             | field 'input_length' must be an integer, got number 1.5
            null ids              | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": null}              | field 'hash_ids' must be an array of integers, got null
            id not int            | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": ["a"]}             | hash_ids[0] must be an integer, got string "a"
            negative id           | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [-4]}              | hash_ids[0] must be >= 0, got -4
            negative input        | {"timestamp": 0, "input_length": -1, "output_length": 1, "hash_ids": []}               | input_length must be >= 0, got -1
            negative output       | {"timestamp": 0, "input_length": 1, "output_length": -2, "hash_ids": [0]}              | output_length must be >= 0, got -2
            negative timestamp    | {"timestamp": -3, "input_length": 1, "output_length": 1, "hash_ids": [0]}              | timestamp must be >= 0 ms, got -3
            too many ids          | {"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [0, 1, 2]}       | hash_ids has 3 ids but input_length 512 needs ceil(512/512) = 1 blocks of 512 tokens
            answer ids unsaid     | {"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [0, 1]}          | hash_ids has 2 ids but input_length 512 needs ceil(512/512) = 1 blocks of 512 tokens (2 ids would also cover the answer: if they do, say so with "covers_answer": true)
            answer ids too few    | {"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [0], "covers_answer": true} | hash_ids has 1 ids but covers_answer is true, so input_length 512 + output_length 1 need ceil((512+1)/512) = 2 blocks
            covers not a boolean  | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0], "covers_answer": 1} | field 'covers_answer' must be true or false, got number 1
            too few ids           | {"timestamp": 0, "input_length": 513, "output_length": 1, "hash_ids": [0]}             | hash_ids has 1 ids but input_length 513 needs ceil(513/512) = 2 blocks
            huge length           | {"timestamp": 0, "input_length": 99999999999, "output_length": 1, "hash_ids": [0]}     | field 'input_length' value 99999999999 is out of range
            huge id               | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [4294967296]}      | hash_ids[0] value 4294967296 is out of range
            huge timestamp        | {"timestamp": 9223372036854775807, "input_length": 1, "output_length": 1, "hash_ids": [0]} | timestamp 9223372036854775807 ms is too large
            giant timestamp       | {"timestamp": 1e400, "input_length": 1, "output_length": 1, "hash_ids": [0]}           | field 'timestamp' value 1e400 is out of range
            duplicate field       | {"timestamp": 0, "timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [0]} | duplicate field 'timestamp'
            trailing content      | {"timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]} {}            | unexpected content after the JSON object
            float chat id         | {"chat_id": 1.5, "timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]} | field 'chat_id' must be an integer >= 0, got 1.5
            negative chat id      | {"chat_id": -1, "timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]} | field 'chat_id' must be an integer >= 0, got -1.0
            bad parent            | {"parent_chat_id": -2, "timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]} | field 'parent_chat_id' must be an integer >= -1 (-1: a first turn), got -2.0
            parent not a number   | {"parent_chat_id": "0", "timestamp": 0, "input_length": 1, "output_length": 1, "hash_ids": [0]} | field 'parent_chat_id' must be a number, got string "0"
            """)
    void everyBadRecordIsReportedWithFileAndLine(String kind, String badLine, String expected) throws IOException {
        String good = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n";
        Path p = file(good + "\n" + good + badLine + "\n" + good);
        try (TraceReader r = TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE)) {
            assertThat(r.next()).isNotNull();
            assertThat(r.next()).isNotNull();
            assertThatThrownBy(r::next)
                    .isInstanceOfSatisfying(TraceFormatException.class, e -> {
                        assertThat(e.lineNumber()).isEqualTo(4);
                        assertThat(e.file()).isEqualTo(p);
                    })
                    .hasMessageStartingWith(p + ":4: ")
                    .hasMessageContaining(expected);
        }
    }

    @Test
    void invalidUtf8IsReportedWithItsByteOffset() throws IOException {
        Path p = dir.resolve("bad.jsonl");
        byte[] head = "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0], \"note\": \""
                .getBytes(StandardCharsets.UTF_8);
        byte[] line = new byte[head.length + 4];
        System.arraycopy(head, 0, line, 0, head.length);
        line[head.length] = (byte) 0xC3; // lead byte followed by a non-continuation byte
        line[head.length + 1] = 'x';
        line[head.length + 2] = '"';
        line[head.length + 3] = '}';
        Files.write(p, line);
        try (TraceReader r = TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE)) {
            assertThatThrownBy(r::next).isInstanceOf(TraceFormatException.class)
                    .hasMessageStartingWith(p + ":1: ")
                    .hasMessageContaining("invalid UTF-8 at byte " + (head.length + 1));
        }
    }

    @Test
    void aTruncatedLastLineIsReportedAsSuch() throws IOException {
        Path p = file("{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
                + "{\"timestamp\": 5, \"input_length\": 1, \"output_le");
        try (TraceReader r = TraceFormat.MOONCAKE.open(p, Long.MAX_VALUE)) {
            r.next();
            assertThatThrownBy(r::next).isInstanceOf(TraceFormatException.class)
                    .hasMessageStartingWith(p + ":2: last line has no newline (file truncated mid-line?): malformed JSON");
        }
    }

    @Test
    void bailianChecksItsOwnFields() throws IOException {
        Path p = file("""
                {"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 17, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [1, 2]}
                {"chat_id": 2, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 17, "output_length": 1, "type": 3, "turn": 1, "hash_ids": [1, 2]}
                """);
        try (TraceReader r = TraceFormat.BAILIAN.open(p, Long.MAX_VALUE)) {
            assertThat(r.next().arrivalNs()).isEqualTo(500_000_000L);
            assertThatThrownBy(r::next).hasMessage(p + ":2: field 'type' must be a string, got number 3");
        }
        Path q = file("""
                {"chat_id": 1, "parent_chat_id": -1, "timestamp": 0.5, "input_length": 17, "output_length": 1, "type": "text", "turn": 1, "hash_ids": [1]}
                """);
        try (TraceReader r = TraceFormat.BAILIAN.open(q, Long.MAX_VALUE)) {
            assertThatThrownBy(r::next).hasMessageContaining(":1: hash_ids has 1 ids but input_length 17 needs ceil(17/16) = 2");
        }
    }

    @Test
    void sourcesParseFormatPrefixesAndResolveAgainstTheRepositoryRoot() {
        Path work = dir;
        TraceSource bundled = TraceSource.parse(TraceSource.BUNDLED_TRACE, work, repoRoot(), Long.MAX_VALUE);
        assertThat(bundled.format()).isEqualTo(TraceFormat.MOONCAKE);
        assertThat(bundled.path()).isEqualTo(repoRoot().resolve(TraceSource.BUNDLED_TRACE).normalize());
        TraceSource b = TraceSource.parse("bailian:" + bailianSample(), work, repoRoot(), 2);
        assertThat(b.format()).isEqualTo(TraceFormat.BAILIAN);
        assertThat(b.path()).isEqualTo(bailianSample());
        assertThat(b.limit()).isEqualTo(2);
        assertThatThrownBy(() -> TraceSource.parse("parquet:x.jsonl", work, repoRoot(), 1))
                .hasMessageContaining("unknown trace format 'parquet'").hasMessageContaining("mooncake, bailian");
        assertThat(bundled.estimateRecords()).isEqualTo(12_031);
    }
}
