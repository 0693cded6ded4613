package io.hicache.core.internal.cp;

import io.hicache.core.cp.RankAgreement;

/**
 * The agreement of a group of one rank: every round is agreed at once with the rank's own values.
 * Thread-safe (it holds no shared state beyond the last contribution of its single rank).
 */
public final class LocalRankAgreement implements RankAgreement {
    private long round = -1;
    private long completedPrefix;
    private long firstFailedSeq;

    private LocalRankAgreement loadChannel;

    @Override
    public synchronized RankAgreement loadChannel() {
        if (loadChannel == null) {
            loadChannel = new LocalRankAgreement();
        }
        return loadChannel;
    }

    @Override
    public int groupSize() {
        return 1;
    }

    @Override
    public synchronized void contribute(int rank, long round, long completedPrefix, long firstFailedSeq) {
        if (rank != 0) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size 1");
        }
        if (round != this.round + 1) {
            throw new IllegalStateException("rank 0 contributed round " + round + " after round " + this.round
                + ": rounds must be contributed in order, once each");
        }
        this.round = round;
        this.completedPrefix = completedPrefix;
        this.firstFailedSeq = firstFailedSeq;
    }

    @Override
    public synchronized boolean tryResult(int rank, long round, Result out) {
        java.util.Objects.requireNonNull(out, "out");
        if (round != this.round) {
            return false;
        }
        out.setDecided(completedPrefix, firstFailedSeq);
        return true;
    }
}
