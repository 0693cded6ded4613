package io.hicache.storage;

import java.util.Locale;

/** When a prefetch (L3 → L2) stops and its request may run (SGLang's {@code prefetch_stop_policy}). */
public enum PrefetchPolicy {
    /**
     * The request may run at once: with the admission pattern {@code if (p == null || p.mayRun())} it runs without
     * the prefetch, which is then abandoned (a hit only where the engine schedules it later, once the prefetch ended).
     */
    BEST_EFFORT,
    /** The request waits until every page of the prefetch has landed or failed. */
    WAIT_COMPLETE,
    /**
     * The request waits until the prefetch ended or at most base + per-1,024-token allowance, then runs without it
     * (abandoned). The default ({@link StorageTierConfig#DEFAULT}).
     */
    TIMEOUT;

    /** The command-line spelling ({@code best_effort}, ...). */
    public String cliName() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The policy spelled {@code name}.
     *
     * @throws IllegalArgumentException naming the valid spellings
     */
    public static PrefetchPolicy byName(String name) {
        for (PrefetchPolicy p : values()) {
            if (p.cliName().equals(name)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown prefetch policy '" + name
                + "'; valid: best_effort, wait_complete, timeout");
    }
}
