package io.hicache.core;

/** Why a backup was aborted. A backup that is aborted is never published. */
public enum AbortReason {
    /** The engine cancelled the request that owned the backup. */
    REQUEST_CANCELLED,
    /** The engine preempted the request (its device pages are being reclaimed). */
    PREEMPTED,
    /** A CUDA call or copy failed on this rank. */
    CUDA_ERROR,
    /** Another rank of the CP group failed this backup. */
    RANK_FAILED,
    /** The reservation was not sealed within its lease. */
    LEASE_EXPIRED,
    /** The forward ended without storing a declared draft layer. */
    DRAFT_LAYER_MISSING,
    /** The forward ended without storing a declared target layer. */
    TARGET_LAYER_MISSING,
    /** The controller was closed while the backup was in flight. */
    SHUTDOWN,
    /** The engine aborted it for a reason of its own. */
    ENGINE,
    /**
     * An agent (submitter or completion) failed with an unexpected exception while handling the forward; the
     * error is counted ({@code AGENT_ERRORS}) and logged once per distinct error, and the agent goes on.
     */
    AGENT_ERROR,
    /**
     * The node's KV was computed in the forward that loaded its prefix from the host tier, and that load failed on
     * some rank: the prefix bytes never arrived, so the backup of what was computed over them is never published.
     */
    LOAD_FAILED,
    /**
     * The backup of a node above it (reserved while that node's own backup was pending) aborted: host copies of a
     * prefix are contiguous from the root, so a host copy with none above it is never published either. Counted
     * for each such backup besides the parent's own reason.
     */
    PARENT_ABORTED,
    /**
     * The CP group diverged: the ranks agreed on a sequence number about different backups (one rank skipped or added a
     * reservation the others made), or committed different backups in one round. Every backup in flight aborts with
     * this reason on every rank, and the group stays degraded until its caches are rebuilt.
     */
    DIVERGED,
    /**
     * The backup was sealed but its CP group did not agree on it within the sealed time limit (an agreement that does
     * not answer), so its device pages and host pages were released on this rank; or the group degraded after such a
     * timeout.
     */
    AGREEMENT_TIMEOUT;

    private static final AbortReason[] VALUES = values();

    /** Allocation-free {@code values()[ordinal]}. */
    public static AbortReason ofOrdinal(int ordinal) {
        return VALUES[ordinal];
    }

    /** Number of reasons. */
    public static int count() {
        return VALUES.length;
    }
}
