package io.hicache.sim.report;

import java.util.Locale;

/**
 * What the HTML report's parts share: escaping, number and time formats, and the colours of chart series.
 * Stateless.
 */
final class Html {
    /**
     * Distinct colours for up to ten series (a qualitative palette: blue, orange, red, teal, green, yellow, purple,
     * pink, brown, grey); more series get hues spaced evenly around the colour wheel.
     */
    private static final String[] PALETTE = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
        "#b07aa1", "#ff9da7", "#9c755f", "#79706e"};

    private Html() {
    }

    /** The colour of series {@code i} of {@code n}: all {@code n} distinct. */
    static String colour(int i, int n) {
        if (n <= PALETTE.length) {
            return PALETTE[i % PALETTE.length];
        }
        return hsl(360.0 * i / n, 0.62, 0.46);
    }

    private static String hsl(double h, double s, double l) {
        double c = (1 - Math.abs(2 * l - 1)) * s;
        double x = c * (1 - Math.abs((h / 60) % 2 - 1));
        double m = l - c / 2;
        double[] rgb = h < 60 ? new double[] {c, x, 0} : h < 120 ? new double[] {x, c, 0}
                : h < 180 ? new double[] {0, c, x} : h < 240 ? new double[] {0, x, c}
                : h < 300 ? new double[] {x, 0, c} : new double[] {c, 0, x};
        return String.format(Locale.ROOT, "#%02x%02x%02x", Math.round((rgb[0] + m) * 255),
                Math.round((rgb[1] + m) * 255), Math.round((rgb[2] + m) * 255));
    }

    static String metric(String name, String value, String sub) {
        return "<div class=\"metric\"><span class=\"mname\">" + esc(name) + "</span><span class=\"mvalue\">"
                + esc(value) + "</span><span class=\"msub\">" + esc(sub) + "</span></div>\n";
    }

    static String ratio(double v, double base, boolean lowerIsBetter) {
        if (base <= 0) {
            return "";
        }
        double x = v / base;
        String better = (lowerIsBetter ? x < 0.995 : x > 1.005) ? "better" : (lowerIsBetter ? x > 1.005 : x < 0.995)
                ? "worse" : "same";
        return String.format(Locale.ROOT, "%.2f× no host tier (%s)", x, better);
    }

    static String fmtMs(double ms) {
        if (ms >= 10_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000);
        }
        if (ms >= 1_000) {
            return String.format(Locale.ROOT, "%.2f s", ms / 1000);
        }
        return String.format(Locale.ROOT, "%.0f ms", ms);
    }

    static String ratioCell(double v) {
        int px = (int) Math.round(Math.max(0, Math.min(1, v)) * 60);
        return "<span class=\"bar\" style=\"width:" + px + "px\"></span>" + String.format(Locale.ROOT, "%.4f", v);
    }

    static String capacity(long tokens, boolean host) {
        if (tokens == Long.MAX_VALUE) {
            return "inf";
        }
        if (host && tokens == 0) {
            return "0 (none)";
        }
        return fmtInt(tokens);
    }

    /** A capacity in tokens and, with {@code kv}, memory per instance under it. */
    static String capacity(long tokens, boolean host, KvFootprint kv) {
        String t = capacity(tokens, host);
        if (kv == null || tokens == 0) {
            return esc(t);
        }
        return esc(t) + "<br/><span class=\"mem\">" + esc(kv.memory(tokens)) + "</span>";
    }

    static String fmtInt(long v) {
        if (v >= 10_000_000_000L) {
            return String.format(Locale.ROOT, "%.2f G", v / 1e9);
        }
        if (v >= 10_000_000) {
            return String.format(Locale.ROOT, "%.2f M", v / 1e6);
        }
        return String.format(Locale.ROOT, "%,d", v);
    }

    static String bytes(long b) {
        return Units.bytes(b);
    }

    static String duration(long ns) {
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

    static String percent(double v) {
        return String.format(Locale.ROOT, "%.1f%%", v * 100);
    }

    static String f1(double v) {
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

    /** Skipped nodes: the total, with the non-zero reasons in a tooltip. */
    static String skippedCell(SimResult.Backups b) {
        StringBuilder why = new StringBuilder();
        for (var e : b.skipped().entrySet()) {
            if (e.getValue() > 0) {
                why.append(why.isEmpty() ? "" : ", ").append(e.getKey().replace('_', ' ')).append(' ').append(e.getValue());
            }
        }
        return why.isEmpty() ? fmtInt(b.skippedTotal())
                : "<span title=\"" + esc(why.toString()) + "\">" + fmtInt(b.skippedTotal()) + "</span>";
    }
}
