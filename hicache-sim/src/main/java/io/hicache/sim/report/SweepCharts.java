package io.hicache.sim.report;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import static io.hicache.sim.report.Html.esc;
import static io.hicache.sim.report.Html.f1;

/**
 * A sweep's two charts, side by side: hit ratio and TTFT against host capacity. The capacity axis is numeric and
 * logarithmic (ticks at 1, 2 and 5 times powers of ten, in tokens and, when known, memory per instance); {@code 0}
 * (no host tier) and {@code inf} (unlimited) sit apart at the two ends, past a break, since neither has a place
 * on a log scale. The recommended size is marked, and the hit chart draws the tolerance line under the best hit
 * ratio. Stateless.
 */
final class SweepCharts {
    private static final int W = 620;
    private static final int H = 360;
    private static final int LEFT = 76;
    private static final int RIGHT = 20;
    private static final int TOP = 44;
    private static final int BOTTOM = 78;
    /** Room at each end for the 0 and inf slots, and the gap that sets them apart. */
    private static final int SLOT = 34;

    private SweepCharts() {
    }

    /** Both charts in one section (nothing for no points). */
    static void render(StringBuilder h, List<SimResult> points, KvFootprint kv, Recommendation rec) {
        if (points.isEmpty()) {
            return;
        }
        List<SimResult> sorted = new ArrayList<>(points);
        sorted.sort(Comparator.comparingLong(r -> hostOf(r)));
        Axis x = Axis.of(sorted);
        h.append("<section class=\"charts\">\n<div class=\"chartbox\"><h2>Hit ratio vs host capacity</h2>\n");
        hitChart(h, sorted, x, kv, rec);
        h.append("</div>\n");
        if (sorted.getFirst().serving() != null) {
            h.append("<div class=\"chartbox\"><h2>TTFT vs host capacity</h2>\n");
            ttftChart(h, sorted, x, kv, rec);
            h.append("</div>\n");
        }
        h.append("</section>\n");
    }

    private static long hostOf(SimResult r) {
        return r.config().hasHostTier() && r.config().backupMode() != io.hicache.sim.BackupMode.NONE
                ? r.config().hostCapacityTokens() : 0;
    }

    /**
     * Where a capacity goes across the plot: a log scale between the smallest and largest finite positive sizes,
     * with a slot for 0 on the left and one for inf on the right when the sweep has them.
     */
    private record Axis(boolean zero, boolean inf, double lo, double hi, boolean anyFinite) {
        static Axis of(List<SimResult> sorted) {
            boolean zero = false;
            boolean inf = false;
            double lo = Double.MAX_VALUE;
            double hi = 0;
            for (SimResult r : sorted) {
                long t = hostOf(r);
                if (t == 0) {
                    zero = true;
                } else if (t == Long.MAX_VALUE) {
                    inf = true;
                } else {
                    lo = Math.min(lo, Math.log10(t));
                    hi = Math.max(hi, Math.log10(t));
                }
            }
            boolean any = hi > 0;
            if (!any) {
                lo = 0;
                hi = 1;
            } else if (hi - lo < 1e-9) {
                lo -= 0.5;
                hi += 0.5;
            } else {
                double pad = Math.max(0.06 * (hi - lo), 0.04);
                lo -= pad;
                hi += pad;
            }
            return new Axis(zero, inf, lo, hi, any);
        }

        double logLeft() {
            return LEFT + (zero ? SLOT + 14 : 6);
        }

        double logRight() {
            return W - RIGHT - (inf ? SLOT + 14 : 6);
        }

        double x(long tokens) {
            if (tokens == 0) {
                return LEFT + SLOT / 2.0;
            }
            if (tokens == Long.MAX_VALUE) {
                return W - RIGHT - SLOT / 2.0;
            }
            return logLeft() + (logRight() - logLeft()) * (Math.log10(tokens) - lo) / (hi - lo);
        }

        /** Grid lines, tick labels (tokens, memory below), the 0 and inf slots and the breaks before them. */
        void draw(StringBuilder h, int plotTop, int plotBottom, KvFootprint kv) {
            if (anyFinite) {
                for (long v : ticks()) {
                    double px = x(v);
                    h.append("<line class=\"grid\" x1=\"").append(f1(px)).append("\" x2=\"").append(f1(px))
                            .append("\" y1=\"").append(plotTop).append("\" y2=\"").append(plotBottom).append("\"/>");
                    label(h, px, plotBottom, Units.tokensShort(v), kv == null ? null : kv.memory(v));
                }
            }
            if (zero) {
                label(h, x(0), plotBottom, "0", "none");
                brk(h, (LEFT + SLOT + logLeft()) / 2, plotBottom);
            }
            if (inf) {
                label(h, x(Long.MAX_VALUE), plotBottom, "inf", "unlimited");
                brk(h, (W - RIGHT - SLOT + logRight()) / 2, plotBottom);
            }
            h.append("<line class=\"axisline\" x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT)
                    .append("\" y1=\"").append(plotBottom).append("\" y2=\"").append(plotBottom).append("\"/>\n");
            h.append("<text class=\"axis\" x=\"").append((LEFT + W - RIGHT) / 2).append("\" y=\"").append(H - 8)
                    .append("\" text-anchor=\"middle\">host capacity per instance (tokens").append(kv == null ? ""
                            : " and memory").append("; log scale)</text>\n");
        }

        /** Ticks at 1, 2 and 5 x 10^k inside the log range (only powers of ten over more than 2.5 decades). */
        List<Long> ticks() {
            List<Long> out = new ArrayList<>();
            int[] steps = hi - lo > 2.5 ? new int[] {1} : new int[] {1, 2, 5};
            for (int e = (int) Math.floor(lo); e <= (int) Math.ceil(hi); e++) {
                for (int s : steps) {
                    double v = s * Math.pow(10, e);
                    double l = Math.log10(v);
                    if (l >= lo && l <= hi && v >= 1) {
                        out.add(Math.round(v));
                    }
                }
            }
            return out;
        }

        private static void label(StringBuilder h, double px, int plotBottom, String top, String bottom) {
            h.append("<text class=\"tick\" x=\"").append(f1(px)).append("\" y=\"").append(plotBottom + 16)
                    .append("\" text-anchor=\"middle\">").append(esc(top)).append("</text>");
            if (bottom != null) {
                h.append("<text class=\"tick sub\" x=\"").append(f1(px)).append("\" y=\"").append(plotBottom + 30)
                        .append("\" text-anchor=\"middle\">").append(esc(bottom)).append("</text>");
            }
            h.append('\n');
        }

        /** A break mark (two short slanted strokes) on the axis. */
        private static void brk(StringBuilder h, double px, int y) {
            for (int d = -3; d <= 3; d += 6) {
                h.append("<line class=\"brk\" x1=\"").append(f1(px + d - 3)).append("\" x2=\"").append(f1(px + d + 3))
                        .append("\" y1=\"").append(y + 6).append("\" y2=\"").append(y - 6).append("\"/>");
            }
            h.append('\n');
        }
    }

    private static void open(StringBuilder h, String label) {
        h.append("<svg class=\"chart\" viewBox=\"0 0 ").append(W).append(' ').append(H).append("\" width=\"").append(W)
                .append("\" height=\"").append(H).append("\" role=\"img\" aria-label=\"").append(esc(label))
                .append("\">\n");
    }

    private static void hitChart(StringBuilder h, List<SimResult> pts, Axis x, KvFootprint kv, Recommendation rec) {
        int plotBottom = H - BOTTOM;
        int ph = plotBottom - TOP;
        double maxY = 0.05;
        for (SimResult p : pts) {
            maxY = Math.max(maxY, Math.max(p.blockHitRatio(), p.tokenHitRatio()));
        }
        maxY = Math.min(1.0, Math.ceil(maxY * 10.0) / 10.0);
        final double top = maxY;
        open(h, "hit ratio versus host capacity");
        for (int i = 0; i <= 5; i++) {
            double v = maxY * i / 5;
            double y = plotBottom - ph * v / maxY;
            h.append("<line class=\"grid\" x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"/><text class=\"tick\" x=\"")
                    .append(LEFT - 8).append("\" y=\"").append(f1(y + 4)).append("\" text-anchor=\"end\">")
                    .append(String.format(Locale.ROOT, "%.2f", v)).append("</text>\n");
        }
        x.draw(h, TOP, plotBottom, kv);
        h.append("<text class=\"axis\" transform=\"rotate(-90)\" x=\"").append(-(TOP + ph / 2)).append("\" y=\"14\"")
                .append(" text-anchor=\"middle\">hit ratio</text>\n");
        if (rec != null) {
            double floor = rec.bestBlockHitRatio() * (1 - rec.tolerance());
            double y = plotBottom - ph * floor / maxY;
            h.append("<line class=\"tol\" x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"><title>best block hit ratio less the "
                            + "tolerance</title></line>\n");
            marker(h, x, rec, kv);
        }
        String block = Html.colour(0, 4);
        String token = Html.colour(1, 4);
        series(h, pts, x, p -> plotBottom - ph * p.blockHitRatio() / top, block, "block hit ratio",
                p -> String.format(Locale.ROOT, "%.4f", p.blockHitRatio()));
        series(h, pts, x, p -> plotBottom - ph * p.tokenHitRatio() / top, token, "token hit ratio",
                p -> String.format(Locale.ROOT, "%.4f", p.tokenHitRatio()));
        legend(h, new String[] {"block hit ratio", "token hit ratio"}, new String[] {block, token},
                rec == null ? null : "within " + tolText(rec.tolerance()) + " of best");
        h.append("</svg>\n");
    }

    private static void ttftChart(StringBuilder h, List<SimResult> pts, Axis x, KvFootprint kv, Recommendation rec) {
        int plotBottom = H - BOTTOM;
        int ph = plotBottom - TOP;
        double minMs = Double.MAX_VALUE;
        double maxMs = 0;
        for (SimResult p : pts) {
            minMs = Math.min(minMs, Math.max(0.1, p.serving().ttftMs().p50()));
            maxMs = Math.max(maxMs, p.serving().ttftMs().p99());
        }
        double lo = Math.pow(10, Math.floor(Math.log10(minMs)));
        double hi = Math.pow(10, Math.ceil(Math.log10(Math.max(maxMs, lo * 10))));
        open(h, "TTFT versus host capacity");
        for (double d = lo; d <= hi * 1.0001; d *= 10) {
            double y = plotBottom - ph * Math.log10(d / lo) / Math.log10(hi / lo);
            h.append("<line class=\"grid\" x1=\"").append(LEFT).append("\" x2=\"").append(W - RIGHT).append("\" y1=\"")
                    .append(f1(y)).append("\" y2=\"").append(f1(y)).append("\"/><text class=\"tick\" x=\"")
                    .append(LEFT - 8).append("\" y=\"").append(f1(y + 4)).append("\" text-anchor=\"end\">")
                    .append(esc(Html.fmtMs(d))).append("</text>\n");
        }
        x.draw(h, TOP, plotBottom, kv);
        h.append("<text class=\"axis\" transform=\"rotate(-90)\" x=\"").append(-(TOP + ph / 2)).append("\" y=\"14\"")
                .append(" text-anchor=\"middle\">TTFT (log scale)</text>\n");
        if (rec != null) {
            marker(h, x, rec, kv);
        }
        String p50 = Html.colour(2, 4);
        String p99 = Html.colour(4, 6);
        java.util.function.ToDoubleFunction<Double> y = v -> plotBottom
                - ph * Math.log10(Math.max(lo, Math.min(hi, v)) / lo) / Math.log10(hi / lo);
        series(h, pts, x, p -> y.applyAsDouble(p.serving().ttftMs().p50()), p50, "TTFT p50",
                p -> Html.fmtMs(p.serving().ttftMs().p50()));
        series(h, pts, x, p -> y.applyAsDouble(p.serving().ttftMs().p99()), p99, "TTFT p99",
                p -> Html.fmtMs(p.serving().ttftMs().p99()));
        legend(h, new String[] {"TTFT p50", "TTFT p99"}, new String[] {p50, p99}, null);
        h.append("</svg>\n");
    }

    /** The recommended size: a vertical line and its label at the top of the plot. */
    private static void marker(StringBuilder h, Axis x, Recommendation rec, KvFootprint kv) {
        long at = switch (rec.kind()) {
            case NO_HOST_TIER -> 0;
            case FINITE -> rec.hostTokens();
            case UNLIMITED_ONLY -> Long.MAX_VALUE;
        };
        if ((at == 0 && !x.zero()) || (at == Long.MAX_VALUE && !x.inf())) {
            return;
        }
        double px = x.x(at);
        String text = switch (rec.kind()) {
            case NO_HOST_TIER -> "no host tier needed";
            case FINITE -> "recommended: " + Units.tokensShort(at) + (kv == null ? "" : " = " + kv.memory(at));
            case UNLIMITED_ONLY -> "only unlimited within tolerance";
        };
        String anchor = px < W / 3.0 ? "start" : px > 2 * W / 3.0 ? "end" : "middle";
        h.append("<line class=\"rec\" x1=\"").append(f1(px)).append("\" x2=\"").append(f1(px)).append("\" y1=\"")
                .append(TOP - 4).append("\" y2=\"").append(H - BOTTOM).append("\"/><text class=\"reclabel\" x=\"")
                .append(f1(anchor.equals("start") ? px - 4 : anchor.equals("end") ? px + 4 : px)).append("\" y=\"")
                .append(TOP - 10).append("\" text-anchor=\"").append(anchor).append("\">").append(esc(text))
                .append("</text>\n");
    }

    private static void series(StringBuilder h, List<SimResult> pts, Axis x,
                               java.util.function.ToDoubleFunction<SimResult> y, String colour, String name,
                               java.util.function.Function<SimResult, String> value) {
        StringBuilder solid = new StringBuilder();
        List<double[]> all = new ArrayList<>();
        for (SimResult p : pts) {
            long t = hostOf(p);
            double[] xy = {x.x(t), y.applyAsDouble(p)};
            all.add(xy);
            if (t != 0 && t != Long.MAX_VALUE) {
                solid.append(solid.isEmpty() ? "" : " ").append(f1(xy[0])).append(',').append(f1(xy[1]));
            }
        }
        if (!solid.isEmpty()) {
            h.append("<polyline fill=\"none\" stroke=\"").append(colour).append("\" stroke-width=\"2.5\" points=\"")
                    .append(solid).append("\"/>\n");
        }
        // across the breaks to 0 and inf: dashed
        for (int i = 0; i + 1 < all.size(); i++) {
            long a = hostOf(pts.get(i));
            long b = hostOf(pts.get(i + 1));
            if (a == 0 || b == Long.MAX_VALUE) {
                h.append("<line stroke=\"").append(colour).append("\" stroke-width=\"1.8\" stroke-dasharray=\"5 4\" x1=\"")
                        .append(f1(all.get(i)[0])).append("\" y1=\"").append(f1(all.get(i)[1])).append("\" x2=\"")
                        .append(f1(all.get(i + 1)[0])).append("\" y2=\"").append(f1(all.get(i + 1)[1])).append("\"/>\n");
            }
        }
        for (int i = 0; i < pts.size(); i++) {
            h.append("<circle cx=\"").append(f1(all.get(i)[0])).append("\" cy=\"").append(f1(all.get(i)[1]))
                    .append("\" r=\"4\" fill=\"").append(colour).append("\"><title>").append(esc(name))
                    .append(" at host ").append(esc(Units.tokensShort(hostOf(pts.get(i))))).append(": ")
                    .append(esc(value.apply(pts.get(i)))).append("</title></circle>\n");
        }
    }

    private static void legend(StringBuilder h, String[] names, String[] colours, String tolerance) {
        double lx = LEFT + 10;
        int ly = 6;
        h.append("<g class=\"legend\">");
        for (int i = 0; i < names.length; i++) {
            h.append("<rect x=\"").append(f1(lx)).append("\" y=\"").append(ly).append("\" width=\"12\" height=\"12\" ")
                    .append("fill=\"").append(colours[i]).append("\"/><text x=\"").append(f1(lx + 17)).append("\" y=\"")
                    .append(ly + 10).append("\">").append(esc(names[i])).append("</text>");
            lx += 30 + 7.0 * names[i].length();
        }
        if (tolerance != null) {
            h.append("<line class=\"tol\" x1=\"").append(f1(lx)).append("\" x2=\"").append(f1(lx + 16)).append("\" y1=\"")
                    .append(ly + 6).append("\" y2=\"").append(ly + 6).append("\"/><text x=\"").append(f1(lx + 21))
                    .append("\" y=\"").append(ly + 10).append("\">").append(esc(tolerance)).append("</text>");
        }
        h.append("</g>\n");
    }

    private static String tolText(double t) {
        double p = t * 100;
        return (p == Math.rint(p) ? String.format(Locale.ROOT, "%.0f", p) : String.format(Locale.ROOT, "%.2f", p)) + " %";
    }
}
