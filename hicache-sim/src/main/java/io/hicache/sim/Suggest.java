package io.hicache.sim;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * "Did you mean" for mistyped option names and values: the candidates within a small edit distance of what was
 * typed (case, {@code -} versus {@code _} and leading dashes ignored; transposed letters count one edit), or that
 * it is a prefix of. Used for every unknown option (from the command's own option list, so an option added later
 * is covered without more code) and by every name lookup ({@link CliNamed#byName}, {@link OptionSpellings}, the
 * presets). Stateless.
 */
public final class Suggest {
    private Suggest() {
    }

    /** {@code  (did you mean 'x'?)} (or {@code 'x' or 'y'}) for the nearest candidates, or the empty string. */
    public static String didYouMean(String given, Iterable<String> candidates) {
        List<String> near = near(given, candidates);
        if (near.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder(" (did you mean ");
        for (int i = 0; i < near.size(); i++) {
            b.append(i == 0 ? "" : i == near.size() - 1 ? " or " : ", ").append('\'').append(near.get(i)).append('\'');
        }
        return b.append("?)").toString();
    }

    /** The nearest candidates to {@code given} (up to three, equally near); empty when none is near. */
    public static List<String> near(String given, Iterable<String> candidates) {
        if (given == null || given.isBlank()) {
            return List.of();
        }
        String g = loose(given);
        record Scored(String name, int score) {
        }
        List<Scored> out = new ArrayList<>();
        for (String c : candidates) {
            String l = loose(c);
            if (l.equals(g)) {
                continue;
            }
            int d = distance(g, l);
            int allowed = Math.max(1, Math.min(3, Math.max(g.length(), l.length()) / 4));
            boolean prefix = g.length() >= 3 && l.startsWith(g);
            if (d <= allowed || prefix) {
                out.add(new Scored(c, prefix ? Math.min(d, allowed) : d));
            }
        }
        out.sort(Comparator.comparingInt(Scored::score).thenComparing(Scored::name));
        List<String> names = new ArrayList<>();
        for (int i = 0; i < out.size() && names.size() < 3; i++) {
            if (out.get(i).score() > out.getFirst().score()) {
                break; // only the nearest
            }
            if (!names.contains(out.get(i).name())) {
                names.add(out.get(i).name());
            }
        }
        return names;
    }

    /** Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent transpositions. */
    static int distance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) {
            d[i][0] = i;
        }
        for (int j = 0; j <= b.length(); j++) {
            d[0][j] = j;
        }
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                int v = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
                    v = Math.min(v, d[i - 2][j - 2] + 1);
                }
                d[i][j] = v;
            }
        }
        return d[a.length()][b.length()];
    }

    private static String loose(String s) {
        String t = s.toLowerCase(Locale.ROOT).replace('_', '-');
        int i = 0;
        while (i < t.length() && t.charAt(i) == '-') {
            i++;
        }
        return t.substring(i);
    }
}
