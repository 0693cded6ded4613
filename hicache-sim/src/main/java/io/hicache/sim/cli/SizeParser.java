package io.hicache.sim.cli;

import java.math.BigDecimal;
import java.util.Locale;

/**
 * Reads the sizes the command line takes: token counts ({@code 400k}, {@code 1.5M}, {@code inf}) and amounts of
 * memory ({@code 52GB}, {@code 48GiB}, {@code 13GB/gpu}). A suffix that could mean two things is refused with one
 * line naming both readings: a bare {@code G} (or {@code T}) on a token count (giga-tokens, or gigabytes
 * of memory?), a bare {@code K}/{@code M}/{@code G}/{@code T} on memory (decimal GB or binary GiB?). Every failure is
 * an {@link IllegalArgumentException} whose message is one line starting with the option. Stateless.
 */
final class SizeParser {

    /** A token count meaning "unlimited". */
    static final long UNLIMITED = Long.MAX_VALUE;

    private SizeParser() {
    }

    /**
     * An amount of host memory.
     *
     * @param bytes  bytes, {@link #UNLIMITED} for {@code inf}, 0 for no host tier
     * @param perGpu whether the amount is per GPU ({@code /gpu}), to be multiplied by the instance's GPUs
     * @param text   as written
     */
    record Memory(long bytes, boolean perGpu, String text) {
    }

    /**
     * A token count: digits (with optional {@code _}), an optional fraction and an optional {@code k} (10^3) or
     * {@code M} (10^6) multiplier, giving a whole number of tokens; or {@code inf} / {@code unlimited}.
     */
    static long tokens(String option, String text) {
        String t = clean(text);
        if (t.equals("inf") || t.equals("unlimited")) {
            return UNLIMITED;
        }
        String unit = trailingLetters(t);
        String number = t.substring(0, t.length() - unit.length()).trim();
        if (!unit.isEmpty() && isByteUnit(unit.toLowerCase(Locale.ROOT))) {
            throw new IllegalArgumentException(option + " takes tokens, but '" + text + "' is an amount of memory"
                    + (option.startsWith("--host") ? "; give it as --host-memory " + t
                    : "; the run header prints the KV bytes per token to convert it"));
        }
        long mult = switch (unit) {
            case "" -> 1;
            case "k", "K" -> 1_000L;
            case "m", "M" -> 1_000_000L;
            case "g", "G", "t", "T" -> {
                long m = switch (unit.toLowerCase(Locale.ROOT)) {
                    case "t" -> 1_000_000_000_000L;
                    default -> 1_000_000_000L;
                };
                BigDecimal v = decimal(option, text, number);
                throw new IllegalArgumentException(option + " " + text + " is ambiguous: '" + unit + "' could mean "
                        + String.format(Locale.ROOT, "%,d", v.multiply(BigDecimal.valueOf(m)).toBigInteger())
                        + " tokens or " + number + " " + (unit.equalsIgnoreCase("t") ? "TB" : "GB")
                        + " of memory; write " + v.multiply(BigDecimal.valueOf(m / 1_000_000L)).stripTrailingZeros()
                        .toPlainString() + "M for tokens" + (option.startsWith("--host")
                        ? ", or --host-memory " + number + (unit.equalsIgnoreCase("t") ? "TB" : "GB") + " (or "
                        + number + (unit.equalsIgnoreCase("t") ? "TiB" : "GiB") + ") for memory" : ""));
            }
            default -> throw new IllegalArgumentException(option + " must be a token count (e.g. 3000000, 400k, 1.5M) "
                    + "or inf, got '" + text + "': unknown suffix '" + unit + "'");
        };
        BigDecimal v = decimal(option, text, number);
        if (v.signum() < 0) {
            throw new IllegalArgumentException(option + " must be >= 0 tokens, got " + text);
        }
        BigDecimal tokens = v.multiply(BigDecimal.valueOf(mult));
        if (tokens.stripTrailingZeros().scale() > 0) {
            throw new IllegalArgumentException(option + " must be a whole number of tokens, got " + text + " = "
                    + tokens.stripTrailingZeros().toPlainString());
        }
        try {
            return tokens.longValueExact();
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(option + " " + text + " is more tokens than the simulator counts", e);
        }
    }

    /**
     * An amount of memory: a number with a unit (B; KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers
     * of 1024), optionally followed by {@code /gpu}; {@code 0} for no host tier; {@code inf} / {@code unlimited}.
     */
    static Memory memory(String option, String text) {
        String t = clean(text);
        if (t.equals("inf") || t.equals("unlimited")) {
            return new Memory(UNLIMITED, false, text);
        }
        boolean perGpu = false;
        String lower = t.toLowerCase(Locale.ROOT);
        if (lower.endsWith("/gpu")) {
            perGpu = true;
            t = t.substring(0, t.length() - 4).trim();
        }
        String unit = trailingLetters(t);
        String number = t.substring(0, t.length() - unit.length()).trim();
        BigDecimal v = decimal(option, text, number);
        if (v.signum() < 0) {
            throw new IllegalArgumentException(option + " must be >= 0, got " + text);
        }
        String u = unit.toLowerCase(Locale.ROOT);
        if (u.isEmpty()) {
            if (v.signum() == 0) {
                return new Memory(0, perGpu, text);
            }
            throw new IllegalArgumentException(option + " needs a unit: " + number + "GB (10^9 bytes) or " + number
                    + "GiB (2^30 bytes), got '" + text + "'");
        }
        if (u.length() == 1 && "kmgt".contains(u)) {
            int power = "kmgt".indexOf(u) + 1;
            String si = unit.toUpperCase(Locale.ROOT) + "B";
            String bin = unit.toUpperCase(Locale.ROOT) + "iB";
            throw new IllegalArgumentException(option + " " + text + " is ambiguous: " + number + " " + si + " ("
                    + String.format(Locale.ROOT, "%,d", v.multiply(BigDecimal.TEN.pow(3 * power)).toBigInteger())
                    + " bytes) or " + number + " " + bin + " (" + String.format(Locale.ROOT, "%,d",
                    v.multiply(BigDecimal.valueOf(1024).pow(power)).toBigInteger()) + " bytes); write " + number + si
                    + " or " + number + bin);
        }
        BigDecimal scale = switch (u) {
            case "b" -> BigDecimal.ONE;
            case "kb" -> BigDecimal.TEN.pow(3);
            case "mb" -> BigDecimal.TEN.pow(6);
            case "gb" -> BigDecimal.TEN.pow(9);
            case "tb" -> BigDecimal.TEN.pow(12);
            case "kib" -> BigDecimal.valueOf(1024);
            case "mib" -> BigDecimal.valueOf(1024).pow(2);
            case "gib" -> BigDecimal.valueOf(1024).pow(3);
            case "tib" -> BigDecimal.valueOf(1024).pow(4);
            default -> throw new IllegalArgumentException(option + " must be an amount of memory such as 52GB, 48GiB "
                    + "or 13GB/gpu, got '" + text + "': unknown unit '" + unit + "'");
        };
        try {
            return new Memory(v.multiply(scale).setScale(0, java.math.RoundingMode.DOWN).longValueExact(), perGpu,
                    text);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(option + " " + text + " is more memory than the simulator counts", e);
        }
    }

    private static String clean(String text) {
        return text == null ? "" : text.trim().replace("_", "");
    }

    private static boolean isByteUnit(String u) {
        return switch (u) {
            case "b", "kb", "mb", "gb", "tb", "kib", "mib", "gib", "tib", "bytes" -> true;
            default -> false;
        };
    }

    private static String trailingLetters(String t) {
        int i = t.length();
        while (i > 0 && Character.isLetter(t.charAt(i - 1))) {
            i--;
        }
        return t.substring(i);
    }

    private static BigDecimal decimal(String option, String text, String number) {
        if (number.isEmpty() || !number.matches("[+-]?(\\d+(\\.\\d*)?|\\.\\d+)")) {
            throw new IllegalArgumentException(option + " must be a number with an optional unit, got '" + text + "'");
        }
        return new BigDecimal(number);
    }
}
