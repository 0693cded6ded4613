package io.hicache.sim;

/** When a device node is copied to the host tier (SGLang's hicache write policies). Immutable. */
public enum WritePolicy implements CliNamed {
    /** Back up every inserted node right after its forward. */
    WRITE_THROUGH("write_through"),
    /** Back up a node once it has been hit at least twice. */
    WRITE_THROUGH_SELECTIVE("write_through_selective"),
    /** Back up a node only when it is evicted from the device. */
    WRITE_BACK("write_back");

    private final String cliName;

    WritePolicy(String cliName) {
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
    public static WritePolicy byName(String name) {
        return CliNamed.byName(WritePolicy.class, "write-policy", name);
    }

    @Override
    public String toString() {
        return cliName;
    }
}
