package io.hicache.sim;

import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;

import java.util.Locale;
import java.util.function.Function;

/**
 * Command-line and report spellings of the core options the simulator passes to the controller unchanged:
 * {@link WritePolicy} ({@code write_through}, {@code write_through_selective}, {@code write_back}, as SGLang's
 * {@code hicache_write_policy}) and {@link OwnerLanes} ({@code round-robin}, {@code contiguous},
 * {@code zigzag}). Stateless; thread-safe.
 */
public final class CoreNames {
    private CoreNames() {
    }

    /** The spelling of {@code policy}, e.g. {@code write_through}. */
    public static String of(WritePolicy policy) {
        return policy.name().toLowerCase(Locale.ROOT);
    }

    /** The spelling of {@code lanes}, e.g. {@code round-robin}. */
    public static String of(OwnerLanes lanes) {
        return lanes.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * The write policy spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static WritePolicy writePolicy(String name) {
        return byName(WritePolicy.values(), CoreNames::of, "write-policy", name);
    }

    /**
     * The lane strategy spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static OwnerLanes lanes(String name) {
        return byName(OwnerLanes.values(), CoreNames::of, "lanes", name);
    }

    private static <E> E byName(E[] values, Function<E, String> spelling, String what, String name) {
        StringBuilder valid = new StringBuilder();
        for (E e : values) {
            if (spelling.apply(e).equalsIgnoreCase(name)) {
                return e;
            }
            valid.append(valid.isEmpty() ? "" : ", ").append(spelling.apply(e));
        }
        throw new IllegalArgumentException("unknown " + what + " '" + name + "'; valid values: " + valid);
    }
}
