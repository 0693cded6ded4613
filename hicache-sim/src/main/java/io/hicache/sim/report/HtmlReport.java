package io.hicache.sim.report;

import io.hicache.sim.CoreNames;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A self-contained HTML report: inline CSS and SVG only, no scripts, no network references; the
 * markup is well-formed XML (XHTML syntax) so it can be checked mechanically. Sections: a headline card
 * per timed configuration (TTFT and throughput against the run without a host tier on the same fleet, the
 * backup copy time hidden), tables of configurations with the baselines (no backup, unlimited cache) beside
 * them, what clients felt (latency percentiles, throughput, goodput), a TTFT CDF, hit ratio and TTFT vs
 * host capacity (sweep), and per-layer timelines of one forward (compute and copies, one panel per backup
 * mode). Tables wrap their headers so a 1,400 px window shows every column. Stateless and thread-safe.
 */
public final class HtmlReport {

    /**
     * One table row.
     *
     * @param label    what the row is, e.g. {@code layered} or {@code unlimited cache (bound)}
     * @param result   its result
     * @param baseline whether it is a baseline (shown greyed)
     */
    public record Row(String label, SimResult result, boolean baseline) {
    }

    /**
     * A per-layer timeline panel.
     *
     * @param title    e.g. {@code layered}
     * @param segments the bars; lanes appear in order of first use
     */
    public record Timeline(String title, List<TimelineSegment> segments) {
        /** Copies the segments. */
        public Timeline {
            segments = List.copyOf(segments);
        }
    }

    /**
     * Everything a report shows.
     *
     * @param title     page title
     * @param command   the command line that produced it (shown verbatim)
     * @param rows      the table, configurations then baselines
     * @param sweep     points of the hit-ratio vs host-capacity chart (empty: no chart)
     * @param timelines timeline panels (empty: a note says why)
     */
    public record Report(String title, String command, List<Row> rows, List<SimResult> sweep,
                         List<Timeline> timelines) {
        /** Copies the lists. */
        public Report {
            rows = List.copyOf(rows);
            sweep = List.copyOf(sweep);
            timelines = List.copyOf(timelines);
        }
    }

    private static final String[] LANE_COLOURS = {"#3b6fb6", "#e07b39", "#4aa564", "#b3478f", "#8c6d31", "#5b5ea6"};

    private HtmlReport() {
    }

    /**
     * Writes {@code report} to {@code file} (UTF-8).
     *
     * @throws UncheckedIOException the file cannot be written
     */
    public static void write(Path file, Report report) {
        try {
            Files.writeString(file, render(report));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write HTML report " + file + ": " + e.getMessage(), e);
        }
    }

    /** The report as an HTML document. */
    public static String render(Report report) {
        StringBuilder h = new StringBuilder(32_768);
        h.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
                .append("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<title>")
                .append(esc(report.title())).append("</title>\n<style>\n").append(CSS).append("</style>\n</head>\n<body>\n");
        h.append("<header><h1>").append(esc(report.title())).append("</h1>\n<p class=\"cmd\"><code>")
                .append(esc(report.command())).append("</code></p>\n");
        if (!report.rows().isEmpty()) {
            SimResult first = report.rows().getFirst().result();
            h.append("<p class=\"meta\">trace <b>").append(esc(first.trace())).append("</b> · ")
                    .append(first.requests()).append(" requests · ").append(fmtInt(first.inputTokens()))
                    .append(" prompt tokens · ").append(fmtInt(first.blocks())).append(" blocks · model <b>")
                    .append(esc(first.config().model().cliName())).append("</b> · gpu <b>")
                    .append(esc(first.config().gpu().cliName())).append("</b> · page ")
                    .append(first.config().pageSize()).append(" · block tokens ").append(first.config().blockTokens())
                    .append("</p>\n");
        }
        h.append("</header>\n<main>\n");
        headline(h, report.rows());
        table(h, report.rows());
        storageTable(h, report.rows());
        servingTable(h, report.rows());
        ttftCdf(h, report.rows());
        if (!report.sweep().isEmpty()) {
            sweepChart(h, report.sweep());
            sweepTtftChart(h, report.sweep());
        }
        timelines(h, report.timelines());
        h.append("<section><h2>How to read this report</h2>\n<ul>\n")
                .append("<li><b>block hit ratio</b>: leading trace blocks fully found in cache (device or host) / all blocks; ")
                .append("<b>token hit ratio</b>: prompt tokens served from cache / prompt tokens.</li>\n")
                .append("<li><b>exposed backup</b>: device-to-host copy time not hidden behind compute; ")
                .append("<b>commit latency</b>: from the end of the forward (device time) until the host copy is published and can be a hit.</li>\n")
                .append("<li>Baselines (grey): <i>no backup</i> has no host tier writes; <i>unlimited cache</i> ")
                .append("keeps everything and bounds every hit ratio from above.</li>\n")
                .append("<li>Token counts other than prompt tokens are simulated tokens (after block expansion).</li>\n")
                .append("<li><b>TTFT</b>: arrival to first token (queueing included); <b>TPOT</b>: time per output token after ")
                .append("the first; <b>goodput</b>: share of requests meeting both the TTFT and the TPOT objective; ")
                .append("<b>GPU busy</b>: share of the simulated time the instances computed; <b>preempted</b>: requests ")
                .append("whose pages were taken back for others' decode (SGLang's retract).</li>\n")
                .append("</ul></section>\n</main>\n</body>\n</html>\n");
        return h.toString();
    }

    private static void table(StringBuilder h, List<Row> rows) {
        h.append("<section><h2>Configurations: cache</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>backup mode</th><th>write policy</th><th>eviction</th>")
                .append("<th>device cap</th><th>host cap</th><th>block hit ratio</th><th>token hit ratio</th>")
                .append("<th>device hits</th><th>host hits</th><th>of which storage</th><th>prefill computed</th></tr></thead>\n<tbody>\n");
        for (Row row : rows) {
            SimResult r = row.result();
            var c = r.config();
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td>").append(esc(c.backupMode().cliName())).append("</td>")
                    .append("<td>").append(esc(CoreNames.of(c.writePolicy()))).append("</td>")
                    .append("<td>").append(esc(io.hicache.sim.CoreNames.of(c.eviction()))).append("</td>")
                    .append("<td class=\"n\">").append(capacity(c.deviceCapacityTokens(), false)).append("</td>")
                    .append("<td class=\"n\">").append(capacity(c.hostCapacityTokens(), true)).append("</td>")
                    .append("<td class=\"n\">").append(ratioCell(r.blockHitRatio())).append("</td>")
                    .append("<td class=\"n\">").append(ratioCell(r.tokenHitRatio())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(r.deviceHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(r.hostHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(r.storage() == null ? "&#8212;"
                            : fmtInt(r.storage().storageHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(r.prefillTokensComputed())).append("</td>")
                    .append("</tr>\n");
        }
        h.append("</tbody></table></div></section>\n");
        h.append("<section><h2>Configurations: backups</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>backups committed / no room / aborted / fallback</th>")
                .append("<th>nodes not backed up</th><th>D2H</th>")
                .append("<th>exposed backup</th><th>hidden</th><th>commit p50 / p99 / max</th><th>host peak</th>")
                .append("<th>simulated</th><th>wall</th></tr></thead>\n<tbody>\n");
        for (Row row : rows) {
            SimResult r = row.result();
            ServingStats sv = r.serving();
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td class=\"n\">").append(r.backups().committed()).append(" / ").append(r.backups().noRoom())
                    .append(" / ").append(r.backups().aborted()).append(" / ").append(r.backups().fallback()).append("</td>")
                    .append("<td class=\"n\">").append(skippedCell(r.backups())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(r.d2hBytes())).append("</td>")
                    .append("<td class=\"n\">").append(duration(r.exposedBackupNs())).append("</td>")
                    .append("<td class=\"n\">").append(sv == null || sv.backupCopyNs() == 0 ? "–"
                            : percent(sv.backupHiddenFraction())).append("</td>")
                    .append("<td class=\"n\">").append(duration(r.commitLatencyNs().p50())).append(" / ")
                    .append(duration(r.commitLatencyNs().p99())).append(" / ").append(duration(r.commitLatencyNs().max()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(percent(r.hostPoolPeakUtilization())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.1f s", r.simulatedSeconds())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f s", r.wallSeconds())).append("</td>")
                    .append("</tr>\n");
        }
        h.append("</tbody></table></div></section>\n");
    }

    /** Whether {@code b} is the no-host-tier baseline of {@code r}: same fleet, backup mode none or no host. */
    private static boolean baselineOf(SimResult b, SimResult r) {
        ServingStats bs = b.serving();
        ServingStats rs = r.serving();
        boolean noHost = b.config().backupMode() == io.hicache.sim.BackupMode.NONE || !b.config().hasHostTier();
        return b != r && noHost && bs != null && rs != null && bs.instances() == rs.instances()
                && bs.router().equals(rs.router()) && bs.tp() == rs.tp();
    }

    /** The headline: per configuration with a host tier, TTFT and throughput against its no-host baseline. */
    private static void headline(StringBuilder h, List<Row> rows) {
        List<String> cards = new ArrayList<>();
        for (Row row : rows) {
            SimResult r = row.result();
            ServingStats s = r.serving();
            if (s == null || row.baseline() || r.config().backupMode() == io.hicache.sim.BackupMode.NONE
                    || !r.config().hasHostTier()) {
                continue; // a baseline itself
            }
            SimResult base = null;
            for (Row b : rows) {
                if (baselineOf(b.result(), r)) {
                    base = b.result();
                    break;
                }
            }
            StringBuilder c = new StringBuilder();
            c.append("<div class=\"card\"><h3>").append(esc(row.label())).append("</h3>\n");
            if (base != null) {
                ServingStats bs = base.serving();
                c.append(metric("TTFT p50", fmtMs(s.ttftMs().p50()), ratio(s.ttftMs().p50(), bs.ttftMs().p50(), true)))
                        .append(metric("TTFT p99", fmtMs(s.ttftMs().p99()), ratio(s.ttftMs().p99(), bs.ttftMs().p99(), true)))
                        .append(metric("output tokens/s", String.format(Locale.ROOT, "%,.0f", s.throughputOutputTokensPerS()),
                                ratio(s.throughputOutputTokensPerS(), bs.throughputOutputTokensPerS(), false)))
                        .append(metric("goodput", percent(s.goodput()), "no host tier: " + percent(bs.goodput())));
            } else {
                c.append(metric("TTFT p50", fmtMs(s.ttftMs().p50()), ""))
                        .append(metric("TTFT p99", fmtMs(s.ttftMs().p99()), ""))
                        .append(metric("output tokens/s", String.format(Locale.ROOT, "%,.0f", s.throughputOutputTokensPerS()), ""))
                        .append(metric("goodput", percent(s.goodput()), ""));
            }
            c.append(metric("backup copy hidden", s.backupCopyNs() == 0 ? "–" : percent(s.backupHiddenFraction()),
                    duration(Math.round(s.backupCopyNs() * s.backupHiddenFraction())) + " of "
                            + duration(s.backupCopyNs()) + " copy time behind compute"));
            c.append("<p class=\"fleet\">").append(s.instances()).append(s.instances() == 1 ? " instance" : " instances, "
                    + esc(s.router())).append(" · TP ").append(s.tp()).append(" · block hit ").append(
                    String.format(Locale.ROOT, "%.3f", r.blockHitRatio()));
            if (base != null) {
                c.append(" (no host tier ").append(String.format(Locale.ROOT, "%.3f", base.blockHitRatio())).append(')');
            }
            c.append("</p></div>\n");
            cards.add(c.toString());
        }
        if (cards.isEmpty()) {
            return;
        }
        h.append("<section class=\"headline\"><h2>Headline: against no host tier</h2>\n");
        List<SimResult> results = new ArrayList<>();
        for (Row row : rows) {
            results.add(row.result());
        }
        String decision = Decision.of(results);
        if (decision != null) {
            h.append("<p class=\"decision\">").append(esc(decision)).append("</p>\n");
        }
        h.append("<div class=\"cards\">\n");
        for (String c : cards) {
            h.append(c);
        }
        h.append("</div>\n<p class=\"note\">Ratios compare each configuration with the run that has no host tier ")
                .append("(backup mode none) on the same fleet; below 1&#215; is better for TTFT, above 1&#215; for ")
                .append("throughput.</p></section>\n");
    }

    /** Skipped nodes: the total, with the non-zero reasons in a tooltip. */
    private static String skippedCell(SimResult.Backups b) {
        StringBuilder why = new StringBuilder();
        for (var e : b.skipped().entrySet()) {
            if (e.getValue() > 0) {
                why.append(why.isEmpty() ? "" : ", ").append(e.getKey().replace('_', ' ')).append(' ').append(e.getValue());
            }
        }
        return why.isEmpty() ? fmtInt(b.skippedTotal())
                : "<span title=\"" + esc(why.toString()) + "\">" + fmtInt(b.skippedTotal()) + "</span>";
    }

    private static String metric(String name, String value, String sub) {
        return "<div class=\"metric\"><span class=\"mname\">" + esc(name) + "</span><span class=\"mvalue\">"
                + esc(value) + "</span><span class=\"msub\">" + esc(sub) + "</span></div>\n";
    }

    private static String ratio(double v, double base, boolean lowerIsBetter) {
        if (base <= 0) {
            return "";
        }
        double x = v / base;
        String better = (lowerIsBetter ? x < 0.995 : x > 1.005) ? "better" : (lowerIsBetter ? x > 1.005 : x < 0.995)
                ? "worse" : "same";
        return String.format(Locale.ROOT, "%.2f× no host tier (%s)", x, better);
    }

    private static String fmtMs(double ms) {
        if (ms >= 10_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000);
        }
        if (ms >= 1_000) {
            return String.format(Locale.ROOT, "%.2f s", ms / 1000);
        }
        return String.format(Locale.ROOT, "%.0f ms", ms);
    }

    /** What clients felt, one row per timed configuration. */
    private static void servingTable(StringBuilder h, List<Row> rows) {
        boolean any = false;
        for (Row row : rows) {
            any |= row.result().serving() != null;
        }
        if (!any) {
            return;
        }
        h.append("<section><h2>What clients felt</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>fleet</th><th>TTFT p50 / p90 / p99 / max</th>")
                .append("<th>TPOT p50 / p99</th><th>end to end p50 / p99</th><th>queueing p50 / p99</th>")
                .append("</tr></thead>\n<tbody>\n");
        for (Row row : rows) {
            ServingStats s = row.result().serving();
            if (s == null) {
                continue;
            }
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td>").append(s.instances()).append(" × TP ").append(s.tp())
                    .append(s.instances() > 1 ? ", " + esc(s.router()) : "").append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.ttftMs().p50())).append(" / ").append(fmtMs(s.ttftMs().p90()))
                    .append(" / ").append(fmtMs(s.ttftMs().p99())).append(" / ").append(fmtMs(s.ttftMs().max())).append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.tpotMs().p50())).append(" / ").append(fmtMs(s.tpotMs().p99()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.e2eMs().p50())).append(" / ").append(fmtMs(s.e2eMs().p99()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(fmtMs(s.queueMs().p50())).append(" / ").append(fmtMs(s.queueMs().p99()))
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<h3>Throughput and objectives</h3>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>output tok/s</th><th>input tok/s</th><th>req/s</th><th>goodput</th>")
                .append("<th>goodput req/s</th><th>GPU busy</th><th>preempted</th><th>steps / on device</th>")
                .append("</tr></thead>\n<tbody>\n");
        for (Row row : rows) {
            ServingStats s = row.result().serving();
            if (s == null) {
                continue;
            }
            h.append(row.baseline() ? "<tr class=\"baseline\">" : "<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%,.0f", s.throughputOutputTokensPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%,.0f", s.throughputInputTokensPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f", s.throughputRequestsPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(percent(s.goodput())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f", s.goodputRequestsPerS()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(percent(s.gpuBusyFraction())).append("</td>")
                    .append("<td class=\"n\">").append(s.preemptions()).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(s.steps())).append(" / ").append(fmtInt(s.deviceForwards()))
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<p class=\"note\">Objectives: TTFT ")
                .append(fmtMs(firstServing(rows).sloTtftMs())).append(", TPOT ")
                .append(fmtMs(firstServing(rows).sloTpotMs())).append(". Steps on device ran layer by layer through ")
                .append("the controller's hooks because they carried backups; the others only took their time.")
                .append(turnsNote(firstServing(rows))).append("</p></section>\n");
    }

    /** What closed-loop turns changed, in a sentence (empty when the trace names no turn that waited). */
    private static String turnsNote(ServingStats s) {
        if (!s.closedLoop()) {
            return " Replayed open loop (--no-closed-loop): every request arrived at its trace time.";
        }
        return s.followUpsWaited() == 0 ? "" : String.format(Locale.ROOT, " %,d requests (first configuration) arrived "
                + "after their trace time: each waited for the answer of the turn it follows (closed loop).",
                s.followUpsWaited());
    }

    private static ServingStats firstServing(List<Row> rows) {
        for (Row row : rows) {
            if (row.result().serving() != null) {
                return row.result().serving();
            }
        }
        throw new IllegalStateException("no timed row");
    }

    /** TTFT CDF, one line per timed configuration, log time axis. */
    private static void ttftCdf(StringBuilder h, List<Row> rows) {
        List<Row> timed = new ArrayList<>();
        double minMs = Double.MAX_VALUE;
        double maxMs = 0;
        for (Row row : rows) {
            ServingStats s = row.result().serving();
            if (s != null && s.ttftCdfMs() != null && s.ttftCdfMs().length > 0) {
                timed.add(row);
                for (double v : s.ttftCdfMs()) {
                    minMs = Math.min(minMs, Math.max(v, 0.1));
                    maxMs = Math.max(maxMs, v);
                }
            }
        }
        if (timed.isEmpty()) {
            return;
        }
        double lo = Math.pow(10, Math.floor(Math.log10(minMs)));
        double hi = Math.pow(10, Math.ceil(Math.log10(Math.max(maxMs, lo * 10))));
        int w = 1000;
        int ht = 380;
        int left = 64;
        int right = 330;
        int top = 20;
        int bottom = 56;
        int pw = w - left - right;
        int ph = ht - top - bottom;
        h.append("<section><h2>TTFT distribution</h2>\n<svg class=\"chart\" viewBox=\"0 0 ").append(w).append(' ')
                .append(ht).append("\" width=\"").append(w).append("\" height=\"").append(ht)
                .append("\" role=\"img\" aria-label=\"TTFT cumulative distribution\">\n");
        for (int i = 0; i <= 4; i++) {
            double y = top + ph - ph * i / 4.0;
            h.append("<line class=\"grid\" x1=\"").append(left).append("\" x2=\"").append(left + pw).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"/><text class=\"tick\" x=\"").append(left - 8)
                    .append("\" y=\"").append(f1(y + 4)).append("\" text-anchor=\"end\">").append(i * 25).append("%</text>\n");
        }
        for (double d = lo; d <= hi * 1.0001; d *= 10) {
            double x = left + pw * Math.log10(d / lo) / Math.log10(hi / lo);
            h.append("<line class=\"grid\" x1=\"").append(f1(x)).append("\" x2=\"").append(f1(x)).append("\" y1=\"")
                    .append(top).append("\" y2=\"").append(top + ph).append("\"/><text class=\"tick\" x=\"").append(f1(x))
                    .append("\" y=\"").append(top + ph + 18).append("\" text-anchor=\"middle\">").append(esc(fmtMs(d)))
                    .append("</text>\n");
        }
        h.append("<text class=\"axis\" x=\"").append(left + pw / 2).append("\" y=\"").append(ht - 12)
                .append("\" text-anchor=\"middle\">time to first token (log scale)</text>\n")
                .append("<text class=\"axis\" transform=\"rotate(-90)\" x=\"").append(-(top + ph / 2))
                .append("\" y=\"16\" text-anchor=\"middle\">requests</text>\n");
        for (int k = 0; k < timed.size(); k++) {
            Row row = timed.get(k);
            double[] cdf = row.result().serving().ttftCdfMs();
            String colour = LANE_COLOURS[k % LANE_COLOURS.length];
            StringBuilder path = new StringBuilder();
            for (int p = 0; p < cdf.length; p++) {
                double v = Math.max(lo, Math.min(hi, cdf[p]));
                double x = left + pw * Math.log10(v / lo) / Math.log10(hi / lo);
                double y = top + ph - ph * p / 100.0;
                path.append(p == 0 ? "" : " ").append(f1(x)).append(',').append(f1(y));
            }
            h.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2.2\"")
                    .append(row.baseline() ? " stroke-dasharray=\"6 4\"" : "").append(" points=\"").append(path)
                    .append("\"><title>").append(esc(row.label())).append("</title></polyline>\n");
            int ly = top + 8 + 20 * k;
            h.append("<rect x=\"").append(left + pw + 16).append("\" y=\"").append(ly).append("\" width=\"12\" height=\"12\" fill=\"")
                    .append(colour).append("\"/><text x=\"").append(left + pw + 34).append("\" y=\"").append(ly + 10)
                    .append("\">").append(esc(row.label())).append("</text>\n");
        }
        h.append("</svg></section>\n");
    }

    /** The third tier (L3): one row per configuration that ran with storage; nothing when none did. */
    private static void storageTable(StringBuilder h, List<Row> rows) {
        boolean any = false;
        for (Row row : rows) {
            any |= row.result().storage() != null;
        }
        if (!any) {
            return;
        }
        h.append("<section><h2>Storage tier (L3)</h2>\n<div class=\"scroll\"><table>\n<thead><tr>")
                .append("<th>configuration</th><th>store</th><th>hits served from storage</th>")
                .append("<th>pages written / failed</th><th>written (true bytes)</th><th>write bandwidth (wall)</th>")
                .append("<th>prefetches / pages asked / published</th><th>prefetched (true bytes)</th>")
                .append("<th>read bandwidth (wall)</th><th>prefetch failed / no room</th><th>request wait</th>")
                .append("<th>queue peak prefetch / write</th></tr></thead>\n<tbody>\n");
        for (Row row : rows) {
            StorageResult st = row.result().storage();
            if (st == null) {
                continue;
            }
            h.append("<tr>")
                    .append("<td class=\"label\">").append(esc(row.label())).append("</td>")
                    .append("<td>").append(esc(st.backend())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.storageHitTokens())).append("</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.writePages())).append(" / ")
                    .append(fmtInt(st.writeFailedPages())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(st.writeBytes())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(Math.round(st.writeBytesPerSecond()))).append("/s</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.prefetchStarted())).append(" / ")
                    .append(fmtInt(st.prefetchPages())).append(" / ").append(fmtInt(st.prefetchPagesPublished()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(bytes(st.prefetchBytes())).append("</td>")
                    .append("<td class=\"n\">").append(bytes(Math.round(st.prefetchBytesPerSecond()))).append("/s</td>")
                    .append("<td class=\"n\">").append(fmtInt(st.prefetchFailedPages())).append(" / ")
                    .append(fmtInt(st.prefetchNoRoom())).append("</td>")
                    .append("<td class=\"n\">").append(String.format(Locale.ROOT, "%.2f s", st.prefetchWaitSeconds()))
                    .append("</td>")
                    .append("<td class=\"n\">").append(st.prefetchQueuePeak()).append(" / ").append(st.writeQueuePeak())
                    .append("</td></tr>\n");
        }
        h.append("</tbody></table></div>\n<p>Hits served from storage are host hits a prefetch brought in from L3 for ")
                .append("the request (simulated tokens). Bandwidths are wall-clock figures of the real backend's I/O on ")
                .append("the simulator's one-byte-per-layer pages; true bytes scale them to the model's KV size.</p>")
                .append("</section>\n");
    }

    private static void sweepChart(StringBuilder h, List<SimResult> points) {
        int w = 760;
        int ht = 360;
        int left = 64;
        int right = 24;
        int top = 24;
        int bottom = 64;
        int pw = w - left - right;
        int ph = ht - top - bottom;
        int n = points.size();
        double maxY = 0.05;
        for (SimResult p : points) {
            maxY = Math.max(maxY, Math.max(p.blockHitRatio(), p.tokenHitRatio()));
        }
        maxY = Math.min(1.0, Math.ceil(maxY * 10.0) / 10.0);
        h.append("<section><h2>Hit ratio vs host capacity</h2>\n<svg class=\"chart\" viewBox=\"0 0 ").append(w).append(' ')
                .append(ht).append("\" width=\"").append(w).append("\" height=\"").append(ht)
                .append("\" role=\"img\" aria-label=\"hit ratio versus host capacity\">\n");
        for (int i = 0; i <= 5; i++) {
            double v = maxY * i / 5;
            double y = top + ph - ph * v / maxY;
            h.append("<line class=\"grid\" x1=\"").append(left).append("\" x2=\"").append(left + pw).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"/>")
                    .append("<text class=\"tick\" x=\"").append(left - 8).append("\" y=\"").append(f1(y + 4))
                    .append("\" text-anchor=\"end\">").append(String.format(Locale.ROOT, "%.2f", v)).append("</text>\n");
        }
        double[] xs = new double[n];
        for (int i = 0; i < n; i++) {
            xs[i] = n == 1 ? left + pw / 2.0 : left + 20 + (pw - 40) * (double) i / (n - 1);
            h.append("<text class=\"tick\" x=\"").append(f1(xs[i])).append("\" y=\"").append(top + ph + 18)
                    .append("\" text-anchor=\"middle\">").append(capacity(points.get(i).config().hostCapacityTokens(), true))
                    .append("</text>\n");
        }
        h.append("<text class=\"axis\" x=\"").append(left + pw / 2).append("\" y=\"").append(ht - 16)
                .append("\" text-anchor=\"middle\">host capacity (simulated tokens)</text>\n")
                .append("<text class=\"axis\" transform=\"rotate(-90)\" x=\"").append(-(top + ph / 2)).append("\" y=\"16\"")
                .append(" text-anchor=\"middle\">hit ratio</text>\n");
        series(h, points, xs, top, ph, maxY, true, "#3b6fb6", "block hit ratio");
        series(h, points, xs, top, ph, maxY, false, "#e07b39", "token hit ratio");
        h.append("<g class=\"legend\"><rect x=\"").append(left + 12).append("\" y=\"").append(top + 4)
                .append("\" width=\"12\" height=\"12\" fill=\"#3b6fb6\"/><text x=\"").append(left + 30).append("\" y=\"")
                .append(top + 14).append("\">block hit ratio</text><rect x=\"").append(left + 150).append("\" y=\"")
                .append(top + 4).append("\" width=\"12\" height=\"12\" fill=\"#e07b39\"/><text x=\"").append(left + 168)
                .append("\" y=\"").append(top + 14).append("\">token hit ratio</text></g>\n</svg></section>\n");
    }

    /** TTFT p50 and p99 against host capacity (sweep), log time axis. */
    private static void sweepTtftChart(StringBuilder h, List<SimResult> points) {
        if (points.getFirst().serving() == null) {
            return;
        }
        int w = 760;
        int ht = 360;
        int left = 72;
        int right = 24;
        int top = 24;
        int bottom = 64;
        int pw = w - left - right;
        int ph = ht - top - bottom;
        int n = points.size();
        double minMs = Double.MAX_VALUE;
        double maxMs = 0;
        for (SimResult p : points) {
            minMs = Math.min(minMs, Math.max(0.1, p.serving().ttftMs().p50()));
            maxMs = Math.max(maxMs, p.serving().ttftMs().p99());
        }
        double lo = Math.pow(10, Math.floor(Math.log10(minMs)));
        double hi = Math.pow(10, Math.ceil(Math.log10(Math.max(maxMs, lo * 10))));
        h.append("<section><h2>TTFT vs host capacity</h2>\n<svg class=\"chart\" viewBox=\"0 0 ").append(w).append(' ')
                .append(ht).append("\" width=\"").append(w).append("\" height=\"").append(ht)
                .append("\" role=\"img\" aria-label=\"TTFT versus host capacity\">\n");
        for (double d = lo; d <= hi * 1.0001; d *= 10) {
            double y = top + ph - ph * Math.log10(d / lo) / Math.log10(hi / lo);
            h.append("<line class=\"grid\" x1=\"").append(left).append("\" x2=\"").append(left + pw).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"/><text class=\"tick\" x=\"").append(left - 8)
                    .append("\" y=\"").append(f1(y + 4)).append("\" text-anchor=\"end\">").append(esc(fmtMs(d))).append("</text>\n");
        }
        double[] xs = new double[n];
        for (int i = 0; i < n; i++) {
            xs[i] = n == 1 ? left + pw / 2.0 : left + 20 + (pw - 40) * (double) i / (n - 1);
            h.append("<text class=\"tick\" x=\"").append(f1(xs[i])).append("\" y=\"").append(top + ph + 18)
                    .append("\" text-anchor=\"middle\">").append(capacity(points.get(i).config().hostCapacityTokens(), true))
                    .append("</text>\n");
        }
        h.append("<text class=\"axis\" x=\"").append(left + pw / 2).append("\" y=\"").append(ht - 16)
                .append("\" text-anchor=\"middle\">host capacity (simulated tokens)</text>\n");
        for (int k = 0; k < 2; k++) {
            String colour = k == 0 ? "#3b6fb6" : "#e07b39";
            StringBuilder path = new StringBuilder();
            for (int i = 0; i < n; i++) {
                ServingStats s = points.get(i).serving();
                double v = Math.max(lo, Math.min(hi, k == 0 ? s.ttftMs().p50() : s.ttftMs().p99()));
                double y = top + ph - ph * Math.log10(v / lo) / Math.log10(hi / lo);
                path.append(i == 0 ? "" : " ").append(f1(xs[i])).append(',').append(f1(y));
                h.append("<circle cx=\"").append(f1(xs[i])).append("\" cy=\"").append(f1(y)).append("\" r=\"4\" fill=\"")
                        .append(colour).append("\"><title>").append(k == 0 ? "TTFT p50 " : "TTFT p99 ")
                        .append(esc(fmtMs(k == 0 ? s.ttftMs().p50() : s.ttftMs().p99()))).append("</title></circle>\n");
            }
            h.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2.5\" points=\"")
                    .append(path).append("\"/>\n");
        }
        h.append("<g class=\"legend\"><rect x=\"").append(left + 12).append("\" y=\"").append(top + 4)
                .append("\" width=\"12\" height=\"12\" fill=\"#3b6fb6\"/><text x=\"").append(left + 30).append("\" y=\"")
                .append(top + 14).append("\">TTFT p50</text><rect x=\"").append(left + 120).append("\" y=\"")
                .append(top + 4).append("\" width=\"12\" height=\"12\" fill=\"#e07b39\"/><text x=\"").append(left + 138)
                .append("\" y=\"").append(top + 14).append("\">TTFT p99</text></g>\n</svg></section>\n");
    }

    private static void series(StringBuilder h, List<SimResult> points, double[] xs, int top, int ph, double maxY,
                               boolean block, String colour, String name) {
        StringBuilder path = new StringBuilder();
        for (int i = 0; i < points.size(); i++) {
            double v = block ? points.get(i).blockHitRatio() : points.get(i).tokenHitRatio();
            double y = top + ph - ph * v / maxY;
            path.append(i == 0 ? "" : " ").append(f1(xs[i])).append(',').append(f1(y));
        }
        h.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2.5\" points=\"")
                .append(path).append("\"/>\n");
        for (int i = 0; i < points.size(); i++) {
            double v = block ? points.get(i).blockHitRatio() : points.get(i).tokenHitRatio();
            double y = top + ph - ph * v / maxY;
            h.append("<circle cx=\"").append(f1(xs[i])).append("\" cy=\"").append(f1(y)).append("\" r=\"4\" fill=\"")
                    .append(colour).append("\"><title>").append(esc(name)).append(" at host ")
                    .append(capacity(points.get(i).config().hostCapacityTokens(), true)).append(": ")
                    .append(String.format(Locale.ROOT, "%.4f", v)).append("</title></circle>\n");
        }
    }

    private static void timelines(StringBuilder h, List<Timeline> timelines) {
        h.append("<section><h2>One forward, layer by layer</h2>\n");
        if (timelines.isEmpty()) {
            h.append("<p class=\"note\">No timeline recorded: cache-only runs model no timing. Run without ")
                    .append("<code>--cache-only</code> to see compute and copies per layer.</p></section>\n");
            return;
        }
        long maxEnd = 1;
        for (Timeline t : timelines) {
            for (TimelineSegment s : t.segments()) {
                maxEnd = Math.max(maxEnd, s.endNs());
            }
        }
        for (Timeline t : timelines) {
            timeline(h, t, maxEnd);
        }
        h.append("</section>\n");
    }

    private static void timeline(StringBuilder h, Timeline t, long maxEnd) {
        Map<String, Integer> lanes = new LinkedHashMap<>();
        for (TimelineSegment s : t.segments()) {
            lanes.putIfAbsent(s.lane(), lanes.size());
        }
        int left = 110;
        int w = 900;
        int laneH = 28;
        int top = 8;
        int pw = w - left - 16;
        int ht = top + laneH * Math.max(1, lanes.size()) + 40;
        h.append("<h3>").append(esc(t.title())).append("</h3>\n<svg class=\"timeline\" viewBox=\"0 0 ").append(w)
                .append(' ').append(ht).append("\" width=\"").append(w).append("\" height=\"").append(ht)
                .append("\" role=\"img\" aria-label=\"timeline ").append(esc(t.title())).append("\">\n");
        List<String> names = new ArrayList<>(lanes.keySet());
        for (int i = 0; i < names.size(); i++) {
            int y = top + i * laneH;
            h.append("<rect class=\"lane\" x=\"").append(left).append("\" y=\"").append(y).append("\" width=\"").append(pw)
                    .append("\" height=\"").append(laneH - 4).append("\"/><text class=\"lanename\" x=\"").append(left - 8)
                    .append("\" y=\"").append(y + 16).append("\" text-anchor=\"end\">").append(esc(names.get(i)))
                    .append("</text>\n");
        }
        for (TimelineSegment s : t.segments()) {
            int lane = lanes.get(s.lane());
            double x = left + pw * (double) s.startNs() / maxEnd;
            double sw = Math.max(0.8, pw * (double) (s.endNs() - s.startNs()) / maxEnd);
            int y = top + lane * laneH;
            h.append("<rect x=\"").append(f1(x)).append("\" y=\"").append(y + 2).append("\" width=\"").append(f1(sw))
                    .append("\" height=\"").append(laneH - 8).append("\" fill=\"")
                    .append(LANE_COLOURS[lane % LANE_COLOURS.length]).append("\"><title>").append(esc(s.label()))
                    .append(" on ").append(esc(s.lane())).append(": ").append(duration(s.startNs())).append(" to ")
                    .append(duration(s.endNs())).append("</title></rect>\n");
            if (sw > 7.5 * s.label().length()) {
                h.append("<text class=\"seg\" x=\"").append(f1(x + sw / 2)).append("\" y=\"").append(y + 16)
                        .append("\" text-anchor=\"middle\">").append(esc(s.label())).append("</text>\n");
            }
        }
        int axisY = top + laneH * Math.max(1, lanes.size()) + 4;
        for (int i = 0; i <= 5; i++) {
            double x = left + pw * i / 5.0;
            h.append("<line class=\"grid\" x1=\"").append(f1(x)).append("\" x2=\"").append(f1(x)).append("\" y1=\"")
                    .append(top).append("\" y2=\"").append(axisY).append("\"/><text class=\"tick\" x=\"").append(f1(x))
                    .append("\" y=\"").append(axisY + 16).append("\" text-anchor=\"middle\">")
                    .append(duration(maxEnd * i / 5)).append("</text>\n");
        }
        h.append("</svg>\n");
    }

    private static final String CSS = """
            body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #1f2933; background: #f7f8fa; }
            header { background: #1f2d3d; color: #f5f7fa; padding: 20px 32px 12px; }
            header h1 { margin: 0 0 8px; font-size: 22px; font-weight: 600; }
            header .cmd code { background: #2e4053; padding: 3px 8px; border-radius: 4px; font-size: 13px; }
            header .meta { font-size: 13px; color: #c9d3dd; }
            main { padding: 8px 32px 32px; }
            section { background: #fff; border: 1px solid #e1e5ea; border-radius: 8px; padding: 12px 20px 18px; margin-top: 18px; }
            h2 { font-size: 17px; margin: 6px 0 12px; }
            h3 { font-size: 14px; margin: 14px 0 4px; color: #3e4c59; }
            .scroll { overflow-x: auto; }
            table { border-collapse: collapse; font-size: 13px; }
            td { white-space: nowrap; }
            th { white-space: normal; max-width: 160px; vertical-align: bottom; text-align: left; background: #eef1f5; padding: 6px 10px; border-bottom: 2px solid #d5dbe3; font-weight: 600; }
            td { padding: 6px 10px; border-bottom: 1px solid #edf0f3; }
            td.n { text-align: right; font-variant-numeric: tabular-nums; }
            td.label { font-weight: 600; }
            tr.baseline td { color: #7b8794; background: #fafbfc; font-style: italic; }
            .bar { display: inline-block; height: 8px; background: #3b6fb6; border-radius: 2px; margin-right: 6px; vertical-align: middle; }
            tr.baseline .bar { background: #b8c2cc; }
            svg text { font-size: 12px; fill: #3e4c59; }
            svg .axis { font-size: 13px; font-weight: 600; }
            svg .grid { stroke: #e4e7eb; stroke-width: 1; }
            svg .lane { fill: #f3f5f8; }
            svg .lanename { font-weight: 600; }
            svg .seg { font-size: 10px; fill: #ffffff; }
            .note { color: #616e7c; font-size: 13px; }
            .decision { font-size: 15px; font-weight: 600; margin: 4px 0 12px; }
            .cards { display: flex; flex-wrap: wrap; gap: 14px; }
            .card { border: 1px solid #d5dbe3; border-radius: 8px; padding: 10px 16px; min-width: 300px; flex: 1 1 300px; background: #fbfcfe; }
            .card h3 { margin: 2px 0 8px; font-size: 15px; color: #1f2d3d; }
            .metric { display: grid; grid-template-columns: 130px 110px 1fr; align-items: baseline; gap: 8px; padding: 3px 0; }
            .mname { color: #52606d; font-size: 13px; }
            .mvalue { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
            .msub { color: #52606d; font-size: 12px; }
            .fleet { color: #52606d; font-size: 12px; margin: 8px 0 0; }
            ul { font-size: 13px; line-height: 1.6; }
            """;

    private static String ratioCell(double v) {
        int px = (int) Math.round(Math.max(0, Math.min(1, v)) * 60);
        return "<span class=\"bar\" style=\"width:" + px + "px\"></span>" + String.format(Locale.ROOT, "%.4f", v);
    }

    private static String capacity(long tokens, boolean host) {
        if (tokens == Long.MAX_VALUE) {
            return "inf";
        }
        if (host && tokens == 0) {
            return "0 (none)";
        }
        return fmtInt(tokens);
    }

    private static String fmtInt(long v) {
        if (v >= 10_000_000_000L) {
            return String.format(Locale.ROOT, "%.2f G", v / 1e9);
        }
        if (v >= 10_000_000) {
            return String.format(Locale.ROOT, "%.2f M", v / 1e6);
        }
        return String.format(Locale.ROOT, "%,d", v);
    }

    private static String bytes(long b) {
        if (b >= 1L << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", b / (double) (1L << 30));
        }
        if (b >= 1L << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (double) (1L << 20));
        }
        return b + " B";
    }

    private static String duration(long ns) {
        if (ns >= 1_000_000_000L) {
            return String.format(Locale.ROOT, "%.2f s", ns / 1e9);
        }
        if (ns >= 1_000_000L) {
            return String.format(Locale.ROOT, "%.2f ms", ns / 1e6);
        }
        if (ns >= 1_000L) {
            return String.format(Locale.ROOT, "%.1f µs", ns / 1e3);
        }
        return ns + " ns";
    }

    private static String percent(double v) {
        return String.format(Locale.ROOT, "%.1f%%", v * 100);
    }

    private static String f1(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    /** Escapes text for element content and attribute values. */
    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length() + 8);
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '&' -> b.append("&amp;");
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '"' -> b.append("&quot;");
                case '\'' -> b.append("&#39;");
                default -> {
                    if (c < 0x20 && c != '\n' && c != '\t') {
                        b.append(' ');
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.toString();
    }
}
