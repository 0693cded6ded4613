package io.hicache.storage;

import java.util.Locale;

/** When committed host pages are written to the storage tier (L2 → L3), as SGLang's HiCache storage. */
public enum StorageWritePolicy {
    /** Every committed host page, right behind its host commit. */
    WRITE_THROUGH,
    /** Committed pages whose node's hit count reached the tier's threshold (checked at commit and on each match). */
    WRITE_THROUGH_SELECTIVE,
    /** Pages leaving the host tier (host eviction). */
    WRITE_BACK;

    /** The command-line spelling ({@code write_through}, ...). */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The policy spelled {@code name}.
     *
     * @throws IllegalArgumentException naming the valid spellings
     */
    public static StorageWritePolicy byName(String name) {
        for (StorageWritePolicy p : values()) {
            if (p.cliName().equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown storage write policy '" + name
                + "'; valid: write_through, write_through_selective, write_back");
    }
}
