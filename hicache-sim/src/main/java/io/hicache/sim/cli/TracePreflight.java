package io.hicache.sim.cli;

import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ComputeModel;
import io.hicache.sim.trace.ReadOptions;
import io.hicache.sim.trace.TraceSource;
import io.hicache.sim.trace.TraceStats;
import io.hicache.sim.trace.TraceTimeUnit;
import picocli.CommandLine;

import java.util.List;
import java.util.Locale;

/**
 * The checks a run makes on its trace before any replay: the read options the flags ask for, with the largest prompt
 * the smallest device of the run can hold ({@link #readOptions}); then one whole pass over the trace ({@link #check}),
 * which fails the run on a bad, out-of-order or oversized record with its line (exit 1) before anything is replayed,
 * prints what was sorted, skipped or synthesized, and warns when the arrivals look like another time unit. Used on
 * the command line's thread.
 */
final class TracePreflight {
    /** Arrivals denser than this many times what the fleet can prefill look like a coarser unit read too fine. */
    static final double DENSE_FACTOR = 10;
    /** A median gap between arrivals longer than this looks like a finer unit read too coarse (ns: 10 minutes). */
    static final long SPARSE_MEDIAN_GAP_NS = 600_000_000_000L;
    /** A span longer than this looks like a finer unit read too coarse (ns: 30 days). */
    static final long SPARSE_SPAN_NS = 30L * 86_400 * 1_000_000_000L;
    /** Fewer records than this say too little about a trace's density to warn. */
    static final int MIN_RECORDS_FOR_UNIT_CHECK = 4;

    private TracePreflight() {
    }

    /**
     * The read options of {@code flags} for {@code trace}, prompts limited to the smallest device capacity of the run
     * ({@code devices}, simulated tokens; {@link SimConfig#HOST_UNLIMITED} is no limit) in the trace's own tokens.
     */
    static ReadOptions readOptions(CommandLine cl, TraceReadOptions flags, TraceSource trace, List<Long> devices,
                                   int blockTokens, int formatBlock) {
        ReadOptions read = flags.options(cl, trace.format());
        long smallest = devices.stream().mapToLong(Long::longValue).min().orElse(SimConfig.HOST_UNLIMITED);
        if (smallest == SimConfig.HOST_UNLIMITED) {
            return read;
        }
        double tokens = (double) smallest * formatBlock / blockTokens;
        return tokens >= Long.MAX_VALUE ? read : read.withMaxPrompt(Math.max(1, (long) tokens),
                "the device's KV capacity of one instance" + (blockTokens != formatBlock ? " (" + smallest
                        + " simulated tokens at --block-tokens " + blockTokens + ")" : "") + " (--device-capacity-tokens)");
    }

    /**
     * Reads the whole trace once (failing on its first bad record, with the line), then prints to {@code env}'s
     * output what it sorted, skipped or wants said, and to its error stream a warning when the arrivals look like
     * another unit. Returns what the pass found.
     */
    static TraceStats check(Main.Env env, TraceSource trace, List<SimConfig> configs, List<ServingConfig> servings) {
        TraceStats s = trace.scan();
        String name = trace.name();
        if (s.sortedOutOfOrder() > 0) {
            env.out().println("trace " + name + ": " + s.sortedOutOfOrder() + " of " + s.records()
                    + " records came earlier than a record before them; replayed in timestamp order (--sort)");
        }
        if (s.skippedOversized() > 0) {
            env.out().println("trace " + name + ": skipped " + s.skippedOversized() + " prompts larger than "
                    + trace.read().maxPromptWhat() + " (--skip-oversized); " + s.records() + " records replayed");
        }
        for (String note : s.notes()) {
            env.out().println("trace " + name + ": " + note);
        }
        String warning = unitWarning(s, configs.getFirst(), servings.getFirst(),
                trace.format() == io.hicache.sim.trace.TraceFormat.HICACHE);
        if (warning != null) {
            env.err().println("hicache-sim: warning: trace " + name + ": " + warning);
        }
        return s;
    }

    /**
     * A warning when the trace's arrivals look like another unit, or null. Too dense: the prompts arrive at more than
     * {@link #DENSE_FACTOR} times what the fleet can prefill (every token computed, full steps), as seconds read as
     * milliseconds do (1000x); too sparse: the median gap is over 10 minutes or the span over 30 days, as milliseconds
     * read as seconds do. Timing means nothing in a cache-only run: no warning there.
     *
     * @param unitByName the format names its unit ({@code timestamp_ms}): the fix is in the file, not a flag
     */
    static String unitWarning(TraceStats s, SimConfig config, ServingConfig serving, boolean unitByName) {
        if (config.cacheOnly() || s.records() < MIN_RECORDS_FOR_UNIT_CHECK) {
            return null;
        }
        TraceTimeUnit unit = s.timeUnit();
        double spanS = s.spanNs() / config.timeScale() / 1e9;
        double medianS = s.medianGapNs() / config.timeScale() / 1e9;
        if (unit.coarser() != null && spanS > 0) {
            double offered = s.inputTokens() / spanS;
            double capacity = prefillTokensPerSecond(config, serving);
            if (offered > DENSE_FACTOR * capacity) {
                return String.format(Locale.ROOT, "timestamps read as %s put %,d prompts (%,d tokens) in %s: %,.0f "
                                + "prompt tokens/s, %.0fx what %d instance(s) can prefill (%,.0f tokens/s); %s",
                        unit, s.records(), s.inputTokens(), duration(spanS), offered, offered / capacity,
                        serving.instances(), capacity, fix(unit.coarser(), unitByName));
            }
        }
        if (unit.finer() != null && (medianS * 1e9 > SPARSE_MEDIAN_GAP_NS || spanS * 1e9 > SPARSE_SPAN_NS)) {
            return String.format(Locale.ROOT, "timestamps read as %s space %,d prompts over %s (median gap %s); %s",
                    unit, s.records(), duration(spanS), duration(medianS), fix(unit.finer(), unitByName));
        }
        return null;
    }

    private static String fix(TraceTimeUnit likely, boolean unitByName) {
        return unitByName
                ? "if the log's times were in " + likely + ", convert it again with 'convert --time-unit " + likely + "'"
                : "if the timestamps are in " + likely + ", pass --time-unit " + likely;
    }

    /** Prompt tokens per second the fleet prefills at most: full steps of new tokens, from an empty context. */
    static double prefillTokensPerSecond(SimConfig config, ServingConfig serving) {
        ComputeModel m = config.computeModel();
        long budget = serving.maxBatchTokens();
        long stepNs = (long) config.model().layers()
                * m.stepLayerNs(budget, budget * (budget + 1) / 2.0, 0, 0, serving.tp(), config.cp());
        return stepNs <= 0 ? Double.MAX_VALUE : budget * 1e9 / stepNs * serving.instances();
    }

    private static String duration(double s) {
        if (s < 1) {
            return String.format(Locale.ROOT, "%.3g ms", s * 1e3);
        }
        if (s < 3 * 3600) {
            return String.format(Locale.ROOT, "%.3g s", s);
        }
        return String.format(Locale.ROOT, "%.3g days", s / 86_400);
    }
}
