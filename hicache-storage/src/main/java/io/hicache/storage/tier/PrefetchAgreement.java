package io.hicache.storage.tier;

import io.hicache.core.cp.RankAgreement;

/**
 * The CP group's agreement on landed prefetches, one round per prefetch in FIFO order: each rank contributes how
 * many leading positions of the head prefetch landed whole on it, and the round's result is the group minimum, the
 * prefix every rank publishes. Without a group (no agreement) the local value is the result at once.
 *
 * <p>Why not core's {@code AgreedFifo}: that loop agrees on which items are complete (a completed prefix and a first
 * failure over sequence numbers); a prefetch needs a value agreed per item (its published length), which its rounds
 * do not carry. The round protocol is the same ({@link RankAgreement}: contribute once per round, then poll for the
 * result), on a channel of its own.
 *
 * <p>A <em>degraded</em> round (the agreement declared a rank of the group failed, {@link RankAgreement.Result#degraded()}) agrees
 * on nothing: its prefetch publishes nothing, and so does every later one (every later round is degraded too).
 *
 * <p>Owned by the scheduler thread; allocation-free.
 */
final class PrefetchAgreement {
    /** {@link #tryAgree} has no result yet. */
    static final long PENDING = -1;

    private final RankAgreement agreement;
    private final int rank;
    private final RankAgreement.Result agreed = new RankAgreement.Result();
    private long round;
    private boolean roundOpen;

    /** @param agreement the group's prefetch channel, or null for a rank alone */
    PrefetchAgreement(RankAgreement agreement, int rank) {
        this.agreement = agreement;
        this.rank = rank;
    }

    /**
     * Contributes {@code localPositions} (>= 0) for the head prefetch (once per round) and returns the group's
     * minimum, 0 for a degraded round, or {@link #PENDING} while other ranks have not contributed yet; call again
     * with the same value until it answers.
     */
    long tryAgree(long localPositions) {
        if (agreement == null) {
            return localPositions;
        }
        if (!roundOpen) {
            agreement.contribute(rank, round, localPositions, Long.MAX_VALUE);
            roundOpen = true;
        }
        if (!agreement.tryResult(rank, round, agreed)) {
            return PENDING;
        }
        roundOpen = false;
        round++;
        return agreed.degraded() ? 0 : Math.max(0, agreed.minCompletedPrefix());
    }
}
