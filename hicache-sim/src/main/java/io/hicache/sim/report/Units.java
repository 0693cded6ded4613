package io.hicache.sim.report;

import java.util.Locale;

/**
 * How reports write sizes and times: memory in decimal units (GB = 10^9 bytes, the unit GPU and DIMM datasheets
 * and SGLang's {@code --hicache-size} use), token counts in full or short ({@code 400k}, {@code 2.26M}).
 * {@link Long#MAX_VALUE} stands for unlimited throughout. Stateless.
 */
public final class Units {
    private Units() {
    }

    /** Bytes as {@code 52.4 GB}, {@code 1.47 TB}, {@code 512 MB}; {@code unlimited} for {@link Long#MAX_VALUE}. */
    public static String bytes(long b) {
        if (b == Long.MAX_VALUE) {
            return "unlimited";
        }
        double v = b;
        if (v >= 1e12) {
            return String.format(Locale.ROOT, "%.2f TB", v / 1e12);
        }
        if (v >= 1e10) {
            return String.format(Locale.ROOT, "%.1f GB", v / 1e9);
        }
        if (v >= 1e9) {
            return String.format(Locale.ROOT, "%.2f GB", v / 1e9);
        }
        if (v >= 1e6) {
            return String.format(Locale.ROOT, "%.0f MB", v / 1e6);
        }
        if (v >= 1e3) {
            return String.format(Locale.ROOT, "%.0f KB", v / 1e3);
        }
        return b + " B";
    }

    /** A token count in full ({@code 2,262,544}); {@code inf} for {@link Long#MAX_VALUE}. */
    public static String tokens(long t) {
        return t == Long.MAX_VALUE ? "inf" : String.format(Locale.ROOT, "%,d", t);
    }

    /** A token count short ({@code 400k}, {@code 2.26M}, {@code 850}); {@code inf} for {@link Long#MAX_VALUE}. */
    public static String tokensShort(long t) {
        if (t == Long.MAX_VALUE) {
            return "inf";
        }
        if (t >= 1_000_000) {
            return trim(String.format(Locale.ROOT, t >= 100_000_000 ? "%.0f" : t >= 10_000_000 ? "%.1f" : "%.2f",
                    t / 1e6)) + "M";
        }
        if (t >= 1_000) {
            return trim(String.format(Locale.ROOT, t >= 100_000 ? "%.0f" : "%.1f", t / 1e3)) + "k";
        }
        return Long.toString(t);
    }

    /** Milliseconds as {@code 273 ms}, {@code 37.9 ms}, {@code 2.41 s}, {@code 19.5 min}, {@code 1.6 h}. */
    public static String ms(double ms) {
        if (ms >= 3_600_000) {
            return String.format(Locale.ROOT, "%.1f h", ms / 3_600_000);
        }
        if (ms >= 120_000) {
            return String.format(Locale.ROOT, "%.1f min", ms / 60_000);
        }
        if (ms >= 10_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000);
        }
        if (ms >= 1_000) {
            return String.format(Locale.ROOT, "%.2f s", ms / 1000);
        }
        if (ms >= 100) {
            return String.format(Locale.ROOT, "%.0f ms", ms);
        }
        return String.format(Locale.ROOT, "%.1f ms", ms);
    }

    private static String trim(String s) {
        if (!s.contains(".")) {
            return s;
        }
        s = s.replaceAll("0+$", "");
        return s.endsWith(".") ? s.substring(0, s.length() - 1) : s;
    }
}
