package io.hicache.sim;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * How much a cached page counts in the {@code cache-aware} and {@code kv-events} routers' overlap, by the tier that
 * holds it ({@code --tier-weights device=1,host=0.75,l3=0.25}): a page on the device counts {@link #device} pages, one
 * only on the host {@link #host} (it still costs a load back), one only in L3 storage {@link #l3} (a read, then a
 * load). A page held on several tiers counts its best weight. NVIDIA Dynamo's router scores overlap this way
 * ({@code --router-host-cache-hit-weight} 0.75, {@code --router-disk-cache-hit-weight} 0.25); llm-d's precise scorer
 * weighs GPU 1.0 and CPU 0.8. The default, {@link #UNIT}, counts every tier a router knows as 1. Immutable.
 *
 * @param device weight of a page on the device, in [0, 1]
 * @param host   weight of a page on the host tier only, in [0, 1]
 * @param l3     weight of a page in L3 storage only, in [0, 1] (only {@code kv-events} sees L3)
 */
public record TierWeights(double device, double host, double l3) {
    /** Every tier counts 1: the routers' behaviour without {@code --tier-weights}. */
    public static final TierWeights UNIT = new TierWeights(1, 1, 1);
    /** Dynamo's defaults: device 1, host 0.75, disk 0.25. */
    public static final TierWeights DYNAMO = new TierWeights(1, 0.75, 0.25);

    /**
     * Checks every weight.
     *
     * @throws IllegalArgumentException a weight outside [0, 1] (or not a number); the message names the tier
     */
    public TierWeights {
        check("device", device);
        check("host", host);
        check("l3", l3);
    }

    private static void check(String tier, double w) {
        if (!(w >= 0 && w <= 1)) {
            throw new IllegalArgumentException("--tier-weights: the weight of " + tier + " must be in [0, 1], got "
                    + w);
        }
    }

    /**
     * Parses {@code tier=weight[,tier=weight...]} with tiers {@code device} (alias {@code gpu}), {@code host}
     * ({@code cpu}) and {@code l3} ({@code disk}, {@code storage}); a tier not named keeps weight 1.
     *
     * @throws IllegalArgumentException an unknown tier, a malformed pair, a tier named twice, or a weight outside
     *                                  [0, 1]; one line naming what is wrong
     */
    public static TierWeights parse(String spec) {
        if (spec == null || spec.isBlank()) {
            throw new IllegalArgumentException("--tier-weights: expected tier=weight pairs such as "
                    + "device=1,host=0.75,l3=0.25, got '" + spec + "'");
        }
        double[] w = {Double.NaN, Double.NaN, Double.NaN};
        for (String pair : spec.split(",", -1)) {
            int eq = pair.indexOf('=');
            if (eq <= 0 || eq == pair.length() - 1) {
                throw new IllegalArgumentException("--tier-weights: expected tier=weight, got '" + pair.trim()
                        + "' (as in device=1,host=0.75,l3=0.25)");
            }
            String tier = pair.substring(0, eq).trim().toLowerCase(Locale.ROOT);
            int i = switch (tier) {
                case "device", "gpu" -> 0;
                case "host", "cpu" -> 1;
                case "l3", "disk", "storage" -> 2;
                default -> throw new IllegalArgumentException("--tier-weights: unknown tier '" + tier
                        + "'; valid tiers: device, host, l3");
            };
            if (!Double.isNaN(w[i])) {
                throw new IllegalArgumentException("--tier-weights: tier '" + tier + "' given twice");
            }
            String value = pair.substring(eq + 1).trim();
            try {
                w[i] = Double.parseDouble(value);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--tier-weights: the weight of " + tier + " must be a number in "
                        + "[0, 1], got '" + value + "'", e);
            }
            if (Double.isNaN(w[i])) {
                throw new IllegalArgumentException("--tier-weights: the weight of " + tier + " must be in [0, 1], "
                        + "got NaN");
            }
        }
        return new TierWeights(Double.isNaN(w[0]) ? 1 : w[0], Double.isNaN(w[1]) ? 1 : w[1],
                Double.isNaN(w[2]) ? 1 : w[2]);
    }

    /**
     * The weight of a page held on the tiers of {@code mask} (bit 0 device, bit 1 host, bit 2 L3): the best of
     * theirs, 0 for none.
     */
    public double ofMask(int mask) {
        double best = 0;
        if ((mask & 1) != 0) {
            best = device;
        }
        if ((mask & 2) != 0) {
            best = Math.max(best, host);
        }
        if ((mask & 4) != 0) {
            best = Math.max(best, l3);
        }
        return best;
    }

    /** Whether every weight is 1 (the routers then count pages as they always did). */
    public boolean isUnit() {
        return device == 1 && host == 1 && l3 == 1;
    }

    /** The weights by tier name, for the run's JSON ({@code tier_weights}). */
    public Map<String, Double> asMap() {
        Map<String, Double> m = new LinkedHashMap<>();
        m.put("device", device);
        m.put("host", host);
        m.put("l3", l3);
        return m;
    }

    /** {@code device=1,host=0.75,l3=0.25}: the spelling {@link #parse} reads. */
    @Override
    public String toString() {
        return String.format(Locale.ROOT, "device=%s,host=%s,l3=%s", fmt(device), fmt(host), fmt(l3));
    }

    private static String fmt(double w) {
        return w == Math.rint(w) ? Long.toString((long) w) : Double.toString(w);
    }
}
