package io.hicache.sim.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static io.hicache.sim.report.Html.duration;
import static io.hicache.sim.report.Html.esc;
import static io.hicache.sim.report.Html.f1;
import static io.hicache.sim.report.Html.fmtMs;

/**
 * The HTML report's TTFT distribution (one line per timed configuration, each its own colour, baselines dashed)
 * and per-layer timelines of one forward. Stateless.
 */
final class HtmlCharts {
    private static final String[] LANE_COLOURS = {"#3b6fb6", "#e07b39", "#4aa564", "#b3478f", "#8c6d31", "#5b5ea6"};

    private HtmlCharts() {
    }

    /** TTFT CDF, one line per timed configuration, log time axis. */
    static void ttftCdf(StringBuilder h, List<HtmlReport.Row> rows) {
        List<HtmlReport.Row> timed = new ArrayList<>();
        double minMs = Double.MAX_VALUE;
        double maxMs = 0;
        for (HtmlReport.Row row : rows) {
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
            HtmlReport.Row row = timed.get(k);
            double[] cdf = row.result().serving().ttftCdfMs();
            String colour = Html.colour(k, timed.size());
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

    static void timelines(StringBuilder h, List<HtmlReport.Timeline> timelines) {
        h.append("<section><h2>One forward, layer by layer</h2>\n");
        if (timelines.isEmpty()) {
            h.append("<p class=\"note\">No timeline recorded: cache-only runs model no timing. Run without ")
                    .append("<code>--cache-only</code> to see compute and copies per layer.</p></section>\n");
            return;
        }
        long maxEnd = 1;
        for (HtmlReport.Timeline t : timelines) {
            for (TimelineSegment s : t.segments()) {
                maxEnd = Math.max(maxEnd, s.endNs());
            }
        }
        for (HtmlReport.Timeline t : timelines) {
            timeline(h, t, maxEnd);
        }
        h.append("</section>\n");
    }

    private static void timeline(StringBuilder h, HtmlReport.Timeline t, long maxEnd) {
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
}
