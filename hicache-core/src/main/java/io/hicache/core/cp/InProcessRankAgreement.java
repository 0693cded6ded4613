package io.hicache.core.cp;

/**
 * Agreement among the ranks of a CP group that live in one JVM: ranks on their own threads, or ranks stepped one
 * after another by a single thread (the simulator and the deterministic tests). Both work because the protocol never
 * blocks: a rank contributes, then polls for the result.
 *
 * <p>A round is decided when every rank contributed it, with the element-wise minimum of the contributions (see
 * {@link RankAgreement}). <b>Failure detection:</b> none for a rank that merely stops calling — the others wait for it
 * ({@link #failureDetectionNs()} is {@link Long#MAX_VALUE}); a rank that {@linkplain #leave leaves} degrades, at once,
 * the first round not yet decided and every later one, on every rank.
 *
 * <p>Rounds are kept in a ring of {@value #RING} slots; a rank can be at most one round ahead of the slowest rank that
 * has not yet read a result (it cannot contribute round k+1 before reading round k, and round k completes only when
 * every rank contributed it), so the rounds live at once never share a slot. Degraded rounds need no slot.
 *
 * <p>Thread-safe: one monitor guards the ring; no allocation after construction.
 */
public final class InProcessRankAgreement implements RankAgreement {
    private static final int RING = 4;

    private final int size;
    private final long[] slotRound = new long[RING];
    private final int[] slotContributions = new int[RING];
    private final int[] slotWidth = new int[RING];
    private final long[][] slotMin = new long[RING][MAX_WORDS];
    private final long[] lastRoundOfRank;
    private long lastDecidedRound = -1;
    private long degradedFrom = Long.MAX_VALUE;
    private long leftMask;

    /** A group of {@code size} ranks, numbered 0..size-1 (at most 64). */
    public InProcessRankAgreement(int size) {
        if (size < 1 || size > 64) {
            throw new IllegalArgumentException("group size " + size + " must be in [1, 64]");
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
    public synchronized void contribute(int rank, long round, Contribution contribution) {
        checkRank(rank);
        java.util.Objects.requireNonNull(contribution, "contribution");
        if (round != lastRoundOfRank[rank] + 1) {
            throw new IllegalStateException("rank " + rank + " contributed round " + round + " after round "
                + lastRoundOfRank[rank] + ": rounds must be contributed in order, once each");
        }
        lastRoundOfRank[rank] = round;
        if (round >= degradedFrom) {
            return; // degraded: answered without the others
        }
        int slot = (int) (round % RING);
        if (slotRound[slot] != round) {
            if (slotRound[slot] >= 0 && slotContributions[slot] != size) {
                throw new IllegalStateException("round " + round + " would overwrite unfinished round "
                    + slotRound[slot] + ": a rank ran more than " + (RING - 1) + " rounds ahead");
            }
            slotRound[slot] = round;
            slotContributions[slot] = 0;
            slotWidth[slot] = contribution.width();
            java.util.Arrays.fill(slotMin[slot], Long.MAX_VALUE);
        } else if (slotWidth[slot] != contribution.width()) {
            throw new IllegalArgumentException("rank " + rank + " contributed " + contribution.width()
                + " words to round " + round + ", whose other contributions carry " + slotWidth[slot]);
        }
        contribution.minInto(slotMin[slot], 0);
        if (++slotContributions[slot] == size) {
            lastDecidedRound = round;
        }
    }

    @Override
    public synchronized boolean tryResult(int rank, long round, Result out) {
        checkRank(rank);
        java.util.Objects.requireNonNull(out, "out");
        if (round >= degradedFrom) {
            out.setDegraded(leftMask);
            return true;
        }
        int slot = (int) (round % RING);
        if (slotRound[slot] != round || slotContributions[slot] != size) {
            return false;
        }
        out.setDecided(slotMin[slot], 0, slotWidth[slot]);
        return true;
    }

    /** Degrades the first round not yet decided and every later one, on every rank. Idempotent. */
    @Override
    public synchronized void leave(int rank) {
        checkRank(rank);
        leftMask |= 1L << rank;
        degradedFrom = Math.min(degradedFrom, lastDecidedRound + 1);
    }

    /** {@link Long#MAX_VALUE}: a rank that stops calling is waited for; only {@link #leave} degrades. */
    @Override
    public long failureDetectionNs() {
        return Long.MAX_VALUE;
    }

    private void checkRank(int rank) {
        if (rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " outside a group of size " + size);
        }
    }
}
