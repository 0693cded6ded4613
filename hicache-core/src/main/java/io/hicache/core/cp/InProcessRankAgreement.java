package io.hicache.core.cp;

/**
 * Agreement among the ranks of a CP group that live in one JVM: ranks on their own threads, or ranks
 * stepped one after another by a single thread (the simulator and the deterministic tests). Both work
 * because the protocol never blocks: a rank contributes, then polls for the result.
 *
 * <p>Rounds are kept in a ring of {@value #RING} slots; a rank can be at most one round ahead of the slowest
 * rank that has not yet read a result (it cannot contribute round k+1 before reading round k, and round k
 * completes only when every rank contributed it), so the rounds live at once never share a slot.
 *
 * <p>Thread-safe: one monitor guards the ring; no allocation after construction.
 */
public final class InProcessRankAgreement implements RankAgreement {
    private static final int RING = 4;

    private final int size;
    private final long[] slotRound = new long[RING];
    private final int[] slotContributions = new int[RING];
    private final long[] slotMinCompleted = new long[RING];
    private final long[] slotMinFailed = new long[RING];
    private final long[] lastRoundOfRank;
    private InProcessRankAgreement loadChannel;

    /** A group of {@code size} ranks, numbered 0..size-1. */
    public InProcessRankAgreement(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("group size " + size + " must be at least 1");
        }
        this.size = size;
        this.lastRoundOfRank = new long[size];
        java.util.Arrays.fill(lastRoundOfRank, -1L);
        java.util.Arrays.fill(slotRound, -1L);
    }

    @Override
    public int groupSize() {
        return size;
    }

    @Override
    public synchronized void contribute(int rank, long round, long completedPrefix, long firstFailedSeq) {
        checkRank(rank);
        if (round != lastRoundOfRank[rank] + 1) {
            throw new IllegalStateException("rank " + rank + " contributed round " + round + " after round "
                + lastRoundOfRank[rank] + ": rounds must be contributed in order, once each");
        }
        int slot = (int) (round % RING);
        if (slotRound[slot] != round) {
            if (slotRound[slot] >= 0 && slotContributions[slot] != size) {
                throw new IllegalStateException("round " + round + " would overwrite unfinished round "
                    + slotRound[slot] + ": a rank ran more than " + (RING - 1) + " rounds ahead");
            }
            slotRound[slot] = round;
            slotContributions[slot] = 0;
            slotMinCompleted[slot] = Long.MAX_VALUE;
            slotMinFailed[slot] = Long.MAX_VALUE;
        }
        slotContributions[slot]++;
        slotMinCompleted[slot] = Math.min(slotMinCompleted[slot], completedPrefix);
        slotMinFailed[slot] = Math.min(slotMinFailed[slot], firstFailedSeq);
        lastRoundOfRank[rank] = round;
    }

    @Override
    public synchronized boolean tryResult(int rank, long round, Result out) {
        checkRank(rank);
        java.util.Objects.requireNonNull(out, "out");
        int slot = (int) (round % RING);
        if (slotRound[slot] != round || slotContributions[slot] != size) {
            return false;
        }
        out.setDecided(slotMinCompleted[slot], slotMinFailed[slot]);
        return true;
    }

    /** The same group's load channel: one instance shared by every rank. */
    @Override
    public synchronized RankAgreement loadChannel() {
        if (loadChannel == null) {
            loadChannel = new InProcessRankAgreement(size);
        }
        return loadChannel;
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size " + size);
        }
    }
}
