package io.hicache.sim;

import io.hicache.radix.EvictionPolicy;

/**
 * Eviction order of the radix tree's device and host tiers, as spelled on the command line; each
 * maps onto an {@link EvictionPolicy} of the {@code radix} module (SGLang's strategy names).
 * Immutable.
 */
public enum Eviction implements CliNamed {
    /** Least recently used leaf first. */
    LRU("lru", EvictionPolicy.LRU),
    /** Least frequently used leaf first, ties by recency. */
    LFU("lfu", EvictionPolicy.LFU),
    /** Oldest created leaf first. */
    FIFO("fifo", EvictionPolicy.FIFO),
    /** Most recently used leaf first. */
    MRU("mru", EvictionPolicy.MRU),
    /** Newest created leaf first. */
    FILO("filo", EvictionPolicy.FILO),
    /** Segmented LRU: leaves hit fewer than twice go first. */
    SLRU("slru", EvictionPolicy.SLRU);

    private final String cliName;
    private final EvictionPolicy policy;

    Eviction(String cliName, EvictionPolicy policy) {
        this.cliName = cliName;
        this.policy = policy;
    }

    @Override
    public String cliName() {
        return cliName;
    }

    /** The radix tree's policy. */
    public EvictionPolicy policy() {
        return policy;
    }

    /**
     * The value spelled {@code name}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid ones
     */
    public static Eviction byName(String name) {
        return CliNamed.byName(Eviction.class, "eviction", name);
    }

    @Override
    public String toString() {
        return cliName;
    }
}
