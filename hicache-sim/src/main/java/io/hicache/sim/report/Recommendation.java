package io.hicache.sim.report;

import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * The host size a sweep recommends: the <b>smallest swept host capacity whose block hit ratio is within the
 * tolerance of the best swept</b> ({@code hit >= best x (1 - tolerance)}, a relative fraction, default
 * {@link #DEFAULT_TOLERANCE}), with what it buys against no host tier. When no host tier at all (a swept 0, or
 * the run with backup mode none) is within the tolerance, the answer is "no host tier needed"; when only the
 * unlimited run is, the answer says so and where to look ({@code hostTokens} null). Never "unlimited" while a
 * finite swept size is within the tolerance. Immutable and thread-safe.
 *
 * @param hostTokens        the recommended host capacity in simulated tokens per instance: 0 when no host tier is
 *                          needed, null when only the unlimited run reaches the tolerance
 * @param hostBytes         {@code hostTokens} as host memory per instance ({@link KvFootprint#bytes}); null with it
 * @param blockHitRatio     the block hit ratio of the recommended run (the unlimited one when {@code hostTokens} is
 *                          null)
 * @param bestBlockHitRatio the best block hit ratio of the runs compared
 * @param tolerance         the relative tolerance used
 * @param reason            the recommendation in words (what the command line prints after "Recommendation: ")
 * @param kind              which of the three answers it is
 */
@JsonPropertyOrder({"host_tokens", "host_bytes", "block_hit_ratio", "best_block_hit_ratio", "tolerance", "reason"})
@JsonInclude(JsonInclude.Include.ALWAYS)
public record Recommendation(@JsonProperty("host_tokens") Long hostTokens, @JsonProperty("host_bytes") Long hostBytes,
                             @JsonProperty("block_hit_ratio") double blockHitRatio,
                             @JsonProperty("best_block_hit_ratio") double bestBlockHitRatio,
                             @JsonProperty("tolerance") double tolerance, @JsonProperty("reason") String reason,
                             @JsonIgnore Kind kind) {

    /** Default relative tolerance: within 1 % of the best block hit ratio. */
    public static final double DEFAULT_TOLERANCE = 0.01;

    /** The three answers. */
    public enum Kind {
        /** No host tier is within the tolerance of the best. */
        NO_HOST_TIER,
        /** A finite swept size is. */
        FINITE,
        /** Only the unlimited run is. */
        UNLIMITED_ONLY
    }

    /**
     * One swept host size and its run.
     *
     * @param hostTokens host capacity in simulated tokens ({@link Long#MAX_VALUE} unlimited; 0 for no host tier,
     *                   which a run with backup mode none also is)
     * @param result     the run
     */
    public record Point(long hostTokens, SimResult result) {
    }

    /** The points of {@code results} that sweep the host size: every run, backup mode none counted as host 0. */
    public static List<Point> pointsOf(List<SimResult> results) {
        List<Point> out = new ArrayList<>();
        for (SimResult r : results) {
            boolean none = r.config().backupMode() == io.hicache.sim.BackupMode.NONE || !r.config().hasHostTier();
            out.add(new Point(none ? 0 : r.config().hostCapacityTokens(), r));
        }
        return out;
    }

    /**
     * The recommendation over {@code points} (at least one).
     *
     * @param points    the swept sizes and their runs (any order; at most one run per size is used: the first)
     * @param tolerance relative tolerance in [0, 1)
     * @param kv        to turn tokens into bytes
     * @param instances instances of the runs (for the fleet's total)
     */
    public static Recommendation of(List<Point> points, double tolerance, KvFootprint kv, int instances) {
        if (points.isEmpty()) {
            throw new IllegalArgumentException("a recommendation needs at least one run");
        }
        List<Point> sorted = new ArrayList<>(points);
        sorted.sort(Comparator.comparingLong(Point::hostTokens));
        double best = 0;
        for (Point p : sorted) {
            best = Math.max(best, p.result().blockHitRatio());
        }
        double floor = best * (1 - tolerance);
        Point chosen = null;
        for (Point p : sorted) {
            if (p.hostTokens() != Long.MAX_VALUE && p.result().blockHitRatio() >= floor) {
                chosen = p;
                break;
            }
        }
        Point base = sorted.getFirst().hostTokens() == 0 ? sorted.getFirst() : null;
        String within = String.format(Locale.ROOT, "within %s of the best swept (%.4f)", percent(tolerance), best);
        if (chosen != null && chosen.hostTokens() == 0) {
            return new Recommendation(0L, 0L, chosen.result().blockHitRatio(), best, tolerance,
                    noHostReason(chosen, sorted, tolerance, best), Kind.NO_HOST_TIER);
        }
        if (chosen != null) {
            long t = chosen.hostTokens();
            String reason = String.format(Locale.ROOT, "a host tier of %s tokens = %s: the smallest swept size whose "
                            + "block hit ratio (%.4f) is %s%s", Units.tokens(t), kv.memoryDetail(t, instances),
                    chosen.result().blockHitRatio(), within, buys(chosen.result(), base));
            return new Recommendation(t, kv.bytes(t), chosen.result().blockHitRatio(), best, tolerance,
                    reason + overloaded(chosen.result()), Kind.FINITE);
        }
        Point unlimited = sorted.getLast();
        Point largestFinite = null;
        for (Point p : sorted) {
            if (p.hostTokens() != Long.MAX_VALUE) {
                largestFinite = p;
            }
        }
        StringBuilder reason = new StringBuilder(String.format(Locale.ROOT, "only the unlimited host tier is within "
                + "%s of the best block hit ratio (%.4f)", percent(tolerance), best));
        if (largestFinite != null && largestFinite.hostTokens() > 0) {
            reason.append(String.format(Locale.ROOT, "; the largest finite swept size, %s tokens (%s), gives %.4f",
                    Units.tokens(largestFinite.hostTokens()), kv.memory(largestFinite.hostTokens()) + " per instance",
                    largestFinite.result().blockHitRatio()));
        }
        long peak = unlimited.result().occupancy().hostPeakTokens();
        if (peak > 0) {
            reason.append(String.format(Locale.ROOT, ". The unlimited pool held at most %s tokens (%s per instance): "
                            + "no larger pool changes anything, so the knee lies between %s and %s tokens; sweep there",
                    Units.tokens(peak), kv.memory(peak),
                    largestFinite == null ? "0" : Units.tokensShort(largestFinite.hostTokens()),
                    Units.tokensShort(peak)));
        }
        reason.append(buys(unlimited.result(), base));
        return new Recommendation(null, null, unlimited.result().blockHitRatio(), best, tolerance,
                reason + overloaded(unlimited.result()), Kind.UNLIMITED_ONLY);
    }

    private static String noHostReason(Point none, List<Point> sorted, double tolerance, double best) {
        SimResult r = none.result();
        long peak = r.occupancy().devicePeakTokens();
        long cap = r.config().deviceCapacityTokens();
        long largest = sorted.getLast().hostTokens();
        String swept = largest == 0 ? "" : String.format(Locale.ROOT, "; no swept host size (up to %s) raises the "
                + "block hit ratio more than %s above no host tier's %.4f (best %.4f)",
                largest == Long.MAX_VALUE ? "unlimited" : Units.tokensShort(largest) + " tokens", percent(tolerance),
                r.blockHitRatio(), best);
        if (peak > 0 && peak < cap) {
            return String.format(Locale.ROOT, "no host tier needed: the device holds the working set (%s of %s tokens "
                    + "at peak)%s", Units.tokens(peak), Units.tokens(cap), swept);
        }
        if (peak >= cap) {
            return String.format(Locale.ROOT, "no host tier needed: the device fills (%s tokens) but what it evicts "
                    + "is not asked for again%s", Units.tokens(cap), swept);
        }
        return "no host tier needed" + swept;
    }

    private static String buys(SimResult chosen, Point base) {
        if (base == null) {
            return "; no run without a host tier to compare with (sweep 0 as well)";
        }
        SimResult b = base.result();
        ServingStats s = chosen.serving();
        ServingStats n = b.serving();
        if (s == null || n == null) {
            return String.format(Locale.ROOT, "; against no host tier: block hit %.4f vs %.4f, token hit %.4f vs %.4f",
                    chosen.blockHitRatio(), b.blockHitRatio(), chosen.tokenHitRatio(), b.tokenHitRatio());
        }
        return String.format(Locale.ROOT, "; against no host tier (block hit %.4f) it takes TTFT p50 from %s to %s, "
                        + "TTFT p99 from %s to %s (%.2fx), output throughput from %,.0f to %,.0f tok/s (%.2fx) and "
                        + "goodput from %.1f %% to %.1f %%",
                b.blockHitRatio(), Units.ms(n.ttftMs().p50()), Units.ms(s.ttftMs().p50()), Units.ms(n.ttftMs().p99()),
                Units.ms(s.ttftMs().p99()), ratio(s.ttftMs().p99(), n.ttftMs().p99()), n.throughputOutputTokensPerS(),
                s.throughputOutputTokensPerS(), ratio(s.throughputOutputTokensPerS(), n.throughputOutputTokensPerS()),
                n.goodput() * 100, s.goodput() * 100);
    }

    private static String overloaded(SimResult r) {
        return r.serving() != null && r.serving().overload().overloaded()
                ? " (that run is overloaded: see the warning; TTFT there measures queueing)" : "";
    }

    /**
     * Where a configured host size sits against this recommendation's knee, as a sentence for a headline.
     *
     * @param configuredTokens the configuration's host capacity
     * @param configured       its run
     * @param none             the run without a host tier (may be null)
     * @param unlimited        the run with an unlimited host tier (may be null)
     */
    public String position(long configuredTokens, SimResult configured, SimResult none, SimResult unlimited,
                           KvFootprint kv, int instances) {
        String size = String.format(Locale.ROOT, "%s tokens (%s)", Units.tokens(configuredTokens),
                kv.memoryDetail(configuredTokens, instances));
        return switch (kind) {
            case NO_HOST_TIER -> String.format(Locale.ROOT, "not needed here: without one the block hit ratio is "
                    + "already within %s of the best (%.4f); the configured %s adds %.4f", percent(tolerance),
                    bestBlockHitRatio, size, configured.blockHitRatio() - (none == null ? 0 : none.blockHitRatio()));
            case FINITE -> hostTokens <= configuredTokens
                    ? String.format(Locale.ROOT, "the configured host tier, %s, is at or above the knee: its block hit "
                    + "ratio %.4f is within %s of the best (%.4f)%s", size, configured.blockHitRatio(),
                    percent(tolerance), bestBlockHitRatio, hostTokens < configuredTokens ? "; "
                    + Units.tokens(hostTokens) + " tokens (" + kv.memory(hostTokens) + " per instance) would do"
                    : "; a smaller one may do as well: sweep below it")
                    : below(size, configured, none, configuredTokens, unlimited, kv);
            case UNLIMITED_ONLY -> below(size, configured, none, configuredTokens, unlimited, kv);
        };
    }

    /**
     * {@link #position} in a few words, for a headline: e.g. "The host tier, 2.45M tokens = 803 GB per instance,
     * is below the knee: 70 % of an unlimited one's gain".
     */
    public String positionHeadline(long configuredTokens, SimResult configured, SimResult none, KvFootprint kv) {
        String size = Units.tokensShort(configuredTokens) + " tokens = " + kv.memory(configuredTokens) + " per instance";
        double gain = bestBlockHitRatio - (none == null ? 0 : none.blockHitRatio());
        double got = configured.blockHitRatio() - (none == null ? 0 : none.blockHitRatio());
        return switch (kind) {
            case NO_HOST_TIER -> "No host tier needed";
            case FINITE -> hostTokens <= configuredTokens ? "The host tier, " + size + ", is at or above the knee"
                    : String.format(Locale.ROOT, "The host tier, %s, is below the knee: %.0f %% of the best gain", size,
                    gain <= 0 ? 100 : 100 * got / gain);
            case UNLIMITED_ONLY -> String.format(Locale.ROOT, "The host tier, %s, is below the knee: %.0f %% of an "
                    + "unlimited one's gain", size, gain <= 0 ? 100 : 100 * got / gain);
        };
    }

    private String below(String size, SimResult configured, SimResult none, long configuredTokens,
                         SimResult unlimited, KvFootprint kv) {
        double gain = bestBlockHitRatio - (none == null ? 0 : none.blockHitRatio());
        double got = configured.blockHitRatio() - (none == null ? 0 : none.blockHitRatio());
        StringBuilder b = new StringBuilder(String.format(Locale.ROOT, "the configured host tier, %s, is below the "
                        + "knee: block hit %.4f against %.4f with %s%s (%.0f %% of the gain)", size,
                configured.blockHitRatio(), bestBlockHitRatio, kind == Kind.FINITE ? "the best swept size"
                        : "an unlimited host tier", none == null ? ""
                        : String.format(Locale.ROOT, " and %.4f without one", none.blockHitRatio()),
                gain <= 0 ? 100 : 100 * got / gain));
        if (kind == Kind.FINITE) {
            b.append(String.format(Locale.ROOT, "; %s tokens (%s per instance) is the smallest size within %s of the "
                    + "best", Units.tokens(hostTokens), kv.memory(hostTokens), percent(tolerance)));
        }
        long peak = unlimited == null ? 0 : unlimited.occupancy().hostPeakTokens();
        if (kind == Kind.UNLIMITED_ONLY && peak > configuredTokens) {
            b.append(String.format(Locale.ROOT, "; an unlimited pool held at most %s tokens (%s per instance), so the "
                    + "knee lies between %s and %s tokens: sweep there, e.g. sweep --host-capacity-tokens %s",
                    Units.tokens(peak), kv.memory(peak), Units.tokensShort(configuredTokens), Units.tokensShort(peak),
                    sweepBetween(configuredTokens, peak)));
        }
        return b.toString();
    }

    /** {@code 0,a,...,b,inf}: five sizes spaced evenly on a log scale from {@code from} to {@code to}. */
    static String sweepBetween(long from, long to) {
        StringBuilder s = new StringBuilder("0");
        double r = Math.pow((double) to / from, 1 / 4.0);
        for (int i = 0; i <= 4; i++) {
            long v = i == 4 ? to : Math.round(from * Math.pow(r, i));
            s.append(',').append(Units.tokensShort(roundTo3(v)));
        }
        return s.append(",inf").toString();
    }

    /** {@code v} rounded to three significant digits, so that its short form reads back as the same number. */
    private static long roundTo3(long v) {
        if (v < 1000) {
            return v;
        }
        long p = (long) Math.pow(10, Math.floor(Math.log10(v)) - 2);
        return Math.round((double) v / p) * p;
    }

    private static String percent(double f) {
        double p = f * 100;
        return (p == Math.rint(p) ? String.format(Locale.ROOT, "%.0f", p) : String.format(Locale.ROOT, "%.2f", p))
                + " %";
    }

    private static double ratio(double a, double b) {
        return b == 0 ? 0 : a / b;
    }
}
