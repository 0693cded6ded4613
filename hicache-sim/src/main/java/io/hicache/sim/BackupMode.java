package io.hicache.sim;

/** How backup copies are issued relative to the forward pass. Immutable. */
public enum BackupMode implements CliNamed {
    /** Layer by layer as each layer's KV is stored, overlapping later layers. */
    LAYERED("layered", io.hicache.core.BackupMode.LAYERED),
    /** All layers after the forward (upstream SGLang's behaviour). */
    ALL_LAYERS("all-layers", io.hicache.core.BackupMode.ALL_LAYERS),
    /** No backup: no host tier is written (baseline); the simulator's own value. */
    NONE("none", null);

    private final String cliName;
    private final io.hicache.core.BackupMode core;

    BackupMode(String cliName, io.hicache.core.BackupMode core) {
        this.cliName = cliName;
        this.core = core;
    }

    /** The controller's backup mode, or null for {@link #NONE}. */
    public io.hicache.core.BackupMode core() {
        return core;
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
