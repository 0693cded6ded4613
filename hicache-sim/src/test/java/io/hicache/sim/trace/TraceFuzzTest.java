package io.hicache.sim.trace;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Trace fuzzing: a valid trace with one corrupted line (truncation, wrong types, negative lengths, too many
 * {@code hash_ids}, huge numbers, bad UTF-8, a file ending mid-line) must fail with a
 * {@link TraceFormatException} naming {@code file:line} of exactly that line, after returning every record
 * before it; random byte damage may pass or fail but only with that exception. Each read runs under a
 * timeout, so a hang fails the property instead of the build.
 */
class TraceFuzzTest {
    private static final Duration READ_TIMEOUT = Duration.ofSeconds(10);

    enum Corruption { TRUNCATE, WRONG_TYPE, NEGATIVE, TOO_MANY_HASH_IDS, HUGE_NUMBER, BAD_UTF8, EOF_MID_LINE }

    enum Format { MOONCAKE, BAILIAN }

    @Property(tries = 400)
    void everyCorruptionIsReportedAtItsLine(@ForAll Format format, @ForAll Corruption corruption,
                                            @ForAll @IntRange(min = 1, max = 12) int lines,
                                            @ForAll @IntRange(min = 0, max = 11) int badLineSeed,
                                            @ForAll long seed) throws IOException {
        Random rnd = new Random(seed);
        int bad = corruption == Corruption.EOF_MID_LINE ? lines - 1 : badLineSeed % lines;
        List<byte[]> text = new ArrayList<>();
        for (int i = 0; i < lines; i++) {
            String valid = validLine(format, i, rnd);
            text.add(i == bad ? corrupt(format, corruption, i, valid, rnd) : valid.getBytes(StandardCharsets.UTF_8));
        }
        Path file = write(text, corruption != Corruption.EOF_MID_LINE);
        Outcome o = read(format, file);
        assertThat(o.error).as("%s of line %d of %s: %s", corruption, bad + 1, format, show(text.get(bad))).isNotNull();
        assertThat(o.error.getMessage()).startsWith(file + ":" + (bad + 1) + ": ");
        assertThat(o.error.lineNumber()).isEqualTo(bad + 1L);
        assertThat(o.records).isEqualTo(bad);
        if (corruption == Corruption.EOF_MID_LINE) {
            assertThat(o.error.problem()).contains("no newline");
        }
        Files.delete(file);
    }

    @Property(tries = 400)
    void randomByteDamageFailsOnlyWithFileAndLine(@ForAll Format format, @ForAll @IntRange(min = 1, max = 8) int lines,
                                                  @ForAll @IntRange(min = 1, max = 6) int damagedBytes,
                                                  @ForAll long seed) throws IOException {
        Random rnd = new Random(seed);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < lines; i++) {
            sb.append(validLine(format, i, rnd)).append('\n');
        }
        byte[] bytes = sb.toString().getBytes(StandardCharsets.UTF_8);
        for (int k = 0; k < damagedBytes; k++) {
            bytes[rnd.nextInt(bytes.length)] = (byte) rnd.nextInt(256);
        }
        Path file = Files.createTempFile("fuzz", ".jsonl");
        Files.write(file, bytes);
        Outcome o = read(format, file);
        if (o.error != null) {
            assertThat(o.error.getMessage()).matches("\\Q" + file + "\\E:\\d+: .+");
            assertThat(o.error.lineNumber()).isBetween(1L, (long) lines + 1);
        } else {
            assertThat(o.records).isLessThanOrEqualTo(lines + 1);
        }
        Files.delete(file);
    }

    // ------------------------------------------------------------------ lines

    private static String validLine(Format format, int index, Random rnd) {
        int block = format == Format.MOONCAKE ? MooncakeTraceReader.BLOCK_SIZE : BailianTraceReader.BLOCK_SIZE;
        int input = rnd.nextInt(4 * block + 1);
        return line(format, index, input, rnd.nextInt(100), ids((input + block - 1) / block, rnd), "" + index * 10);
    }

    private static String ids(int n, Random rnd) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < n; i++) {
            sb.append(i == 0 ? "" : ", ").append(rnd.nextInt(1000));
        }
        return sb.append(']').toString();
    }

    private static String line(Format format, int index, Object input, Object output, String ids, String ts) {
        if (format == Format.MOONCAKE) {
            return "{\"timestamp\": " + ts + ", \"input_length\": " + input + ", \"output_length\": " + output
                + ", \"hash_ids\": " + ids + "}";
        }
        return "{\"chat_id\": " + index + ", \"parent_chat_id\": -1, \"timestamp\": " + ts + ", \"input_length\": "
            + input + ", \"output_length\": " + output + ", \"type\": \"text\", \"turn\": 1, \"hash_ids\": " + ids + "}";
    }

    private static byte[] corrupt(Format format, Corruption c, int index, String valid, Random rnd) {
        int block = format == Format.MOONCAKE ? MooncakeTraceReader.BLOCK_SIZE : BailianTraceReader.BLOCK_SIZE;
        String[] wrong = {"\"x\"", "true", "null", "{}", "1.5", "[1]", "\"12\""};
        String out = switch (c) {
            case TRUNCATE, EOF_MID_LINE -> valid.substring(0, 1 + rnd.nextInt(valid.length() - 1));
            case WRONG_TYPE -> switch (rnd.nextInt(3)) {
                case 0 -> line(format, index, wrong[rnd.nextInt(wrong.length)], 1, "[]", "0");
                case 1 -> line(format, index, 0, wrong[rnd.nextInt(wrong.length)], "[]", "0");
                default -> line(format, index, 0, 1, wrong[rnd.nextInt(4)], "0");
            };
            case NEGATIVE -> switch (rnd.nextInt(3)) {
                case 0 -> line(format, index, -1 - rnd.nextInt(Integer.MAX_VALUE), 1, "[]", "0");
                case 1 -> line(format, index, 0, -1 - rnd.nextInt(1000), "[]", "0");
                default -> line(format, index, 0, 1, "[]", "-" + (1 + rnd.nextInt(1000)));
            };
            case TOO_MANY_HASH_IDS -> {
                int input = rnd.nextInt(3 * block);
                int needed = (input + block - 1) / block;
                // one more id may legally cover the 1-token answer (Request.coversAnswer); two more never can
                yield line(format, index, input, 1, ids(needed + 2 + rnd.nextInt(5), rnd), "0");
            }
            case HUGE_NUMBER -> {
                // more digits than a long holds (19): a huge value overflows every field, timestamps included
                String huge = "9".repeat(20 + rnd.nextInt(391));
                yield switch (rnd.nextInt(4)) {
                    case 0 -> line(format, index, huge, 1, "[]", "0");
                    case 1 -> line(format, index, 0, huge, "[]", "0");
                    case 2 -> line(format, index, 0, 1, "[" + huge + "]", "0");
                    default -> line(format, index, 0, 1, "[]", huge + (rnd.nextBoolean() ? "" : "e400"));
                };
            }
            case BAD_UTF8 -> null;
        };
        if (c != Corruption.BAD_UTF8) {
            return out.getBytes(StandardCharsets.UTF_8);
        }
        byte[][] badSeqs = {{(byte) 0xFF}, {(byte) 0xC0, (byte) 0x80}, {(byte) 0x80}, {(byte) 0xED, (byte) 0xA0, (byte) 0x80},
            {(byte) 0xF8, (byte) 0x88, (byte) 0x80, (byte) 0x80, (byte) 0x80}, {(byte) 0xE2, (byte) 0x82}};
        byte[] seq = badSeqs[rnd.nextInt(badSeqs.length)];
        byte[] v = valid.getBytes(StandardCharsets.UTF_8);
        int at = rnd.nextInt(v.length + 1);
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.write(v, 0, at);
        b.write(seq, 0, seq.length);
        b.write(v, at, v.length - at);
        return b.toByteArray();
    }

    // ------------------------------------------------------------------ reading

    private record Outcome(int records, TraceFormatException error) {
    }

    private static Outcome read(Format format, Path file) {
        return assertTimeoutPreemptively(READ_TIMEOUT, () -> {
            TraceFormat f = format == Format.MOONCAKE ? TraceFormat.MOONCAKE : TraceFormat.BAILIAN;
            int n = 0;
            try (TraceReader r = f.open(file, Long.MAX_VALUE)) {
                while (r.next() != null) {
                    n++;
                }
                return new Outcome(n, null);
            } catch (TraceFormatException e) {
                return new Outcome(n, e);
            } catch (RuntimeException e) {
                return fail("unexplained " + e + " reading " + file, e);
            }
        }, () -> "reading " + file + " did not finish within " + READ_TIMEOUT);
    }

    private static Path write(List<byte[]> lines, boolean finalNewline) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int i = 0; i < lines.size(); i++) {
            b.write(lines.get(i));
            if (i < lines.size() - 1 || finalNewline) {
                b.write('\n');
            }
        }
        Path file = Files.createTempFile("fuzz", ".jsonl");
        Files.write(file, b.toByteArray());
        return file;
    }

    private static String show(byte[] line) {
        return new String(line, StandardCharsets.ISO_8859_1);
    }
}
