package io.hicache.core.internal;

import io.hicache.core.cp.RankAgreement;

/**
 * Items (backups, loads) in sequence order that retire only through agreed rounds of the CP group: each round this
 * rank contributes the first sequence number it has not resolved and the first it failed; the group's result (the
 * minimum of each over the ranks) retires the completed prefix everywhere and then, if the first failure is next,
 * that item as failed. Retiring depends only on agreed values, so every rank retires the same items in the same
 * round. Backups and loads each keep one, on separate agreement channels.
 *
 * <p>Owned by the scheduler thread; allocation-free except when the ring grows (one result holder, reused every
 * round).
 */
final class AgreedFifo<T extends AgreedFifo.Item> {

    /** An item's sequence number and its local resolution on this rank. */
    interface Item {
        long seq();

        /** Not yet complete or failed on this rank. */
        boolean unresolved();

        /** Failed on this rank. */
        boolean failedLocally();
    }

    /** What happens to an item the group retired. */
    interface Retirer<T> {
        /** Complete on every rank. */
        void retireComplete(T item);

        /** The first failure of the group. */
        void retireFailed(T item);

        /**
         * A degraded round: the agreement declared a rank of the group failed ({@link RankAgreement.Result#degraded()}), so
         * nothing in flight can complete everywhere. Retires what it can (items resolved on this rank) and returns
         * how many.
         */
        int retireDegraded();

        /** This rank contributed to round {@code round} (e.g. to start timing it). */
        default void roundOpened(long round) {
        }

        /** Round {@code round}'s result was applied and retired {@code retired} items. */
        default void roundClosed(long round, int retired) {
        }
    }

    private final SeqRing<T> items = new SeqRing<>(64);
    private final RankAgreement agreement;
    private final int rank;
    private final RankAgreement.Result agreed = new RankAgreement.Result();
    private long round;
    private boolean roundOpen;

    AgreedFifo(RankAgreement agreement, int rank) {
        this.agreement = agreement;
        this.rank = rank;
    }

    void add(T item) {
        items.add(item);
    }

    int size() {
        return items.size();
    }

    T at(int i) {
        return items.at(i);
    }

    T pop() {
        return items.pop();
    }

    /**
     * Contributes this rank's state to the current round (once per round) and, if the round's result is in,
     * retires what it allows.
     *
     * @param nextSeq the sequence number the next item will get (contributed when nothing is unresolved)
     * @return items retired, or -1 when the round's result is not available yet
     */
    int runRound(long nextSeq, Retirer<T> retirer) {
        if (!roundOpen) {
            long prefix = nextSeq;
            long firstFailed = Long.MAX_VALUE;
            for (int i = 0; i < items.size(); i++) {
                T item = items.at(i);
                if (item.unresolved()) {
                    prefix = item.seq();
                    break;
                }
                if (item.failedLocally() && firstFailed == Long.MAX_VALUE) {
                    firstFailed = item.seq();
                }
            }
            retirer.roundOpened(round);
            agreement.contribute(rank, round, prefix, firstFailed);
            roundOpen = true;
        }
        if (!agreement.tryResult(rank, round, agreed)) {
            return -1;
        }
        roundOpen = false;
        long closed = round++;
        if (agreed.degraded()) {
            int retired = retirer.retireDegraded();
            retirer.roundClosed(closed, retired);
            return retired;
        }
        long completeBelow = agreed.minCompletedPrefix();
        long firstFailed = agreed.minFirstFailedSeq();
        long limit = Math.min(completeBelow, firstFailed);
        int retired = 0;
        while (items.size() > 0 && items.at(0).seq() < limit) {
            retirer.retireComplete(items.pop());
            retired++;
        }
        if (firstFailed < completeBelow && items.size() > 0 && items.at(0).seq() == firstFailed) {
            retirer.retireFailed(items.pop());
            retired++;
        }
        retirer.roundClosed(closed, retired);
        return retired;
    }
}
