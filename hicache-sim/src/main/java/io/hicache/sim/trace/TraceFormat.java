package io.hicache.sim.trace;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Registry of trace formats: command-line name → block size, timestamp unit and reader factory. A trace is named on
 * the command line as {@code format:path} or just {@code path} ({@link #DEFAULT}). Immutable.
 */
public enum TraceFormat {
    /** Mooncake FAST'25 JSON lines (512-token blocks, ms timestamps). */
    MOONCAKE("mooncake", MooncakeTraceReader.BLOCK_SIZE, TraceTimeUnit.MS) {
        @Override
        public TraceReader open(Path file, long limit, TraceTimeUnit unit) {
            return new MooncakeTraceReader(file, limit, unit == null ? defaultTimeUnit() : unit);
        }
    },
    /** Alibaba Qwen-Bailian JSON lines (16-token blocks, second timestamps). */
    BAILIAN("bailian", BailianTraceReader.BLOCK_SIZE, TraceTimeUnit.S) {
        @Override
        public TraceReader open(Path file, long limit, TraceTimeUnit unit) {
            return new BailianTraceReader(file, limit, unit == null ? defaultTimeUnit() : unit);
        }
    },
    /**
     * The project's own JSON lines ({@link HicacheTraceReader}: {@code timestamp_ms}, the block size in each record),
     * what {@code hicache-sim convert} writes.
     */
    HICACHE("hicache", 0, TraceTimeUnit.MS) {
        @Override
        public TraceReader open(Path file, long limit, TraceTimeUnit unit) {
            if (unit != null && unit != TraceTimeUnit.MS) {
                throw new IllegalArgumentException("hicache traces give their times in milliseconds by name"
                        + " (timestamp_ms); --time-unit " + unit + " does not apply to them");
            }
            return new HicacheTraceReader(file, limit);
        }
    };

    /** The format assumed when a trace is given without a {@code format:} prefix. */
    public static final TraceFormat DEFAULT = MOONCAKE;

    private final String cliName;
    private final int blockSize;
    private final TraceTimeUnit timeUnit;

    TraceFormat(String cliName, int blockSize, TraceTimeUnit timeUnit) {
        this.cliName = cliName;
        this.blockSize = blockSize;
        this.timeUnit = timeUnit;
    }

    /** The name used on the command line. */
    public String cliName() {
        return cliName;
    }

    /**
     * Tokens per hash id block, or 0 when each file says ({@link #HICACHE}: its records' {@code block_tokens}; ask
     * {@link TraceSource#blockSize()}).
     */
    public int blockSize() {
        return blockSize;
    }

    /** The unit of the timestamps when {@code --time-unit} does not say. */
    public TraceTimeUnit defaultTimeUnit() {
        return timeUnit;
    }

    /**
     * Opens a reader over {@code file}, timestamps in the format's {@link #defaultTimeUnit()}.
     *
     * @param limit at most this many records; {@code Long.MAX_VALUE} for all
     */
    public TraceReader open(Path file, long limit) {
        return open(file, limit, null);
    }

    /**
     * Opens a reader over {@code file}.
     *
     * @param limit at most this many records; {@code Long.MAX_VALUE} for all
     * @param unit  the unit of the timestamps, or null for the format's default
     * @throws IllegalArgumentException the format does not take another unit
     */
    public abstract TraceReader open(Path file, long limit, TraceTimeUnit unit);

    /** The format with this command-line name, or null. Case-insensitive. */
    public static TraceFormat find(String name) {
        for (TraceFormat f : values()) {
            if (f.cliName.equalsIgnoreCase(name)) {
                return f;
            }
        }
        return null;
    }

    /**
     * The format with this command-line name.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid ones
     */
    public static TraceFormat byName(String name) {
        TraceFormat f = find(name);
        if (f == null) {
            throw new IllegalArgumentException("unknown trace format '" + name + "'; valid formats: " + names());
        }
        return f;
    }

    /** The valid names, comma-separated. */
    public static String names() {
        return Arrays.stream(values()).map(TraceFormat::cliName).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return cliName.toLowerCase(Locale.ROOT);
    }
}
