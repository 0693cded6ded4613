package io.hicache.core.internal.cp;

import io.hicache.core.cp.RankAgreement;

/**
 * The agreement of a group of one rank: every round is decided at once with the rank's own words. After
 * {@link #leave} every later round is degraded. Thread-safe (one monitor; it holds only its rank's last contribution).
 */
public final class LocalRankAgreement implements RankAgreement {
    private final long[] words = new long[MAX_WORDS];
    private int width;
    private long round = -1;
    private long degradedFrom = Long.MAX_VALUE;

    @Override
    public int groupSize() {
        return 1;
    }

    @Override
    public synchronized void contribute(int rank, long round, Contribution contribution) {
        checkRank(rank);
        if (round != this.round + 1) {
            throw new IllegalStateException("rank 0 contributed round " + round + " after round " + this.round
                + ": rounds must be contributed in order, once each");
        }
        this.round = round;
        this.width = contribution.width();
        contribution.copyTo(words, 0);
    }

    @Override
    public synchronized boolean tryResult(int rank, long round, Result out) {
        java.util.Objects.requireNonNull(out, "out");
        checkRank(rank);
        if (round >= degradedFrom && round <= this.round) {
            out.setDegraded(1L);
            return true;
        }
        if (round != this.round) {
            return false;
        }
        out.setDecided(words, 0, width);
        return true;
    }

    @Override
    public synchronized void leave(int rank) {
        checkRank(rank);
        degradedFrom = Math.min(degradedFrom, round + 1);
    }

    /** A group of one waits for nobody: 0. */
    @Override
    public long failureDetectionNs() {
        return 0;
    }

    private static void checkRank(int rank) {
        if (rank != 0) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size 1");
        }
    }
}
