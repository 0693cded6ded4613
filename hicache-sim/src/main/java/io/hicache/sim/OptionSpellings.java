package io.hicache.sim;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

import java.util.Locale;
import java.util.function.Function;

/**
 * Command-line and report spellings of the core options the simulator passes to the controller unchanged:
 * {@link WritePolicy} ({@code write_through}, {@code write_through_selective}, {@code write_back}, as SGLang's
 * {@code hicache_write_policy}), {@link OwnerLanes} ({@code round-robin}, {@code contiguous},
 * {@code zigzag}, {@code striped-zigzag}) and {@link EvictionPolicy} ({@code lru}, {@code lfu}, ..., SGLang's strategy names), and of the
 * storage tier's {@link StorageWritePolicy} and {@link PrefetchPolicy} (SGLang's spellings too). Parsing
 * ignores case and takes {@code -} and {@code _} alike ({@code write-back}, {@code previous_batch}), since the other
 * options of the command line are spelled with hyphens. Stateless; thread-safe.
 */
public final class OptionSpellings {
    private OptionSpellings() {
    }

    /** The spelling of {@code policy}, e.g. {@code write_through}. */
    public static String of(WritePolicy policy) {
        return policy.name().toLowerCase(Locale.ROOT);
    }

    /** The spelling of {@code lanes}, e.g. {@code round-robin}. */
    public static String of(OwnerLanes lanes) {
        return lanes.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The spelling of {@code policy}, e.g. {@code lru}. */
    public static String of(EvictionPolicy policy) {
        return policy.name().toLowerCase(Locale.ROOT);
    }

    /** The spelling of {@code overlap}, e.g. {@code same-forward}. */
    public static String of(LoadOverlap overlap) {
        return overlap.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /**
     * The load overlap spelled {@code name} (case-insensitive): {@code same-forward} or {@code previous-batch}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static LoadOverlap loadOverlap(String name) {
        return byName(LoadOverlap.values(), OptionSpellings::of, "load-overlap", name);
    }

    /**
     * The write policy spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static WritePolicy writePolicy(String name) {
        return byName(WritePolicy.values(), OptionSpellings::of, "write-policy", name);
    }

    /**
     * The lane strategy spelled {@code name} (case-insensitive).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static OwnerLanes lanes(String name) {
        return byName(OwnerLanes.Standard.values(), OptionSpellings::of, "lanes", name);
    }

    /**
     * The eviction policy spelled {@code name} (case-insensitive): {@code lru}, {@code lfu}, {@code fifo}, {@code mru},
     * {@code filo} or {@code slru} ({@code priority} is not offered: trace requests carry no priority).
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static EvictionPolicy eviction(String name) {
        return byName(EVICTIONS, OptionSpellings::of, "eviction", name);
    }

    private static final EvictionPolicy[] EVICTIONS = java.util.Arrays.stream(EvictionPolicy.values())
            .filter(p -> p != EvictionPolicy.PRIORITY).toArray(EvictionPolicy[]::new);

    private static <E> E byName(E[] values, Function<E, String> spelling, String what, String name) {
        StringBuilder valid = new StringBuilder();
        java.util.List<String> names = new java.util.ArrayList<>();
        String wanted = loose(name);
        for (E e : values) {
            if (loose(spelling.apply(e)).equals(wanted)) {
                return e;
            }
            valid.append(valid.isEmpty() ? "" : ", ").append(spelling.apply(e));
            names.add(spelling.apply(e));
        }
        throw new IllegalArgumentException("unknown " + what + " '" + name + "'" + Suggest.didYouMean(name, names)
                + "; valid values: " + valid);
    }

    /**
     * The storage tier's write policy spelled {@code name} (case-insensitive): {@code write_through},
     * {@code write_through_selective} or {@code write_back}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static StorageWritePolicy storageWritePolicy(String name) {
        return byName(StorageWritePolicy.values(), StorageWritePolicy::cliName, "storage write policy", name);
    }

    /**
     * The storage tier's prefetch stop policy spelled {@code name} (case-insensitive): {@code timeout},
     * {@code wait_complete} or {@code best_effort}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid spellings
     */
    public static PrefetchPolicy prefetchPolicy(String name) {
        return byName(PrefetchPolicy.values(), PrefetchPolicy::cliName, "prefetch policy", name);
    }

    /** Case and the choice of {@code -} or {@code _} between words do not matter: {@code write-back} = {@code write_back}. */
    private static String loose(String name) {
        return name.toLowerCase(Locale.ROOT).replace('_', '-');
    }
}
