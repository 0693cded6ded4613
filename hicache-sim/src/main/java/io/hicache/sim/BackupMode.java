package io.hicache.sim;

/** How backup copies are issued relative to the forward pass. Immutable. */
public enum BackupMode implements CliNamed {
    /** Layer by layer as each layer's KV is stored, overlapping later layers. */
    LAYERED("layered"),
    /** All layers after the forward (upstream SGLang's behaviour). */
    ALL_LAYERS("all-layers"),
    /** No backup: no host tier is written (baseline). */
    NONE("none");

    private final String cliName;

    BackupMode(String cliName) {
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
    public static BackupMode byName(String name) {
        return CliNamed.byName(BackupMode.class, "backup-mode", name);
    }

    @Override
    public String toString() {
        return cliName;
    }
}
