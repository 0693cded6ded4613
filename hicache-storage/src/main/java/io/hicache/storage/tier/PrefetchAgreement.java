package io.hicache.storage.tier;

import io.hicache.core.cp.RankAgreement;

/**
 * The CP group's agreement on the storage tier's rank-local progress, in rounds run by {@link StorageTier#poll} while
 * anything awaits it (again in the same poll while a result moved something). The round's result is the group
 * minimum of each of two values; without a group (no agreement) the local values are the result at once.
 *
 * <p><b>What a rank contributes per round</b> (the storage channel's one contribution format; the first value's
 * meaning follows the head prefetch's phase, which is agreed state, so every rank contributes the same kind):
 * <ol>
 *   <li><b>The head prefetch.</b> While it is landing: how many of its leading positions landed whole on this rank
 *   ({@link #NOT_LANDED} while its I/O runs here, or when there is none). The minimum is the prefix every rank
 *   holds: the prefetch ends and publishes it. When that prefix is shorter than the prefetch (some rank stopped
 *   early), the prefetch then stays at the head for its <em>gone pages</em>: round after round each rank contributes
 *   the smallest position, past the last one agreed, of a page its own reads found gone from the store (missing or
 *   corrupt though the existence check had found it) and that no write or check here has found stored since, or
 *   {@link #NO_MORE_GONE}. Each minimum names one gone page, on whichever rank's lane, which the speaker announces
 *   removed from L3 (so every gone page of every lane is announced, in order, once the group agreed on it, and none
 *   that one rank alone believes gone); {@link #NO_MORE_GONE} ends the prefetch. A prefetch that landed whole on
 *   every rank has no gone page and needs no such round.</li>
 *   <li><b>Tracked writes</b> ({@code TierWriter.agreementValue()}): how many, in the order they were started, are
 *   done on this rank, and the first of those that failed. The writes done on every rank lose their host protection
 *   (and, when every rank stored all of one, it is announced as stored in L3).</li>
 * </ol>
 *
 * <p>Why agree on writes: a write's host protection keeps its node from host eviction, and host eviction must pick
 * the same nodes on every rank (the trees, the host budget and every later prefetch decision depend on it), while
 * the store answers each rank in its own time. So a protection is taken on every rank at the same point (when the
 * node's write starts, even on a rank with nothing of it to put) and dropped on every rank at the same point (the
 * round in which the last rank finished it).
 *
 * <p>Rounds are opened only while the tier has prefetches (or a prefetch's gone pages) or write protections pending
 * and the last result moved something, which is agreed state, so every rank opens the same rounds (a blocking
 * collective answers each at once). Why not core's {@code AgreedFifo}: that loop agrees on which items are complete;
 * a prefetch needs a value agreed per item (its published length, its gone pages). The round protocol is the same
 * ({@link RankAgreement}: contribute once per round, then poll for the result), on a channel of its own.
 *
 * <p>A <em>degraded</em> round (the agreement declared a rank of the group failed, {@link RankAgreement.Result#degraded()})
 * agrees on nothing: a locally landed head prefetch publishes nothing, and so does every later one (every later round
 * is degraded too), no gone page is announced; write protections are dropped as the local writes finish.
 *
 * <p>Owned by the scheduler thread; allocation-free.
 */
final class PrefetchAgreement {
    /** The head prefetch's I/O is still running on this rank (or there is no prefetch). */
    static final long NOT_LANDED = -1;
    /** In the head prefetch's gone-pages rounds: this rank has no further gone page of it. */
    static final long NO_MORE_GONE = Long.MAX_VALUE;

    private final RankAgreement agreement;
    private final int rank;
    private final RankAgreement.Result agreed = new RankAgreement.Result();
    /** Word 0: the head prefetch's landed prefix (see {@link #poll}); word 1: the write progress. */
    private final RankAgreement.Contribution words = new RankAgreement.Contribution(2);
    private long round;
    private boolean roundOpen;
    private long head;
    private long writes;
    private boolean decided;

    /** @param agreement the group's storage-tier channel, or null for a rank alone */
    PrefetchAgreement(RankAgreement agreement, int rank) {
        this.agreement = agreement;
        this.rank = rank;
    }

    /**
     * Contributes this rank's values if no round is open, and returns true when a round's result arrived (then read
     * {@link #head()} and {@link #writes()}); false while other ranks have not contributed yet.
     *
     * @param headValue   the head prefetch's value for its phase ({@code TierPrefetcher.headValue()}; see the class
     *                    comment)
     * @param localWrites this rank's {@code TierWriter.agreementValue()} (monotonic: a minimum of it is meaningful)
     */
    boolean poll(long headValue, long localWrites) {
        if (agreement == null) {
            head = headValue;
            writes = localWrites;
            decided = true;
            return true;
        }
        if (!roundOpen) {
            words.set(0, headValue);
            words.set(1, localWrites);
            agreement.contribute(rank, round, words);
            roundOpen = true;
        }
        if (!agreement.tryResult(rank, round, agreed)) {
            return false;
        }
        roundOpen = false;
        round++;
        if (agreed.degraded()) { // nothing is agreed any more: the local values, marked undecided
            head = headValue;
            writes = localWrites;
            decided = false;
        } else {
            // the round's two words are the group minima of this channel's two values, in the order contributed
            head = agreed.word(0);
            writes = agreed.word(1);
            decided = true;
        }
        return true;
    }

    /** The last result's value of the head prefetch (the group minimum; this rank's own when not decided). */
    long head() {
        return head;
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
