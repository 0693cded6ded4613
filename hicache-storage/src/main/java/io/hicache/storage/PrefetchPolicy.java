package io.hicache.storage;

import java.util.Locale;

/** When a prefetch (L3 → L2) stops and its request may run (SGLang's {@code prefetch_stop_policy}). */
public enum PrefetchPolicy {
    /** The request may run at once; whatever pages have landed when it is scheduled are its storage hit. */
    BEST_EFFORT,
    /** The request waits until every page of the prefetch has landed or failed. */
    WAIT_COMPLETE,
    /** The request waits at most base + per-1,024-token allowance, then runs as under best effort. */
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
