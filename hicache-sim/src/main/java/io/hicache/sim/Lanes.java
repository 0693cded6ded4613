package io.hicache.sim;

/** Which CP rank owns each page of a sequence. Immutable. */
public enum Lanes implements CliNamed {
    /** Page i belongs to rank i mod cp. */
    ROUND_ROBIN("round-robin"),
    /** Equal contiguous runs of pages per rank. */
    CONTIGUOUS("contiguous"),
    /** Chunks assigned 0..cp-1 then cp-1..0, balancing causal attention. */
    ZIGZAG("zigzag");

    private final String cliName;

    Lanes(String cliName) {
        this.cliName = cliName;
    }

    @Override
    public String cliName() {
        return cliName;
    }

    /**
     * The value spelled {@code name}.
     *
     * @throws IllegalArgumentException unknown name; the message lists the valid ones
     */
    public static Lanes byName(String name) {
        return CliNamed.byName(Lanes.class, "lanes", name);
    }

    @Override
    public String toString() {
        return cliName;
    }
}
