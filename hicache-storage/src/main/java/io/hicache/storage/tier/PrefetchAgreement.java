package io.hicache.storage.tier;

import io.hicache.core.cp.RankAgreement;

/**
 * The CP group's agreement on the storage tier's rank-local progress, in rounds run by {@link StorageTier#poll} while
 * anything awaits it (again in the same poll while a result moved something): each rank contributes how many leading
 * positions of the head prefetch landed whole on it ({@link #NOT_LANDED} while its I/O runs) and its tracked writes'
 * progress ({@code TierWriter.agreementValue()}: how many, in the order they were started, are done on it, and the
 * first of those that failed). The round's result is the group minimum of each: the head prefetch ends (publishing the
 * agreed prefix) once it landed on every rank, with whether the page that stopped the prefix was found gone from the
 * store (so the speaker announces it removed, whichever rank's lane holds it); the writes done on every rank lose
 * their host protection (and, when every rank stored all of one, it is announced as stored in L3). Without a group
 * (no agreement) the local values are the result at once.
 *
 * <p>Why agree on writes: a write's host protection keeps its node from host eviction, and host eviction must pick
 * the same nodes on every rank (the trees, the host budget and every later prefetch decision depend on it), while
 * the store answers each rank in its own time. So a protection is taken on every rank at the same point (when the
 * node's write starts, even on a rank with nothing of it to put) and dropped on every rank at the same point (the
 * round in which the last rank finished it).
 *
 * <p>Rounds are opened only while the tier has prefetches or write protections pending and the last result moved
 * something, which is agreed state, so every rank opens the same rounds (a blocking collective answers each at once).
 * Why not core's {@code AgreedFifo}: that loop agrees on which items are complete; a prefetch needs a value agreed per
 * item (its published length). The round protocol is the same ({@link RankAgreement}: contribute once per round, then
 * poll for the result), on a channel of its own.
 *
 * <p>A <em>degraded</em> round (the agreement declared a rank of the group failed, {@link RankAgreement.Result#degraded()}) agrees
 * on nothing: a locally landed head prefetch publishes nothing, and so does every later one (every later round is
 * degraded too); write protections are dropped as the local writes finish.
 *
 * <p>Owned by the scheduler thread; allocation-free.
 */
final class PrefetchAgreement {
    /** The head prefetch's I/O is still running on this rank (or there is no prefetch). */
    static final long NOT_LANDED = -1;

    private final RankAgreement agreement;
    private final int rank;
    private final RankAgreement.Result agreed = new RankAgreement.Result();
    private long round;
    private boolean roundOpen;
    private long positions;
    private long gone = -1;
    private long writes;
    private boolean decided;

    /** @param agreement the group's storage-tier channel, or null for a rank alone */
    PrefetchAgreement(RankAgreement agreement, int rank) {
        this.agreement = agreement;
        this.rank = rank;
    }

    /**
     * Contributes this rank's values if no round is open, and returns true when a round's result arrived (then read
     * {@link #positions()} and {@link #writes()}); false while other ranks have not contributed yet.
     *
     * @param headPositions leading positions of the head prefetch landed whole here (>= 0), or {@link #NOT_LANDED}
     * @param stopsAtGone   true when this rank's landed prefix stops at a page its read found gone from the store
     *                      (and no write or check here has found it stored since)
     * @param localWrites   this rank's {@code TierWriter.agreementValue()} (monotonic: a minimum of it is meaningful)
     */
    boolean poll(long headPositions, boolean stopsAtGone, long localWrites) {
        if (agreement == null) {
            positions = headPositions;
            gone = -1; // a rank alone announced its gone pages as its reads found them
            writes = localWrites;
            decided = true;
            return true;
        }
        if (!roundOpen) {
            // 2n for a prefix of n stopped by a gone page, 2n + 1 otherwise (NOT_LANDED stays -1): the group minimum
            // is the shortest prefix, and at the position that stops it, gone if its owner found it so
            long value = headPositions < 0 ? NOT_LANDED : 2 * headPositions + (stopsAtGone ? 0 : 1);
            agreement.contribute(rank, round, value, localWrites);
            roundOpen = true;
        }
        if (!agreement.tryResult(rank, round, agreed)) {
            return false;
        }
        roundOpen = false;
        round++;
        if (agreed.degraded()) { // nothing is agreed any more
            positions = headPositions < 0 ? NOT_LANDED : 0;
            gone = -1;
            writes = localWrites;
            decided = false;
        } else {
            // the agreement's two group minima carry this channel's two values, in the order contributed
            long value = agreed.minCompletedPrefix();
            positions = value < 0 ? NOT_LANDED : value >> 1;
            gone = value >= 0 && (value & 1) == 0 ? positions : -1;
            writes = agreed.minFirstFailedSeq();
            decided = true;
        }
        return true;
    }

    /** The last result's positions of the head prefetch every rank landed, or {@link #NOT_LANDED}. */
    long positions() {
        return positions;
    }

    /**
     * The last result's position (counted like {@link #positions()}) that a rank's read found gone from the store and
     * that stopped the agreed prefix, or -1 (none, a rank alone, or a degraded round).
     */
    long goneAt() {
        return gone;
    }

    /** The last result's group minimum of the ranks' write progress (see {@code TierWriter.agreementValue()}). */
    long writes() {
        return writes;
    }

    /** False when the last result is a degraded round's local values (true for a rank alone's and a group's). */
    boolean decided() {
        return decided;
    }
}
