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

    /**
     * Why the write policy passed over a node the engine inserted ({@code reserveByPolicy}, write-back eviction):
     * every node is either backed up or counted under one of these, in
     * {@link io.hicache.core.metrics.MetricsSnapshot#skippedBy}. Counted once per node per pass, so a node skipped
     * now and backed up by a later pass is counted once here and once in {@code BACKUPS_RESERVED}.
     */
    public enum SkipReason {
        /** The host pool had no room even after one host eviction. */
        NO_ROOM,
        /** Not hit often enough yet ({@link #WRITE_THROUGH_SELECTIVE} below its hit threshold). */
        BELOW_HIT_THRESHOLD,
        /** A node above it on the path was skipped: host copies of a prefix are contiguous from the root. */
        ANCESTOR_SKIPPED,
        /** {@link #WRITE_BACK}: copied when the device evicts it, not when it is inserted. */
        WRITE_BACK,
        /** It holds no device pages (nothing to copy). */
        NOT_ON_DEVICE;

        private static final SkipReason[] VALUES = values();

        /** Allocation-free {@code values()[ordinal]}. */
        public static SkipReason ofOrdinal(int ordinal) {
            return VALUES[ordinal];
        }

        /** Number of reasons. */
        public static int count() {
            return VALUES.length;
        }
    }
}
