package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.cp.GroupState;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.LongSupplier;

/**
 * The CP group's health as one controller knows it: healthy until an agreement round says otherwise (a rank declared
 * failed, ranks that diverged, a digest of commits that differed, a rank that reported the group degraded), or until
 * a sealed backup waited past its time limit for an agreement that did not answer; then degraded until the controller
 * closes. Every change is logged (WARN, one line), published as a new {@link GroupState} and set in the meters
 * {@link Metric#CP_GROUP_DEGRADED} and {@link Metric#CP_FAILED_RANKS}.
 *
 * <p>What this rank knows goes into its contributions (the health word of every section, {@link #word()}), so every
 * other rank learns it at its next round; a round's outcome itself depends only on the round's result, never on what
 * this rank happens to know when it applies it.
 *
 * <p>Threads: written by the scheduler thread; {@link #state()} is a volatile read, any thread.
 */
final class GroupHealth {
    private static final Logger LOG = LoggerFactory.getLogger(GroupHealth.class);
    private static final GroupState.Cause[] CAUSES = GroupState.Cause.values();

    private final int rank;
    private final LongSupplier clock;
    private final HiCacheMetrics metrics;
    private volatile GroupState state = GroupState.HEALTHY;
    private GroupState.Cause cause;
    private boolean divergenceCounted;
    private boolean leftOnPurpose;

    GroupHealth(int rank, LongSupplier clock, HiCacheMetrics metrics) {
        this.rank = rank;
        this.clock = clock;
        this.metrics = metrics;
    }

    /** This rank left the group itself (close, sticky error): the rounds after are degraded naming it. */
    void leftOnPurpose() {
        leftOnPurpose = true;
    }

    /** True once {@link #leftOnPurpose()} was called. */
    boolean hasLeftOnPurpose() {
        return leftOnPurpose;
    }

    /** This controller's rank. */
    int rank() {
        return rank;
    }

    /** The state as last published. Any thread. */
    GroupState state() {
        return state;
    }

    /** True once the group is degraded. Scheduler thread. */
    boolean degraded() {
        return cause != null;
    }

    /** This rank's health word: {@link Long#MAX_VALUE} while healthy, else the cause's ordinal. */
    long word() {
        return cause == null ? Long.MAX_VALUE : cause.ordinal();
    }

    /** The cause a group-minimum health word names, or null for a healthy one. */
    static GroupState.Cause causeOf(long word) {
        return word >= 0 && word < CAUSES.length ? CAUSES[(int) word] : null;
    }

    /** The reason backups in flight abort with in a group degraded for {@code c}. */
    static AbortReason abortReason(GroupState.Cause c) {
        return switch (c) {
            case RANK_FAILED -> AbortReason.RANK_FAILED;
            case DIVERGED -> AbortReason.DIVERGED;
            case AGREEMENT_TIMEOUT -> AbortReason.AGREEMENT_TIMEOUT;
        };
    }

    /** The reason backups in flight abort with now (the first cause); only while degraded. */
    AbortReason abortReason() {
        return abortReason(cause);
    }

    /**
     * Ranks diverged ({@code what} says how): counted in {@link Metric#CP_DIVERGENCES} the first time, then the group
     * is degraded. Scheduler thread.
     */
    void diverged(String what) {
        if (!divergenceCounted) {
            divergenceCounted = true;
            metrics.increment(Metric.CP_DIVERGENCES);
            LOG.warn("HiCache CP rank {}: the ranks diverged: {}", rank, what);
        }
        degrade(GroupState.Cause.DIVERGED, 0);
    }

    /**
     * Degrades the group for {@code c} (the first cause stays), adding {@code failedRanks}; logs and publishes only
     * when something changed. Scheduler thread; allocates on a change only.
     */
    void degrade(GroupState.Cause c, long failedRanks) {
        GroupState old = state;
        if (cause != null && (failedRanks & ~old.failedRanks()) == 0) {
            return;
        }
        if (cause == null) {
            cause = c;
        }
        GroupState now = new GroupState(cause, old.degraded() ? old.degradedSinceNs() : clock.getAsLong(),
            old.failedRanks() | failedRanks);
        state = now;
        metrics.set(Metric.CP_GROUP_DEGRADED, 1);
        metrics.set(Metric.CP_FAILED_RANKS, now.failedRankCount());
        LOG.warn("HiCache CP group {} on rank {} (was {}): backups and loads in flight abort, nothing commits and no "
            + "host hit is reported until the group's caches are rebuilt", now, rank, old);
    }
}
