package io.hicache.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One generated section of a Markdown report, kept between {@code <!-- NAME begin -->} and
 * {@code <!-- NAME end -->} lines so that a rerun replaces that section only and every hand-written section of
 * the file survives. A file without the markers gets the section appended (with its markers); a missing file is
 * created. Not thread-safe (one writer per file); I/O errors propagate.
 *
 * <p>As a tool: {@code ReportSection --out FILE --section NAME} writes standard input as section {@code NAME}.
 */
public final class ReportSection {
    private ReportSection() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 4 || !args[0].equals("--out") || !args[2].equals("--section")) {
            throw new IllegalArgumentException("usage: ReportSection --out FILE --section NAME (section text on stdin)");
        }
        write(Path.of(args[1]), args[3], new String(System.in.readAllBytes(), StandardCharsets.UTF_8));
    }

    /** Replaces section {@code name} of {@code out} with {@code section} (appended when the file lacks it). */
    public static void write(Path out, String name, String section) throws IOException {
        if (!name.matches("[a-z0-9-]+")) {
            throw new IllegalArgumentException("section name must be lower-case letters, digits and '-': " + name);
        }
        String begin = "<!-- " + name + " begin -->";
        String end = "<!-- " + name + " end -->";
        String text = Files.exists(out) ? Files.readString(out) : "";
        String block = begin + "\n" + section + (section.endsWith("\n") ? "" : "\n") + end + "\n";
        int b = text.indexOf(begin);
        int e = text.indexOf(end);
        if (b >= 0 && e > b) {
            int after = e + end.length() + (text.startsWith("\n", e + end.length()) ? 1 : 0);
            text = text.substring(0, b) + block + text.substring(after);
        } else if (b >= 0 || e >= 0) {
            throw new IOException(out + ": section '" + name + "' has only one of its markers " + begin + " / " + end);
        } else {
            text = text + (text.endsWith("\n") || text.isEmpty() ? "" : "\n") + (text.isEmpty() ? "" : "\n") + block;
        }
        if (out.getParent() != null) {
            Files.createDirectories(out.getParent());
        }
        Files.writeString(out, text);
    }
}
