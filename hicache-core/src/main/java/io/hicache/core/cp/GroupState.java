package io.hicache.core.cp;

/**
 * The health of a cache's CP group as this rank knows it ({@code HiCache.groupState()}): healthy, or degraded since
 * a moment, for a reason, with the ranks declared failed. A degraded group stays degraded until its caches are closed
 * and rebuilt (a new group): nothing commits on any rank, every backup and load in flight aborts, and {@code match}
 * reports no host hits (none could be loaded). A cache logs a WARN line and updates its meters
 * ({@code CP_GROUP_DEGRADED}, {@code CP_FAILED_RANKS}) on every change.
 *
 * <p>Immutable; thread-safe.
 *
 * @param cause           why the group is degraded, or null while it is healthy
 * @param degradedSinceNs when this rank learned it, on the cache's clock ({@code Builder.clock}); -1 while healthy
 * @param failedRanks     ranks the agreement declared failed or that left, bit {@code r} for rank {@code r} (0 when
 *                        none: a diverged group may have every rank alive)
 */
public record GroupState(Cause cause, long degradedSinceNs, long failedRanks) {

    /** Why a group is degraded. */
    public enum Cause {
        /** The agreement declared a rank failed (it crashed, stalled past the timeout, or left). */
        RANK_FAILED,
        /**
         * The ranks contributed different fingerprints for the same sequence number (their schedules diverged), or a
         * digest of what they committed differed (an agreement gave ranks different outcomes for a round).
         */
        DIVERGED,
        /** A sealed backup waited longer than the sealed time limit for an agreement that did not answer. */
        AGREEMENT_TIMEOUT
    }

    /** A healthy group. */
    public static final GroupState HEALTHY = new GroupState(null, -1, 0);

    /** True while the group is healthy. */
    public boolean healthy() {
        return cause == null;
    }

    /** True once the group is degraded. */
    public boolean degraded() {
        return cause != null;
    }

    /** Number of ranks named failed. */
    public int failedRankCount() {
        return Long.bitCount(failedRanks);
    }

    /** True if rank {@code rank} (0 to 63) was named failed. */
    public boolean isFailed(int rank) {
        return rank >= 0 && rank < 64 && (failedRanks & (1L << rank)) != 0;
    }

    @Override
    public String toString() {
        if (healthy()) {
            return "healthy";
        }
        StringBuilder ranks = new StringBuilder();
        for (long m = failedRanks; m != 0; m &= m - 1) {
            ranks.append(ranks.isEmpty() ? "" : ",").append(Long.numberOfTrailingZeros(m));
        }
        return "degraded(" + cause + ", since " + degradedSinceNs + " ns, failed ranks [" + ranks + "])";
    }
}
