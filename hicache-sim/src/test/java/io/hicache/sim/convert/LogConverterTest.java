package io.hicache.sim.convert;

import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TraceFormat;
import io.hicache.sim.trace.TraceFormatException;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceTimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LogConverterTest {

    @TempDir
    Path dir;

    private final ByteArrayOutputStream rejections = new ByteArrayOutputStream();

    private LogConverter.Result convert(LogShape shape, String log, Tokenizer tok, boolean unique, boolean sort)
            throws IOException {
        Path in = dir.resolve("in.log");
        Files.writeString(in, log);
        return LogConverter.convert(in, dir.resolve("out.jsonl"), new LogConverter.Options(shape, 16, tok, unique,
                TraceTimeUnit.MS, sort, dir.resolve("keys.txt")), new PrintStream(rejections, true, StandardCharsets.UTF_8));
    }

    private List<Request> trace() throws IOException {
        List<Request> out = new ArrayList<>();
        try (TraceReader r = TraceFormat.HICACHE.open(dir.resolve("out.jsonl"), Long.MAX_VALUE)) {
            Request q;
            while ((q = r.next()) != null) {
                out.add(q);
            }
        }
        return out;
    }

    private String rejected() {
        return rejections.toString(StandardCharsets.UTF_8);
    }

    private static String ids(int from, int to) {
        return IntStream.range(from, to).mapToObj(Integer::toString).collect(Collectors.joining(", ", "[", "]"));
    }

    @Test
    void tokenIdLogsShareExactlyTheBlocksTheirIdsShare() throws IOException {
        String log = "{\"timestamp\": 0, \"input_ids\": " + ids(1, 97) + ", \"output_length\": 4}\n"
                + "{\"timestamp\": 1000, \"input_ids\": " + ids(1, 65).replace("]", ", 1000, 1001]")
                + ", \"output_length\": 4, \"conversation_id\": 7}\n"
                + "{\"timestamp\": 2000, \"input_ids\": [1, 2], \"output_ids\": [5, 6, 7]}\n";
        LogConverter.Result r = convert(LogShape.TOKEN_IDS, log, null, false, false);
        assertThat(r.converted()).isEqualTo(3);
        assertThat(r.rejected()).isZero();
        assertThat(r.repeatedTokens()).isEqualTo(64);
        List<Request> t = trace();
        assertThat(t.get(0).blockIds()).containsExactly(0, 1, 2, 3, 4, 5);
        assertThat(t.get(1).blockIds()).containsExactly(0, 1, 2, 3, 6);
        assertThat(t.get(1).inputLength()).isEqualTo(66);
        assertThat(t.get(2).coversAnswer()).isTrue();
        assertThat(t.get(2).outputLength()).isEqualTo(3);
        assertThat(t.get(0).coversAnswer()).isFalse();
        assertThat(Files.readAllLines(dir.resolve("keys.txt"))).hasSize(r.distinctBlocks());
        assertThat(Files.readString(dir.resolve("out.jsonl"))).contains("\"conversation_id\":\"7\"");
    }

    @Test
    void aSessionTurnRepeatsItsHistoryAndABrokenOneIsRejectedWithItsLine() throws IOException {
        String log = """
                {"timestamp": 0, "conversation_id": "c1", "turn": 0, "input_length": 200, "output_length": 20}
                {"timestamp": 1000, "conversation_id": "c2", "turn": 0, "input_length": 150, "output_length": 20}
                {"timestamp": 2000, "conversation_id": "c1", "turn": 1, "input_length": 420, "output_length": 20}
                {"timestamp": 3000, "conversation_id": "c2", "turn": 1, "input_length": 100, "output_length": 20}
                {"timestamp": 4000, "conversation_id": "c2", "turn": 3, "input_length": 900, "output_length": 20}
                {"timestamp": 5000, "conversation_id": "c1", "turn": 2, "input_length": 500, "output_length": 9}
                """;
        LogConverter.Result r = convert(LogShape.SESSIONS, log, null, false, false);
        assertThat(r.converted()).isEqualTo(4);
        assertThat(r.rejected()).isEqualTo(2);
        assertThat(rejected()).contains("in.log:4: rejected: input_length 100 is not longer than its history, turn 0's"
                + " prompt 150 + answer 20 = 170 tokens");
        assertThat(rejected()).contains("in.log:5: rejected: turn 3 of conversation 'c2' follows turn 0");
        List<Request> t = trace();
        Request c1t0 = t.get(0);
        Request c1t1 = t.get(2);
        assertThat(c1t0.coversAnswer()).isTrue();
        assertThat(c1t0.blockIds()).hasSize((200 + 20 + 15) / 16);
        // turn 1 repeats turn 0's 220 tokens: its 13 whole blocks; the 14th differs (turn 0's was partial)
        assertThat(c1t1.blockIds()).startsWith(java.util.Arrays.copyOf(c1t0.blockIds(), 13));
        assertThat(c1t1.blockIds()[13]).isNotEqualTo(c1t0.blockIds()[13]);
        assertThat(t.get(3).blockIds()).startsWith(java.util.Arrays.copyOf(c1t1.blockIds(), (420 + 20) / 16));
        assertThat(t).extracting(Request::parentId).containsExactly(-1L, -1L, 0L, 2L);
        // no block of one conversation appears in the other
        assertThat(t.get(1).blockIds()).doesNotContain(c1t0.blockIds());
        assertThat(r.repeatedTokens()).isEqualTo(13 * 16 + 27 * 16);
    }

    @Test
    void aChatsNextTurnHitsItsPromptAndAnswer() throws IOException {
        String log = """
                {"timestamp": 0, "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three colours of the rainbow please"}], "completion": "red orange yellow"}
                {"timestamp": 5, "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three colours of the rainbow please"}, {"role": "assistant", "content": "red orange yellow"}, {"role": "user", "content": [{"type": "text", "text": "and two more"}]}], "completion": "green blue"}
                {"timestamp": 6, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}], "completion": "?"}
                """;
        LogConverter.Result r = convert(LogShape.OPENAI_CHAT, log, BpeTokenizer.load(BpeTokenizerTest.mini()), false,
                false);
        assertThat(r.converted()).isEqualTo(2);
        assertThat(rejected()).contains("in.log:3: rejected: messages[0].content has a part of type 'image_url'");
        List<Request> t = trace();
        Request first = t.get(0);
        Request second = t.get(1);
        assertThat(first.coversAnswer()).isTrue();
        int shared = (first.inputLength() + first.outputLength()) / 16; // whole blocks of prompt and answer
        assertThat(second.blockIds()).startsWith(java.util.Arrays.copyOf(first.blockIds(), shared));
        assertThat(r.repeatedTokens()).isEqualTo(shared * 16L);
    }

    @Test
    void whitespaceWordsAreLabelled() throws IOException {
        convert(LogShape.OPENAI_CHAT, "{\"timestamp\": 0, \"messages\": [{\"role\": \"user\", \"content\": \"a b c\"}],"
                + " \"completion\": \"d e\"}\n", new WhitespaceTokenizer(), false, false);
        assertThat(Files.readString(dir.resolve("out.jsonl"))).contains("\"tokens\":\"whitespace\"");
        Request q = trace().getFirst();
        // <|im_start|> user a b c <|im_end|> <|im_start|> assistant = 8 words; d e <|im_end|> = 3
        assertThat(q.inputLength()).isEqualTo(8);
        assertThat(q.outputLength()).isEqualTo(3);
    }

    @Test
    void anAzureCsvGetsPrefixesOfItsOwnLabelledAsSuch() throws IOException {
        LogConverter.Result r = convert(LogShape.AZURE_CSV, """
                TIMESTAMP,ContextTokens,GeneratedTokens
                2023-11-16 18:15:46.6805900,374,44
                2023-11-16 18:15:50.9951690,396,109
                2023-11-16 18:15:51,abc,1
                """, null, true, false);
        assertThat(r.converted()).isEqualTo(2);
        assertThat(rejected()).contains("in.log:4: rejected: ContextTokens must be an integer, got 'abc'");
        assertThat(r.repeatedTokens()).isZero();
        List<Request> t = trace();
        // epoch milliseconds as a double: exact to a fraction of a microsecond
        assertThat(t.get(1).arrivalNs() - t.get(0).arrivalNs()).isCloseTo(4_314_579_000L,
                org.assertj.core.data.Offset.offset(1_000L));
        assertThat(t.get(0).blockIds()).doesNotContain(t.get(1).blockIds());
        assertThat(Files.readString(dir.resolve("out.jsonl"))).contains("\"unique_prefixes\":true");
    }

    @Test
    void aLogOutOfArrivalOrderIsRefusedWithItsLineUnlessSorted() throws IOException {
        String log = """
                {"timestamp": 0, "conversation_id": "c1", "turn": 0, "input_length": 20, "output_length": 4}
                {"timestamp": 2000, "conversation_id": "c1", "turn": 2, "input_length": 60, "output_length": 4}
                {"timestamp": 1000, "conversation_id": "c1", "turn": 1, "input_length": 40, "output_length": 4}
                """;
        assertThatThrownBy(() -> convert(LogShape.SESSIONS, log, null, false, false))
                .isInstanceOfSatisfying(TraceFormatException.class, e -> assertThat(e.lineNumber()).isEqualTo(3))
                .hasMessageContaining("earlier than line 2's 2000 ms").hasMessageContaining("--sort");
        assertThat(dir.resolve("out.jsonl")).doesNotExist();
        assertThat(dir.resolve("out.jsonl.part")).doesNotExist();
        LogConverter.Result r = convert(LogShape.SESSIONS, log, null, false, true);
        assertThat(r.sorted()).isEqualTo(1);
        assertThat(r.rejected()).isZero();
        assertThat(trace()).extracting(Request::inputLength).containsExactly(20, 40, 60);
    }
}
