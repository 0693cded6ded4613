package io.hicache.sim.convert;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.trace.TraceFormatException;
import io.hicache.sim.trace.TraceTimeUnit;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.zip.GZIPInputStream;

/**
 * {@code hicache-sim convert}: a log of one of the {@link LogShape}s in, a {@code hicache} trace out. Records are
 * converted one by one; a record that cannot be used is reported on the rejections stream as {@code IN:LINE:
 * rejected: why} and counted, and the conversion goes on. Arrival order is checked: a record earlier than the one
 * before it stops the conversion with its line ({@link TraceFormatException}) unless {@code sort}, in which case the
 * records are converted in timestamp order (stably; for {@code sessions} this orders the turns too) and counted.
 * The trace is written to a temporary file beside {@code out} and moved into place only when the conversion
 * finished, so a failed run leaves no half-written trace. Used on one thread.
 */
public final class LogConverter {
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * What to convert and how.
     *
     * @param shape          the log's shape
     * @param blockTokens    tokens per block of the trace (16 by default on the command line)
     * @param tokenizer      the tokenizer of a text log ({@link LogShape#needsTokenizer()}), else null
     * @param uniquePrefixes give every prompt blocks of its own (for a log without prefix information)
     * @param timeUnit       the unit of the log's numeric timestamps
     * @param sort           convert out-of-order records in timestamp order instead of refusing them
     * @param keysOut        where to write each block number's L3 page key, or null
     */
    public record Options(LogShape shape, int blockTokens, Tokenizer tokenizer, boolean uniquePrefixes,
                          TraceTimeUnit timeUnit, boolean sort, Path keysOut) {
    }

    /**
     * What a conversion did.
     *
     * @param read             records read (blank lines and a CSV header not counted)
     * @param converted        records written
     * @param rejected         records rejected (each reported with its line)
     * @param sorted           records that came earlier than a record before them (converted in timestamp order)
     * @param distinctBlocks   distinct blocks (hash ids) in the trace
     * @param promptTokens     prompt tokens written
     * @param repeatedTokens   prompt tokens in leading blocks an earlier record of the trace already had: what an
     *                         unlimited cache could hit at {@code blockTokens}-token blocks
     */
    public record Result(long read, long converted, long rejected, long sorted, int distinctBlocks, long promptTokens,
                         long repeatedTokens) {
    }

    private LogConverter() {
    }

    /**
     * Converts {@code in} into {@code out}.
     *
     * @param rejections where each rejected record gets its line
     * @throws TraceFormatException a record out of arrival order (without {@code sort}), or the CSV has no header
     * @throws IOException          a file cannot be read or written
     */
    public static Result convert(Path in, Path out, Options o, PrintStream rejections) throws IOException {
        BlockHasher hasher = new BlockHasher(o.blockTokens());
        RecordMaker maker = new RecordMaker(o.shape(), hasher, o.timeUnit(), o.tokenizer(), o.uniquePrefixes());
        Path tmp = out.resolveSibling(out.getFileName() + ".part");
        long[] counts = new long[3]; // read, rejected, sorted
        long[] tokens = new long[2]; // prompt, repeated
        HicacheTraceWriter writer = new HicacheTraceWriter(Files.newBufferedWriter(tmp, StandardCharsets.UTF_8),
                o.blockTokens());
        boolean done = false;
        try (writer; BufferedReader reader = open(in)) {
            BitSet seen = new BitSet();
            Sink sink = r -> {
                tokens[0] += r.inputLength();
                tokens[1] += repeated(r, seen, o.blockTokens());
                writer.write(r);
            };
            List<HicacheRecord> buffered = o.sort() ? new ArrayList<>() : null;
            List<Pending> sessions = o.sort() && o.shape() == LogShape.SESSIONS ? new ArrayList<>() : null;
            double[] last = {Double.NEGATIVE_INFINITY, 0};
            RecordSource source = new RecordSource(in, reader, o.shape());
            Pending p;
            while ((p = source.next(counts, rejections)) != null) {
                try {
                    if (sessions != null) { // a session's history depends on turn order: sort before converting
                        p.timestampMs = maker.timestampMs(p.json);
                        sessions.add(p);
                        continue;
                    }
                    if (buffered == null) { // the log's order, before a record's content can reject it
                        inOrder(in, p.json != null ? maker.timestampMs(p.json) : maker.azureTimestampMs(p.csv[0]),
                                p.line, last);
                    }
                    HicacheRecord r = p.json != null ? maker.fromJson(p.json, p.line)
                            : maker.azure(p.csv[0], p.csv[1], p.csv[2], p.line);
                    if (buffered != null) {
                        if (r.timestampMs() < last[0]) {
                            counts[2]++;
                        }
                        last[0] = Math.max(last[0], r.timestampMs());
                        buffered.add(r);
                    } else {
                        sink.accept(r);
                    }
                } catch (RecordRejectedException e) {
                    reject(rejections, in, p.line, e.getMessage(), counts);
                }
            }
            if (sessions != null) {
                for (Pending s : sessions) {
                    if (s.timestampMs < last[0]) {
                        counts[2]++;
                    }
                    last[0] = Math.max(last[0], s.timestampMs);
                }
                sessions.sort(Comparator.comparingDouble((Pending s) -> s.timestampMs));
                for (Pending s : sessions) {
                    try {
                        sink.accept(maker.fromJson(s.json, s.line));
                    } catch (RecordRejectedException e) {
                        reject(rejections, in, s.line, e.getMessage(), counts);
                    }
                }
            }
            if (buffered != null) {
                buffered.sort(Comparator.comparingDouble(HicacheRecord::timestampMs));
                for (HicacheRecord r : buffered) {
                    sink.accept(r);
                }
            }
            done = true;
        } finally {
            if (!done) {
                Files.deleteIfExists(tmp);
            }
        }
        Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING);
        if (o.keysOut() != null) {
            writeKeys(o.keysOut(), hasher);
        }
        return new Result(counts[0], writer.written(), counts[1], counts[2], hasher.distinctBlocks(), tokens[0],
                tokens[1]);
    }

    /** Prompt tokens of {@code r} in leading blocks seen before; then marks all of {@code r}'s blocks seen. */
    private static long repeated(HicacheRecord r, BitSet seen, int blockTokens) {
        int[] ids = r.hashIds();
        int promptBlocks = (int) (((long) r.inputLength() + blockTokens - 1) / blockTokens);
        int hit = 0;
        while (hit < promptBlocks && hit < ids.length && seen.get(ids[hit])) {
            hit++;
        }
        for (int id : ids) {
            seen.set(id);
        }
        return Math.min((long) hit * blockTokens, r.inputLength());
    }

    private static void inOrder(Path in, double t, long line, double[] last) {
        if (t < last[0]) {
            throw new TraceFormatException(in, line, String.format(Locale.ROOT, "timestamp %s ms is earlier than line"
                            + " %d's %s ms: the log is not in arrival order; pass --sort to convert it in timestamp order"
                            + " (the moved records are counted)", plain(t), (long) last[1], plain(last[0])));
        }
        last[0] = t;
        last[1] = line;
    }

    private static String plain(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }

    private static void reject(PrintStream rejections, Path in, long line, String why, long[] counts) {
        counts[1]++;
        rejections.println(in + ":" + line + ": rejected: " + why);
    }

    private static void writeKeys(Path file, BlockHasher hasher) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (int id = 0; id < hasher.distinctBlocks(); id++) {
                w.write(id + " " + hasher.key(id).hex() + "\n");
            }
        }
    }

    private static BufferedReader open(Path in) throws IOException {
        InputStream raw = Files.newInputStream(in);
        InputStream s = in.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw;
        return new BufferedReader(new InputStreamReader(s, StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE)),
                1 << 16);
    }

    /** Where converted records go, in arrival order. */
    private interface Sink {
        void accept(HicacheRecord r) throws IOException;
    }

    /** One input record not converted yet: a parsed JSON line or the three CSV cells. */
    private static final class Pending {
        final long line;
        final JsonNode json;
        final String[] csv;
        double timestampMs;

        Pending(long line, JsonNode json, String[] csv) {
            this.line = line;
            this.json = json;
            this.csv = csv;
        }
    }

    /** The log's records, line by line: JSON lines parsed (a bad line rejected), or CSV rows by their header. */
    private static final class RecordSource {
        private final Path in;
        private final BufferedReader reader;
        private final LogShape shape;
        private long line;
        private int[] columns;

        RecordSource(Path in, BufferedReader reader, LogShape shape) {
            this.in = in;
            this.reader = reader;
            this.shape = shape;
        }

        Pending next(long[] counts, PrintStream rejections) throws IOException {
            String text;
            while ((text = reader.readLine()) != null) {
                line++;
                if (text.isBlank()) {
                    continue;
                }
                if (shape == LogShape.AZURE_CSV && columns == null) {
                    columns = header(text);
                    continue;
                }
                counts[0]++;
                if (shape == LogShape.AZURE_CSV) {
                    String[] cells = text.split(",", -1);
                    int need = Math.max(columns[0], Math.max(columns[1], columns[2]));
                    if (cells.length <= need) {
                        reject(rejections, in, line, "a row needs at least " + (need + 1) + " cells, got " + cells.length,
                                counts);
                        continue;
                    }
                    return new Pending(line, null, new String[] {unquote(cells[columns[0]]), unquote(cells[columns[1]]),
                            unquote(cells[columns[2]])});
                }
                try {
                    return new Pending(line, JSON.readTree(text), null);
                } catch (JsonProcessingException e) {
                    reject(rejections, in, line, "malformed JSON: " + e.getOriginalMessage()
                            .replaceAll("\\s*\\(start marker at .*", ""), counts);
                }
            }
            if (shape == LogShape.AZURE_CSV && columns == null) {
                throw new TraceFormatException(in, Math.max(1, line), "no header line: an Azure LLM inference CSV starts"
                        + " with TIMESTAMP,ContextTokens,GeneratedTokens");
            }
            return null;
        }

        private int[] header(String text) {
            String[] names = text.split(",", -1);
            int[] at = {-1, -1, -1};
            String[] want = {"timestamp", "contexttokens", "generatedtokens"};
            for (int i = 0; i < names.length; i++) {
                String name = unquote(names[i]).strip().toLowerCase(Locale.ROOT);
                for (int k = 0; k < want.length; k++) {
                    if (name.equals(want[k])) {
                        at[k] = i;
                    }
                }
            }
            for (int k = 0; k < want.length; k++) {
                if (at[k] < 0) {
                    throw new TraceFormatException(in, line, "the header '" + text + "' has no column "
                            + new String[] {"TIMESTAMP", "ContextTokens", "GeneratedTokens"}[k]
                            + "; an Azure LLM inference CSV starts with TIMESTAMP,ContextTokens,GeneratedTokens");
                }
            }
            return at;
        }

        private static String unquote(String s) {
            String t = s.strip();
            return t.length() >= 2 && t.startsWith("\"") && t.endsWith("\"") ? t.substring(1, t.length() - 1) : t;
        }
    }
}
