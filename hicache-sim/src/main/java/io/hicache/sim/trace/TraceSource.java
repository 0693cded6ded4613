package io.hicache.sim.trace;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * A trace to replay: format, file, record limit and how to read it. Each {@link #open()} starts a fresh pass, so one
 * source serves every configuration of a {@code compare} or {@code sweep}; {@link #scan()} reads a whole pass first,
 * so a bad record anywhere fails the run before any replay. Immutable and thread-safe.
 *
 * @param format the record format
 * @param path   the file
 * @param name   how the trace is named in reports (the spec as given, or the bundled trace's path)
 * @param limit  at most this many records per pass (the file's first ones); {@code Long.MAX_VALUE} for all
 * @param read   time unit, order and size rules ({@link ReadOptions})
 */
public record TraceSource(TraceFormat format, Path path, String name, long limit, ReadOptions read) {

    /** The bundled trace, relative to the repository root. */
    public static final String BUNDLED_TRACE = "traces/conversation_trace.jsonl";

    /** Validates the limit. */
    public TraceSource {
        if (limit < 1) {
            throw new IllegalArgumentException("trace limit must be >= 1 (Long.MAX_VALUE for all), got " + limit);
        }
        java.util.Objects.requireNonNull(read, "read");
    }

    /** A trace read by {@link ReadOptions#DEFAULT}. */
    public TraceSource(TraceFormat format, Path path, String name, long limit) {
        this(format, path, name, limit, ReadOptions.DEFAULT);
    }

    /** This trace read by {@code options}. */
    public TraceSource withRead(ReadOptions options) {
        return new TraceSource(format, path, name, limit, options);
    }

    /** The unit the timestamps are read in. */
    public TraceTimeUnit timeUnit() {
        return read.timeUnit() == null ? format.defaultTimeUnit() : read.timeUnit();
    }

    /**
     * Tokens per hash id block: the format's, or for a format whose records say ({@link TraceFormat#HICACHE}) the
     * first record's (16 when the file has none).
     *
     * @throws TraceFormatException the first record is bad
     */
    public int blockSize() {
        if (format.blockSize() > 0) {
            return format.blockSize();
        }
        int b = HicacheTraceReader.blockTokensOf(path);
        return b < 0 ? 16 : b;
    }

    /**
     * Reads one whole pass and says what it found, so that a run fails on a bad record (with its line) before any
     * replay, and can warn about what the figures will not show.
     *
     * @throws TraceFormatException a record is bad or out of order (without {@code --sort}) or too large
     */
    public TraceStats scan() {
        try (ReplayReader r = (ReplayReader) open()) {
            while (r.next() != null) {
                // reading is the check
            }
            TraceStats s = r.stats();
            return s.blockSize() == 0 ? new TraceStats(s.records(), blockSize(), s.timeUnit(), s.sortedOutOfOrder(),
                    s.skippedOversized(), s.firstArrivalNs(), s.spanNs(), s.medianGapNs(), s.inputTokens(),
                    s.largestPrompt(), s.notes()) : s;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * Parses {@code format:path} or {@code path} (default format {@link TraceFormat#DEFAULT}). A
     * relative path is looked up in {@code workDir} first, then in {@code repoRoot} (so the bundled
     * {@code traces/...} works from any directory when the launcher passes the root).
     *
     * @throws IllegalArgumentException unknown format prefix (the message lists the valid ones)
     */
    public static TraceSource parse(String spec, Path workDir, Path repoRoot, long limit) {
        TraceFormat format = TraceFormat.DEFAULT;
        String pathText = spec;
        int colon = spec.indexOf(':');
        // A one-letter prefix is a Windows drive, not a format.
        if (colon > 1) {
            String prefix = spec.substring(0, colon);
            TraceFormat f = TraceFormat.find(prefix);
            if (f == null && prefix.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '-' || c == '_')) {
                throw new IllegalArgumentException("unknown trace format '" + prefix + "' in '" + spec
                        + "'; valid formats: " + TraceFormat.names() + " (write format:path)");
            }
            if (f != null) {
                format = f;
                pathText = spec.substring(colon + 1);
            }
        }
        Path p = Paths.get(pathText);
        if (!p.isAbsolute()) {
            Path inWork = workDir.resolve(p);
            p = Files.exists(inWork) || repoRoot == null ? inWork : repoRoot.resolve(p);
        }
        return new TraceSource(format, p.normalize(), spec, limit);
    }

    /**
     * Opens a fresh pass over the trace: times from the first arrival, in timestamp order (sorted, or refused at the
     * first record out of order), prompts within the size limit ({@link ReplayReader}).
     */
    public TraceReader open() {
        return new ReplayReader(format.open(path, limit, read.timeUnit()), path, read, timeUnit());
    }

    /**
     * Number of records one pass will return at most: the limit or the file's line count, whichever
     * is smaller (blank lines counted; used for progress bars only). Gzip files report the limit.
     */
    public long estimateRecords() {
        if (limit != Long.MAX_VALUE || path.getFileName().toString().endsWith(".gz")) {
            return limit == Long.MAX_VALUE ? -1 : limit;
        }
        long lines = 0;
        byte[] buf = new byte[1 << 16];
        int last = '\n';
        try (InputStream in = Files.newInputStream(path)) {
            int n;
            while ((n = in.read(buf)) > 0) {
                for (int i = 0; i < n; i++) {
                    if (buf[i] == '\n') {
                        lines++;
                    }
                }
                last = buf[n - 1];
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + path + ": " + e.getMessage(), e);
        }
        return last == '\n' ? lines : lines + 1;
    }
}
