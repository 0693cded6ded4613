package io.hicache.sim.trace;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadFeature;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CoderResult;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.zip.GZIPInputStream;

/**
 * Shared plumbing of the JSON-lines trace readers, written once: opening (transparent gzip for
 * {@code .gz}), line splitting on raw bytes, strict UTF-8 checking, one Jackson streaming parse per
 * line into typed fields, the checks every format shares (missing, duplicate and wrong-typed fields,
 * numbers out of range, negative lengths, hash id count against the input length, trailing content,
 * a truncated last line) and the record limit. A concrete reader declares its {@link Field}s and
 * turns a parsed {@link Fields} into a {@link Request} in a few lines.
 *
 * <p>Owned by one thread; not thread-safe. Unknown fields are skipped; blank lines are skipped.
 * Every problem is a {@link TraceFormatException} naming {@code file:line}.
 */
public abstract class AbstractJsonlTraceReader implements TraceReader {

    private static final JsonFactory JSON = JsonFactory.builder()
            .disable(StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION)
            .build();
    private static final int READ_BUFFER_BYTES = 1 << 16;

    /** The JSON type a field must have. */
    public enum FieldType {
        /** An integer that fits an {@code int}. */
        INT,
        /** Any finite JSON number, integer or not (kept exactly when it is an integer). */
        NUMBER,
        /** A JSON string. */
        STRING,
        /** An array of non-negative integers that fit an {@code int}. */
        INT_ARRAY,
        /** A JSON boolean ({@code true} or {@code false}). */
        BOOLEAN
    }

    /**
     * One declared field of a record.
     *
     * @param name     the JSON key
     * @param type     the JSON type it must have
     * @param required whether a record without it is an error
     */
    public record Field(String name, FieldType type, boolean required) {
    }

    /**
     * The parsed values of one record, indexed like the reader's declared fields. Reused from line to
     * line: read values before the next call of {@link #next()}.
     */
    public static final class Fields {
        private final long[] longs;
        private final double[] doubles;
        private final boolean[] integral;
        private final boolean[] present;
        private final String[] strings;
        private int[] ids = new int[64];
        private int idCount;

        Fields(int size) {
            longs = new long[size];
            doubles = new double[size];
            integral = new boolean[size];
            present = new boolean[size];
            strings = new String[size];
        }

        /** Whether field {@code i} appeared in the record. */
        public boolean has(int i) {
            return present[i];
        }

        /** Field {@code i} as an int (an {@link FieldType#INT} field). */
        public int intValue(int i) {
            return (int) longs[i];
        }

        /** Field {@code i} as a long (an {@link FieldType#INT} field, or an integral {@link FieldType#NUMBER}). */
        public long longValue(int i) {
            return longs[i];
        }

        /** Field {@code i} as a double (a {@link FieldType#NUMBER} field). */
        public double doubleValue(int i) {
            return doubles[i];
        }

        /** Whether {@link FieldType#NUMBER} field {@code i} was written as an integer. */
        public boolean isIntegral(int i) {
            return integral[i];
        }

        /** Field {@code i} as a string (a {@link FieldType#STRING} field). */
        public String stringValue(int i) {
            return strings[i];
        }

        /** Field {@code i} as a boolean (a {@link FieldType#BOOLEAN} field); false when absent. */
        public boolean booleanValue(int i) {
            return present[i] && longs[i] != 0;
        }

        /** A fresh copy of the ids of the (single) {@link FieldType#INT_ARRAY} field. */
        public int[] idsCopy() {
            return Arrays.copyOf(ids, idCount);
        }

        /** Number of ids in the (single) {@link FieldType#INT_ARRAY} field. */
        public int idCount() {
            return idCount;
        }

        void clear() {
            Arrays.fill(present, false);
            Arrays.fill(strings, null);
            idCount = 0;
        }

        void addId(int id) {
            if (idCount == ids.length) {
                ids = Arrays.copyOf(ids, ids.length * 2);
            }
            ids[idCount++] = id;
        }
    }

    private final Path file;
    private final long limit;
    private int blockSize;
    private final TraceTimeUnit timeUnit;
    private final List<Field> fields;
    /** The keys of the current line that no declared field has (for the hints of a missing field). */
    private final List<String> otherKeys = new java.util.ArrayList<>();
    private final Fields values;
    private final InputStream in;
    private final byte[] buffer = new byte[READ_BUFFER_BYTES];
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    private CharBuffer chars = CharBuffer.allocate(1024);
    private int bufferPos;
    private int bufferEnd;
    private boolean eof;
    private byte[] line = new byte[4096];
    private int lineLength;
    private boolean lineHadNewline;
    private long lineNumber;
    private int returned;
    private boolean closed;

    /**
     * Opens {@code file}.
     *
     * @param file      the trace (gzip-compressed when its name ends with {@code .gz})
     * @param limit     at most this many records are returned; {@code Long.MAX_VALUE} for all
     * @param blockSize tokens per hash id block in this format
     * @param fields    the record's declared fields; at most one {@link FieldType#INT_ARRAY}
     * @param timeUnit  the unit of the timestamps ({@link #timeUnit()})
     * @throws UncheckedIOException the file cannot be opened
     */
    protected AbstractJsonlTraceReader(Path file, long limit, int blockSize, List<Field> fields,
                                       TraceTimeUnit timeUnit) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit must be >= 0, got " + limit);
        }
        this.file = file;
        this.limit = limit;
        this.blockSize = blockSize;
        this.timeUnit = java.util.Objects.requireNonNull(timeUnit, "timeUnit");
        this.fields = List.copyOf(fields);
        this.values = new Fields(fields.size());
        try {
            InputStream raw = Files.newInputStream(file);
            this.in = file.getFileName().toString().endsWith(".gz")
                    ? new GZIPInputStream(new BufferedInputStream(raw, READ_BUFFER_BYTES), READ_BUFFER_BYTES)
                    : raw;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open trace " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Builds the request of the current line from its parsed fields. Use {@link #fail(String)} for
     * format-specific problems and {@link #toNanos(Fields, int, long, String)} for timestamps.
     *
     * @param f     the parsed values, indexed like the declared fields; every required field is present
     * @param index the 0-based record index
     */
    protected abstract Request toRequest(Fields f, int index);

    /** Tokens per hash id block of this format (or of this file, for a format that gives it per record). */
    protected final int blockSize() {
        return blockSize;
    }

    /** Sets the block size, for a format whose records give it ({@code hicache}: {@code block_tokens}). */
    protected final void blockSize(int tokens) {
        this.blockSize = tokens;
    }

    /** The unit this reader reads timestamps in (the format's default unless {@code --time-unit} said otherwise). */
    protected final TraceTimeUnit timeUnit() {
        return timeUnit;
    }

    @Override
    public final long lineNumber() {
        return lineNumber;
    }

    /** The trace file. */
    protected final Path file() {
        return file;
    }

    /** A {@link TraceFormatException} for the current line; throw it. */
    protected final TraceFormatException fail(String problem) {
        String prefix = lineHadNewline ? "" : "last line has no newline (file truncated mid-line?): ";
        return new TraceFormatException(file, lineNumber, prefix + problem);
    }

    /** {@link #toNanos(Fields, int, long, String)} in this reader's {@link #timeUnit()}. */
    protected final long toNanos(Fields f, int field) {
        return toNanos(f, field, timeUnit.nanos(), timeUnit.cliName());
    }

    /**
     * Converts a non-negative timestamp field in units of {@code nsPerUnit} nanoseconds to
     * nanoseconds, exactly for integers and rounded to the nearest nanosecond otherwise.
     */
    protected final long toNanos(Fields f, int field, long nsPerUnit, String unit) {
        String name = fields.get(field).name();
        if (f.isIntegral(field)) {
            long v = f.longValue(field);
            if (v < 0) {
                throw fail(name + " must be >= 0 " + unit + ", got " + v);
            }
            if (v > Long.MAX_VALUE / nsPerUnit) {
                throw fail(name + " " + v + " " + unit + " is too large (more than "
                        + Long.MAX_VALUE / nsPerUnit + " " + unit + " overflows a nanosecond clock)");
            }
            return v * nsPerUnit;
        }
        double v = f.doubleValue(field);
        if (!(v >= 0)) {
            throw fail(name + " must be >= 0 " + unit + ", got " + v);
        }
        double ns = v * nsPerUnit;
        if (ns >= 0x1p63) {
            throw fail(name + " " + v + " " + unit + " is too large (overflows a nanosecond clock)");
        }
        return Math.round(ns);
    }

    /**
     * The {@code parent_chat_id} field {@code field} (see {@link Request#parentId()}): -1 when the record has none,
     * else the value, which must be an integer >= -1.
     */
    protected final long parentId(Fields f, int field) {
        if (!f.has(field)) {
            return -1;
        }
        if (!f.isIntegral(field) || f.longValue(field) < -1) {
            throw fail("field '" + fields.get(field).name() + "' must be an integer >= -1 (-1: a first turn), got "
                    + f.doubleValue(field));
        }
        return f.longValue(field);
    }

    /**
     * Checks the lengths and the hash id count shared by every format, then makes the request ({@code parentId}: see
     * {@link Request#parentId()}). The ids cover the prompt, {@code ceil(inputLength / blockSize)} of them, or, when
     * the record says so ({@code coversAnswer}, its {@code covers_answer} field), prompt and answer together,
     * {@code ceil((inputLength + outputLength) / blockSize)}: the count alone never decides it, so a typo in a count
     * cannot turn into a hit on an answer.
     *
     * @throws TraceFormatException a length is negative or the id count is not the one the rule gives
     */
    protected final Request request(int index, long id, long parentId, long arrivalNs, int inputLength,
                                    int outputLength, String inputName, String outputName, String idsName, Fields f,
                                    boolean coversAnswer) {
        if (inputLength < 0) {
            throw fail(inputName + " must be >= 0, got " + inputLength);
        }
        if (outputLength < 0) {
            throw fail(outputName + " must be >= 0, got " + outputLength);
        }
        long expected = ((long) inputLength + blockSize - 1) / blockSize;
        long withAnswer = ((long) inputLength + outputLength + blockSize - 1) / blockSize;
        if (coversAnswer && f.idCount() != withAnswer) {
            throw fail(idsName + " has " + f.idCount() + " ids but covers_answer is true, so " + inputName + " "
                    + inputLength + " + " + outputName + " " + outputLength + " need ceil((" + inputLength + "+"
                    + outputLength + ")/" + blockSize + ") = " + withAnswer + " blocks of " + blockSize + " tokens");
        }
        if (!coversAnswer && f.idCount() != expected) {
            throw fail(idsName + " has " + f.idCount() + " ids but " + inputName + " " + inputLength + " needs ceil("
                    + inputLength + "/" + blockSize + ") = " + expected + " blocks of " + blockSize + " tokens"
                    + (withAnswer != expected && f.idCount() == withAnswer
                    ? " (" + withAnswer + " ids would also cover the answer: if they do, say so with"
                    + " \"covers_answer\": true)" : ""));
        }
        return new Request(index, id, arrivalNs, inputLength, outputLength, f.idsCopy(), blockSize, parentId,
                coversAnswer);
    }

    @Override
    public final Request next() {
        if (closed) {
            throw new IllegalStateException("trace reader for " + file + " is closed");
        }
        if (returned >= limit) {
            return null;
        }
        try {
            while (readLine()) {
                if (isBlank()) {
                    continue;
                }
                checkUtf8();
                parseLine();
                Request r = toRequest(values, returned);
                returned++;
                return r;
            }
            return null;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + file + " after line " + lineNumber + ": "
                    + e.getMessage(), e);
        }
    }

    @Override
    public final void close() throws IOException {
        if (!closed) {
            closed = true;
            in.close();
        }
    }

    private void parseLine() throws IOException {
        values.clear();
        otherKeys.clear();
        try (JsonParser p = JSON.createParser(line, 0, lineLength)) {
            JsonToken t = p.nextToken();
            if (t != JsonToken.START_OBJECT) {
                throw fail("expected a JSON object, got " + describe(p, t));
            }
            while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                int i = indexOf(name);
                t = p.nextToken();
                if (i < 0) {
                    if (otherKeys.size() < 32) {
                        otherKeys.add(name);
                    }
                    p.skipChildren();
                    continue;
                }
                if (values.present[i]) {
                    throw fail("duplicate field '" + name + "'");
                }
                values.present[i] = true;
                readField(p, t, i, fields.get(i));
            }
            t = p.nextToken();
            if (t != null) {
                throw fail("unexpected content after the JSON object: " + describe(p, t));
            }
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? "" : " (column " + e.getLocation().getColumnNr() + ")";
            throw fail("malformed JSON: " + e.getOriginalMessage() + where
                    + TraceHints.notJson(new String(line, 0, Math.min(lineLength, 200), StandardCharsets.UTF_8)));
        }
        for (int i = 0; i < fields.size(); i++) {
            Field field = fields.get(i);
            if (field.required() && !values.present[i]) {
                throw fail("missing field '" + field.name() + "'" + TraceHints.missingField(formatName(),
                        field.name(), otherKeys));
            }
        }
    }

    private void readField(JsonParser p, JsonToken t, int i, Field field) throws IOException {
        String name = field.name();
        switch (field.type()) {
            case INT -> {
                if (t != JsonToken.VALUE_NUMBER_INT) {
                    throw fail("field '" + name + "' must be an integer, got " + describe(p, t));
                }
                if (p.getNumberType() != JsonParser.NumberType.INT) {
                    throw fail("field '" + name + "' value " + p.getText() + " is out of range (must fit a 32-bit int, max "
                            + Integer.MAX_VALUE + ")");
                }
                values.longs[i] = p.getIntValue();
            }
            case NUMBER -> {
                if (t == JsonToken.VALUE_NUMBER_INT) {
                    if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                        throw fail("field '" + name + "' value " + p.getText() + " is out of range (must fit a 64-bit long)");
                    }
                    values.integral[i] = true;
                    values.longs[i] = p.getLongValue();
                    values.doubles[i] = values.longs[i];
                } else if (t == JsonToken.VALUE_NUMBER_FLOAT) {
                    double d = p.getDoubleValue();
                    if (!Double.isFinite(d)) {
                        throw fail("field '" + name + "' value " + p.getText() + " is out of range (not a finite double)");
                    }
                    values.integral[i] = false;
                    values.doubles[i] = d;
                } else {
                    throw fail("field '" + name + "' must be a number, got " + describe(p, t));
                }
            }
            case STRING -> {
                if (t != JsonToken.VALUE_STRING) {
                    throw fail("field '" + name + "' must be a string, got " + describe(p, t));
                }
                values.strings[i] = p.getText();
            }
            case BOOLEAN -> {
                if (t != JsonToken.VALUE_TRUE && t != JsonToken.VALUE_FALSE) {
                    throw fail("field '" + name + "' must be true or false, got " + describe(p, t));
                }
                values.longs[i] = t == JsonToken.VALUE_TRUE ? 1 : 0;
            }
            case INT_ARRAY -> {
                if (t != JsonToken.START_ARRAY) {
                    throw fail("field '" + name + "' must be an array of integers, got " + describe(p, t));
                }
                int k = 0;
                while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                    if (t != JsonToken.VALUE_NUMBER_INT) {
                        throw fail(name + "[" + k + "] must be an integer, got " + describe(p, t));
                    }
                    if (p.getNumberType() != JsonParser.NumberType.INT) {
                        throw fail(name + "[" + k + "] value " + p.getText()
                                + " is out of range (must fit a 32-bit int, max " + Integer.MAX_VALUE + ")");
                    }
                    int v = p.getIntValue();
                    if (v < 0) {
                        throw fail(name + "[" + k + "] must be >= 0, got " + v);
                    }
                    values.addId(v);
                    k++;
                }
            }
        }
    }

    /** The format's command-line name, for hints ({@code mooncake}, {@code bailian}, {@code hicache}). */
    protected abstract String formatName();

    private static String describe(JsonParser p, JsonToken t) throws IOException {
        if (t == null) {
            return "end of line";
        }
        return switch (t) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "string \"" + p.getText() + "\"";
            case VALUE_NULL -> "null";
            case VALUE_TRUE, VALUE_FALSE -> "boolean " + p.getText();
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "number " + p.getText();
            default -> p.getText();
        };
    }

    private int indexOf(String name) {
        for (int i = 0; i < fields.size(); i++) {
            if (fields.get(i).name().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    private boolean isBlank() {
        for (int i = 0; i < lineLength; i++) {
            byte b = line[i];
            if (b != ' ' && b != '\t' && b != '\r') {
                return false;
            }
        }
        return true;
    }

    private void checkUtf8() {
        for (int i = 0; i < lineLength; i++) {
            if (line[i] < 0) {
                if (chars.capacity() < lineLength) {
                    chars = CharBuffer.allocate(lineLength);
                }
                chars.clear();
                ByteBuffer bytes = ByteBuffer.wrap(line, 0, lineLength);
                CoderResult r = utf8.reset().decode(bytes, chars, true);
                if (r.isError()) {
                    throw fail("invalid UTF-8 at byte " + (bytes.position() + 1) + " of the line ("
                            + r.length() + " bad byte(s) starting 0x" + Integer.toHexString(line[bytes.position()] & 0xFF)
                            + ")");
                }
                return;
            }
        }
    }

    /** Reads the next line into {@code line}; false at end of file. Strips one trailing CR. */
    private boolean readLine() throws IOException {
        lineLength = 0;
        boolean gotBytes = false;
        while (true) {
            if (bufferPos == bufferEnd) {
                if (eof) {
                    break;
                }
                int n = in.read(buffer);
                if (n < 0) {
                    eof = true;
                    break;
                }
                bufferPos = 0;
                bufferEnd = n;
                continue;
            }
            int start = bufferPos;
            while (bufferPos < bufferEnd && buffer[bufferPos] != '\n') {
                bufferPos++;
            }
            gotBytes = true;
            append(start, bufferPos - start);
            if (bufferPos < bufferEnd) {
                bufferPos++;
                lineNumber++;
                lineHadNewline = true;
                stripCr();
                return true;
            }
        }
        if (!gotBytes) {
            return false;
        }
        lineNumber++;
        lineHadNewline = false;
        stripCr();
        return true;
    }

    private void stripCr() {
        if (lineLength > 0 && line[lineLength - 1] == '\r') {
            lineLength--;
        }
    }

    private void append(int from, int length) {
        if (lineLength + length > line.length) {
            line = Arrays.copyOf(line, Math.max(line.length * 2, lineLength + length));
        }
        System.arraycopy(buffer, from, line, lineLength, length);
        lineLength += length;
    }
}
