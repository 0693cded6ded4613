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

/** What every replay reads the same way, whatever the format: time, order and size. */
class ReplayReaderTest {

    @TempDir
    Path dir;

    private TraceSource source(String text, ReadOptions read) throws IOException {
        Path p = dir.resolve("t.jsonl");
        Files.writeString(p, text);
        return TraceSource.parse(p.toString(), dir, dir, Long.MAX_VALUE).withRead(read);
    }

    private static List<Request> readAll(TraceSource s) throws IOException {
        List<Request> out = new ArrayList<>();
        try (TraceReader r = s.open()) {
            Request q;
            while ((q = r.next()) != null) {
                out.add(q);
            }
        }
        return out;
    }

    private static String line(long ts, int input) {
        return "{\"timestamp\": " + ts + ", \"input_length\": " + input + ", \"output_length\": 8, \"hash_ids\": ["
                + String.join(", ", java.util.Collections.nCopies((input + 511) / 512, "7")) + "]}\n";
    }

    /** Epoch-millisecond timestamps used to start the clock at 0, 1.7e9 s before the first request. */
    @Test
    void timeIsMeasuredFromTheFirstArrival() throws IOException {
        TraceSource s = source(line(1_700_000_000_000L, 600) + line(1_700_000_000_250L, 600), ReadOptions.DEFAULT);
        assertThat(readAll(s)).extracting(Request::arrivalNs).containsExactly(0L, 250_000_000L);
        TraceStats stats = s.scan();
        assertThat(stats.firstArrivalNs()).isEqualTo(1_700_000_000_000L * 1_000_000);
        assertThat(stats.spanNs()).isEqualTo(250_000_000L);
    }

    /** Unsorted timestamps used to be replayed in file order while each latency counted from its own timestamp. */
    @Test
    void aRecordEarlierThanTheOneBeforeItIsRefusedWithItsLine() throws IOException {
        TraceSource s = source(line(0, 600) + line(2000, 600) + line(1000, 600), ReadOptions.DEFAULT);
        assertThatThrownBy(s::scan).isInstanceOfSatisfying(TraceFormatException.class,
                        e -> assertThat(e.lineNumber()).isEqualTo(3))
                .hasMessageContaining("timestamp 1000 ms is earlier than line 2's 2000 ms")
                .hasMessageContaining("--sort");
    }

    @Test
    void sortReplaysInTimestampOrderStablyAndCountsWhatMoved() throws IOException {
        TraceSource s = source(line(0, 600) + line(2000, 100) + line(1000, 200) + line(1000, 300) + line(3000, 400),
                new ReadOptions(null, true, Long.MAX_VALUE, null, false));
        List<Request> rs = readAll(s);
        assertThat(rs).extracting(Request::inputLength).containsExactly(600, 200, 300, 100, 400);
        assertThat(rs).extracting(Request::index).containsExactly(0, 1, 2, 3, 4);
        assertThat(rs).extracting(Request::id).containsExactly(0L, 2L, 3L, 1L, 4L); // the records' own ids stay
        assertThat(s.scan().sortedOutOfOrder()).isEqualTo(2);
    }

    /** A prompt larger than the device used to be forced through uncached after taking gigabytes. */
    @Test
    void aPromptLargerThanTheLimitIsRefusedWithItsLineOrSkippedAndCounted() throws IOException {
        String text = line(0, 600) + line(5, 5000) + line(9, 700);
        ReadOptions limited = ReadOptions.DEFAULT.withMaxPrompt(4096, "the device's KV capacity");
        assertThatThrownBy(() -> source(text, limited).scan()).isInstanceOfSatisfying(TraceFormatException.class,
                        e -> assertThat(e.lineNumber()).isEqualTo(2))
                .hasMessageContaining("input_length 5000 tokens is larger than 4096 tokens, the device's KV capacity")
                .hasMessageContaining("--skip-oversized");
        TraceSource skipping = source(text, new ReadOptions(null, false, 4096, "the device", true));
        assertThat(readAll(skipping)).extracting(Request::inputLength).containsExactly(600, 700);
        TraceStats stats = skipping.scan();
        assertThat(stats.skippedOversized()).isEqualTo(1);
        assertThat(stats.records()).isEqualTo(2);
        assertThat(stats.largestPrompt()).isEqualTo(700);
    }

    @Test
    void theTimeUnitComesFromTheFormatUnlessGiven() throws IOException {
        String text = line(0, 600) + line(2, 600);
        assertThat(readAll(source(text, ReadOptions.DEFAULT)).get(1).arrivalNs()).isEqualTo(2_000_000L);
        TraceSource seconds = source(text, new ReadOptions(TraceTimeUnit.S, false, Long.MAX_VALUE, null, false));
        assertThat(readAll(seconds).get(1).arrivalNs()).isEqualTo(2_000_000_000L);
        assertThat(seconds.scan().timeUnit()).isEqualTo(TraceTimeUnit.S);
        TraceSource micros = source(text, new ReadOptions(TraceTimeUnit.US, false, Long.MAX_VALUE, null, false));
        assertThat(readAll(micros).get(1).arrivalNs()).isEqualTo(2_000L);
        assertThat(TraceFormat.BAILIAN.defaultTimeUnit()).isEqualTo(TraceTimeUnit.S);
        assertThat(TraceFormat.HICACHE.defaultTimeUnit()).isEqualTo(TraceTimeUnit.MS);
    }

    /** A bad last line used to fail only after every earlier record had been replayed; a scan finds it first. */
    @Test
    void aScanFindsABadLastLineBeforeAnyReplay() throws IOException {
        TraceSource s = source(line(0, 600) + line(1, 600) + "{\"timestamp\": 2, \"input_le", ReadOptions.DEFAULT);
        assertThatThrownBy(s::scan).isInstanceOfSatisfying(TraceFormatException.class,
                e -> assertThat(e.lineNumber()).isEqualTo(3)).hasMessageContaining("truncated");
    }
}
