package io.hicache.sim.trace;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Registry of trace formats: command-line name → block size and reader factory. A trace is named on
 * the command line as {@code format:path} or just {@code path} ({@link #DEFAULT}). Immutable.
 */
public enum TraceFormat {
    /** Mooncake FAST'25 JSON lines (512-token blocks, ms timestamps). */
    MOONCAKE("mooncake", MooncakeTraceReader.BLOCK_SIZE) {
        @Override
        public TraceReader open(Path file, long limit) {
            return new MooncakeTraceReader(file, limit);
        }
    },
    /** Alibaba Qwen-Bailian JSON lines (16-token blocks, second timestamps). */
    BAILIAN("bailian", BailianTraceReader.BLOCK_SIZE) {
        @Override
        public TraceReader open(Path file, long limit) {
            return new BailianTraceReader(file, limit);
        }
    };

    /** The format assumed when a trace is given without a {@code format:} prefix. */
    public static final TraceFormat DEFAULT = MOONCAKE;

    private final String cliName;
    private final int blockSize;

    TraceFormat(String cliName, int blockSize) {
        this.cliName = cliName;
        this.blockSize = blockSize;
    }

    /** The name used on the command line. */
    public String cliName() {
        return cliName;
    }

    /** Tokens per hash id block. */
    public int blockSize() {
        return blockSize;
    }

    /**
     * Opens a reader over {@code file}.
     *
     * @param limit at most this many records; {@code Long.MAX_VALUE} for all
     */
    public abstract TraceReader open(Path file, long limit);

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
