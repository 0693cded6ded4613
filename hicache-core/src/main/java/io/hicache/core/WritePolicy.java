package io.hicache.core;

/**
 * When a device-resident node is backed up to host memory (SGLang's {@code hicache_write_policy}).
 */
public enum WritePolicy {
    /** Back up every inserted node on its first hit (hit threshold 1), during the forward that computed it. */
    WRITE_THROUGH,
    /** Back up a node once it has been hit {@code hitThreshold} times (default 2). */
    WRITE_THROUGH_SELECTIVE,
    /** Back up only when the device evicts a node that has no host copy, all layers after the forward. */
    WRITE_BACK;

    /** Parses {@code write_through}, {@code write_through_selective}, {@code write_back} (case-insensitive, '-' or '_'). */
    public static WritePolicy parse(String text) {
        String t = text.trim().toUpperCase(java.util.Locale.ROOT).replace('-', '_');
        for (WritePolicy p : values()) {
            if (p.name().equals(t)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown write policy '" + text
            + "': expected write_through, write_through_selective or write_back");
    }
}
