package io.hicache.sim.trace;

import java.util.Locale;

/**
 * The unit of a trace's timestamps ({@code --time-unit s|ms|us}). Each format has a default (Mooncake: ms,
 * Qwen-Bailian: s; the {@code hicache} format names its unit in its field, {@code timestamp_ms}). Immutable.
 */
public enum TraceTimeUnit {
    /** Seconds. */
    S("s", 1_000_000_000L),
    /** Milliseconds. */
    MS("ms", 1_000_000L),
    /** Microseconds. */
    US("us", 1_000L);

    private final String cliName;
    private final long nanos;

    TraceTimeUnit(String cliName, long nanos) {
        this.cliName = cliName;
        this.nanos = nanos;
    }

    /** The name used on the command line and in messages. */
    public String cliName() {
        return cliName;
    }

    /** Nanoseconds in one unit. */
    public long nanos() {
        return nanos;
    }

    /** The next larger unit (ms for us, s for ms), or null for seconds. */
    public TraceTimeUnit coarser() {
        return this == US ? MS : this == MS ? S : null;
    }

    /** The next smaller unit (ms for s, us for ms), or null for microseconds. */
    public TraceTimeUnit finer() {
        return this == S ? MS : this == MS ? US : null;
    }

    /**
     * The unit with this name ({@code s}, {@code ms}, {@code us}; case-insensitive).
     *
     * @throws IllegalArgumentException any other name; the message lists the valid ones
     */
    public static TraceTimeUnit byName(String name) {
        for (TraceTimeUnit u : values()) {
            if (u.cliName.equals(name.trim().toLowerCase(Locale.ROOT))) {
                return u;
            }
        }
        throw new IllegalArgumentException("unknown time unit '" + name + "'; valid units: s, ms, us");
    }

    @Override
    public String toString() {
        return cliName;
    }
}
