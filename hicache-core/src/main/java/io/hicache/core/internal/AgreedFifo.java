package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.cp.GroupState;
import io.hicache.core.cp.RankAgreement;

/**
 * Items (backups, loads) in sequence order that retire only through agreed rounds of the CP group: one section of
 * an {@link AgreementChannel}'s rounds (layout in {@link RankAgreement}). Each round this rank contributes the first
 * sequence number it has not resolved, the first it failed, the first not yet retired, a digest of what it committed
 * when it applied its last round, what it knows of the group's health, and a fingerprint of each of the next
 * {@link RankAgreement#WINDOW} items. The group's result (the element-wise minimum) retires the completed prefix
 * everywhere and then, if the first failure is next, that item as failed, unless the fingerprints, the first items
 * not retired or the digests differ between ranks (the ranks agree about different things: every item in flight
 * aborts {@link AbortReason#DIVERGED} and the group is degraded) or a rank reported the group degraded. Retiring
 * depends only on the round's result, so every rank retires the same items in the same round. Backups and loads each
 * keep one.
 *
 * <p>Owned by the scheduler thread; allocation-free except when the ring grows.
 */
final class AgreedFifo<T extends AgreedFifo.Item> {
    static final int COMPLETED = 0;
    static final int FAILED = 1;
    static final int HEAD = 2;
    static final int DIGEST = 4;
    static final int HEALTH = 6;
    static final int FINGERPRINTS = 7;

    /** An item's sequence number, fingerprint and local resolution on this rank. */
    interface Item {
        long seq();

        /** What this item is, the same on every rank for the same sequence number ({@link Fingerprints}). */
        long fingerprint();

        /** Not yet complete or failed on this rank. */
        boolean unresolved();

        /** Failed on this rank. */
        boolean failedLocally();
    }

    /** What happens to an item the group retired. */
    interface Retirer<T> {
        /** Complete on every rank; returns true if it was committed (published, attached) on this rank. */
        boolean retireComplete(T item);

        /** The first failure of the group. */
        void retireFailed(T item);

        /**
         * A degraded round (a rank declared failed, ranks that diverged, a rank that reported the group degraded):
         * nothing in flight can complete everywhere, so everything aborts with {@code reason}. Retires what it can
         * (items resolved on this rank) and returns how many.
         */
        int retireDegraded(AbortReason reason);

        /**
         * The digests of the last round's commits differed: some rank committed what another did not (an agreement
         * gave ranks different outcomes, or a sealed backup was released here past its time limit). Withdraws what
         * this rank committed in its last round, so no rank serves it.
         */
        default void revokeLastCommits() {
        }

        /** A round is being applied: what it commits is the "last round" from now on. */
        default void newRound() {
        }

        /** A name for log lines ("backup", "load"). */
        String itemName();
    }

    private final SeqRing<T> items = new SeqRing<>(64);
    private final Retirer<T> retirer;
    private final GroupHealth health;
    private long nextSeq;
    /** Digest of what this rank committed when it applied its last round (0: nothing). */
    private long digest;
    private int retired;

    AgreedFifo(Retirer<T> retirer, GroupHealth health) {
        this.retirer = retirer;
        this.health = health;
    }

    /** The sequence number the next item gets. */
    long nextSeq() {
        return nextSeq;
    }

    /** Adds the next item (its seq must be {@link #nextSeq()}). */
    void add(T item) {
        if (item.seq() != nextSeq) {
            throw new IllegalStateException("item seq " + item.seq() + " added where " + nextSeq + " was next");
        }
        items.add(item);
        nextSeq++;
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

    /** Items retired since the last call (and resets the count). */
    int takeRetired() {
        int n = retired;
        retired = 0;
        return n;
    }

    /** The first sequence number not retired: the head item's, or the next one when empty. */
    private long head() {
        return items.size() > 0 ? items.at(0).seq() : nextSeq;
    }

    /** Writes this rank's section into {@code c} from word {@code off} ({@link RankAgreement#SECTION_WORDS} words). */
    void fill(RankAgreement.Contribution c, int off) {
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
        long head = head();
        c.set(off + COMPLETED, prefix);
        c.set(off + FAILED, firstFailed);
        c.set(off + HEAD, head);
        c.set(off + HEAD + 1, ~head);
        c.set(off + DIGEST, digest);
        c.set(off + DIGEST + 1, ~digest);
        c.set(off + HEALTH, health.word());
        int known = Math.min(items.size(), RankAgreement.WINDOW);
        for (int k = 0; k < RankAgreement.WINDOW; k++) {
            long f = k < known ? items.at(k).fingerprint() : Long.MAX_VALUE;
            c.set(off + FINGERPRINTS + 2 * k, f);
            c.set(off + FINGERPRINTS + 2 * k + 1, k < known ? ~f : Long.MAX_VALUE);
        }
    }

    /**
     * Applies a round's result to this section (words from {@code off} of a decided result), retiring what it
     * allows on this rank exactly as on every other.
     *
     * @return items retired
     */
    int apply(RankAgreement.Result result, int off) {
        int n;
        if (result.degraded()) {
            if ((result.failedRanks() & (1L << health.rank())) != 0 && !health.hasLeftOnPurpose()) {
                // the group declared this rank failed: the last round it applied (if the others degraded it, as after
                // a stall across the timeout) may have committed here what no other rank did
                retirer.revokeLastCommits();
            }
            retirer.newRound();
            health.degrade(GroupState.Cause.RANK_FAILED, result.failedRanks());
            n = retirer.retireDegraded(health.abortReason());
            digest = 0;
        } else {
            n = applyDecided(result, off);
        }
        retired += n;
        return n;
    }

    private int applyDecided(RankAgreement.Result r, int off) {
        long head = head();
        long completeBelow = r.word(off + COMPLETED);
        long firstFailed = r.word(off + FAILED);
        String diverged = null;
        if (r.word(off + DIGEST) != ~r.word(off + DIGEST + 1)) {
            // some rank committed in its last round what another did not: withdraw ours before anything else
            retirer.revokeLastCommits();
            diverged = "the ranks committed different " + retirer.itemName() + "s in the round before";
        } else if (r.word(off + HEAD) != ~r.word(off + HEAD + 1) || r.word(off + HEAD) != head) {
            diverged = "the ranks' first unretired " + retirer.itemName() + "s differ (" + r.word(off + HEAD) + " to "
                + ~r.word(off + HEAD + 1) + ")";
        }
        long windowEnd = head + RankAgreement.WINDOW;
        long limit = Math.min(Math.min(completeBelow, firstFailed), windowEnd);
        boolean failNext = firstFailed < completeBelow && firstFailed < windowEnd;
        long checkEnd = failNext ? firstFailed + 1 : limit;
        for (long s = head; diverged == null && s < checkEnd; s++) {
            int k = (int) (s - head);
            if (r.word(off + FINGERPRINTS + 2 * k) != ~r.word(off + FINGERPRINTS + 2 * k + 1)) {
                diverged = retirer.itemName() + " " + s + " is not the same " + retirer.itemName() + " on every rank";
            }
        }
        GroupState.Cause reported = GroupHealth.causeOf(r.word(off + HEALTH));
        digest = 0;
        retirer.newRound();
        if (diverged != null) {
            health.diverged(diverged);
            return retirer.retireDegraded(AbortReason.DIVERGED);
        }
        if (reported != null) {
            health.degrade(reported, 0);
            return retirer.retireDegraded(health.abortReason());
        }
        int n = 0;
        long d = 0;
        while (items.size() > 0 && items.at(0).seq() < limit) {
            T item = items.pop();
            if (retirer.retireComplete(item)) {
                d = Fingerprints.digest(d, item.seq(), item.fingerprint());
            }
            n++;
        }
        if (failNext && items.size() > 0 && items.at(0).seq() == firstFailed) {
            retirer.retireFailed(items.pop());
            n++;
        }
        digest = d;
        return n;
    }
}
