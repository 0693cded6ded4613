package io.hicache.sim.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import static io.hicache.sim.report.Html.duration;
import static io.hicache.sim.report.Html.esc;
import static io.hicache.sim.report.Html.fmtInt;
import static io.hicache.sim.report.Html.fmtMs;
import static io.hicache.sim.report.Html.metric;
import static io.hicache.sim.report.Html.percent;
import static io.hicache.sim.report.Html.ratio;

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
     * @param answer    what the run concluded (null: nothing stated)
     * @param assumptions where the times come from ({@link Assumptions}), shown under the header; null: not shown
     */
    public record Report(String title, String command, List<Row> rows, List<SimResult> sweep,
                         List<Timeline> timelines, Answer answer, String assumptions) {
        /** Copies the lists. */
        public Report {
            rows = List.copyOf(rows);
            sweep = List.copyOf(sweep);
            timelines = List.copyOf(timelines);
            answer = answer == null ? Answer.NONE : answer;
        }

        /** A report without an assumptions line. */
        public Report(String title, String command, List<Row> rows, List<SimResult> sweep, List<Timeline> timelines,
                      Answer answer) {
            this(title, command, rows, sweep, timelines, answer, null);
        }

        /** A report without a stated answer (capacities in tokens only). */
        public Report(String title, String command, List<Row> rows, List<SimResult> sweep, List<Timeline> timelines) {
            this(title, command, rows, sweep, timelines, Answer.NONE);
        }
    }

    /**
     * What the run concluded, as the command line printed it: the report leads with it.
     *
     * @param kv             tokens to bytes (null: tokens only)
     * @param headline       the answer in a few words, shown large (null: none)
     * @param lines          the recommendation or decision, and where the host size sits against the knee
     * @param recommendation the recommendation (null when none applies)
     * @param warnings       overload warnings
     */
    public record Answer(KvFootprint kv, String headline, List<String> lines, Recommendation recommendation,
                         List<String> warnings) {
        /** Nothing stated. */
        public static final Answer NONE = new Answer(null, null, List.of(), null, List.of());

        /** Copies the lists. */
        public Answer {
            lines = List.copyOf(lines);
            warnings = List.copyOf(warnings);
        }
    }

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
        Answer answer = report.answer();
        KvFootprint kv = answer.kv();
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
                    .append(esc(kv != null ? kv.model() : first.config().model().cliName())).append("</b> · gpu <b>")
                    .append(esc(kv != null ? kv.gpu() : first.config().gpu().cliName())).append("</b> · page ")
                    .append(first.config().pageSize()).append(" · block tokens ").append(first.config().blockTokens())
                    .append("</p>\n");
            if (kv != null) {
                h.append("<p class=\"meta\">KV <b>").append(String.format(Locale.ROOT, "%,d", kv.bytesPerToken()))
                        .append(" B</b> per token on an instance of ").append(kv.gpus()).append(kv.gpus() == 1 ? " GPU"
                                : " GPUs").append(" · device KV <b>").append(esc(Units.tokens(kv.deviceKvTokens())))
                        .append(" tokens = ").append(esc(kv.memory(kv.deviceKvTokens()))).append("</b> per instance")
                        .append(kv.deviceSource() == KvFootprint.DeviceSource.GPU_ROOM ? " (the GPUs' room after the "
                                + "weights)" : " (the GPUs' room: " + esc(Units.tokens(kv.gpuRoomTokens())) + " tokens)")
                        .append("</p>\n");
            }
        }
        if (report.assumptions() != null) {
            h.append("<p class=\"meta assumptions\">").append(esc(report.assumptions())).append("</p>\n");
        }
        h.append("</header>\n<main>\n");
        if (!answer.warnings().isEmpty()) {
            h.append("<section class=\"warn\"><h2>Overloaded</h2>\n");
            for (String w : answer.warnings()) {
                h.append("<p>").append(esc(w.replaceFirst("^WARNING: ", ""))).append("</p>\n");
            }
            h.append("</section>\n");
        }
        if (!answer.lines().isEmpty()) {
            Recommendation rec = answer.recommendation();
            boolean sweep = rec != null && !report.sweep().isEmpty();
            h.append("<section class=\"answer\"><h2>").append(sweep ? "Recommendation" : "Answer").append("</h2>\n");
            String big = sweep ? bigLine(rec, kv) : answer.headline();
            if (big != null) {
                h.append("<p class=\"big\">").append(esc(big)).append("</p>\n");
            }
            for (int i = 0; i < answer.lines().size(); i++) {
                String line = answer.lines().get(i);
                if (sweep && i == 0) {
                    line = line.replaceFirst("^Recommendation: ", "");
                }
                h.append("<p class=\"").append(i == 0 ? "decision" : "knee").append("\">").append(esc(line))
                        .append("</p>\n");
            }
            h.append("</section>\n");
        }
        if (!report.sweep().isEmpty()) {
            SweepCharts.render(h, report.sweep(), kv, answer.recommendation());
        } else {
            headline(h, report.rows(), answer.lines().isEmpty());
        }
        HtmlTables.table(h, report.rows(), kv);
        HtmlTables.storageTable(h, report.rows());
        HtmlTables.servingTable(h, report.rows());
        HtmlCharts.ttftCdf(h, report.rows());
        HtmlCharts.timelines(h, report.timelines());
        h.append("<section><h2>How to read this report</h2>\n<ul>\n")
                .append("<li><b>Recommendation</b> (sweep): the smallest swept host size whose block hit ratio is within ")
                .append("the tolerance (<code>--tolerance</code>, a relative fraction, default 0.01) of the best swept; ")
                .append("memory is per instance, at the KV bytes per token in the header (GB = 10<sup>9</sup> bytes).</li>\n")
                .append("<li><b>block hit ratio</b>: leading trace blocks fully found in cache (device or host) / all blocks; ")
                .append("<b>token hit ratio</b>: prompt tokens served from cache / prompt tokens.</li>\n")
                .append("<li><b>exposed backup</b>: device-to-host copy time not hidden behind compute; ")
                .append("<b>commit latency</b>: from the end of the forward (device time) until the host copy is published and can be a hit.</li>\n")
                .append("<li>Baselines (grey): <i>no backup</i> has no host tier writes; <i>unlimited cache</i> ")
                .append("keeps everything and bounds every hit ratio from above. Cells that mean nothing for a row stay empty.</li>\n")
                .append("<li>Token counts other than prompt tokens are simulated tokens (after block expansion).</li>\n")
                .append("<li><b>TTFT</b>: arrival to first token (queueing included); <b>TPOT</b>: time per output token after ")
                .append("the first; <b>goodput</b>: share of requests meeting both the TTFT and the TPOT objective; ")
                .append("<b>GPU busy</b>: share of the simulated time the instances computed; <b>preempted</b>: requests ")
                .append("whose pages were taken back for others' decode (SGLang's retract).</li>\n")
                .append("</ul></section>\n</main>\n</body>\n</html>\n");
        return h.toString();
    }

    /** The recommendation in a few words: the size, or that none (or only unlimited) will do. */
    private static String bigLine(Recommendation rec, KvFootprint kv) {
        return switch (rec.kind()) {
            case NO_HOST_TIER -> "No host tier needed";
            case FINITE -> Units.tokens(rec.hostTokens()) + " host tokens" + (kv == null ? ""
                    : " = " + kv.memory(rec.hostTokens()) + " per instance");
            case UNLIMITED_ONLY -> "Only an unlimited host tier reaches the best hit ratio";
        };
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
    private static void headline(StringBuilder h, List<Row> rows, boolean withDecision) {
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
            if (s.overload().overloaded()) {
                c.append(" · <b class=\"over\">overloaded</b>");
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
        String decision = withDecision ? Decision.of(results) : null;
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
            td.label { font-weight: 600; white-space: normal; min-width: 150px; max-width: 230px; }
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
            .answer { border-left: 5px solid #4e79a7; }
            .answer .big { font-size: 26px; font-weight: 700; margin: 2px 0 8px; color: #1f2d3d; }
            .answer .decision { font-size: 15px; font-weight: 500; line-height: 1.45; }
            .answer .knee { font-size: 14px; line-height: 1.45; margin: 4px 0 8px; }
            .warn { border-left: 5px solid #e15759; background: #fff6f6; }
            .warn p { font-size: 14px; margin: 4px 0; }
            .over { color: #c0392b; }
            .charts { display: flex; flex-wrap: wrap; gap: 18px; }
            .chartbox { flex: 1 1 600px; }
            .mem { color: #616e7c; }
            svg .sub { font-size: 10.5px; fill: #7b8794; }
            svg .axisline { stroke: #9aa5b1; stroke-width: 1; }
            svg .brk { stroke: #52606d; stroke-width: 1.5; }
            svg .tol { stroke: #52606d; stroke-width: 1.2; stroke-dasharray: 3 3; }
            svg .rec { stroke: #c0392b; stroke-width: 1.5; stroke-dasharray: 6 3; }
            svg .reclabel { font-size: 12px; font-weight: 600; fill: #c0392b; }
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
}
