package io.hicache.core.cp;

/**
 * How the ranks of a context-parallel group agree on which backups (and loads) are complete everywhere.
 *
 * <p>Each round every rank contributes two values: how many of its backups, in reservation order, have
 * finished (completed or failed) without a gap ({@code completedPrefix}), and the sequence number of the
 * first backup that failed on it ({@code firstFailedSeq}, {@link Long#MAX_VALUE} if none). The round's result
 * is the minimum of each over the group: SGLang's MIN all-reduce of the FIFO-completed count over TP, plus
 * the lowest failure so that a rank's failure aborts that backup on every rank.
 *
 * <p>The protocol is non-blocking so the same controller runs on real threads, under a blocking collective,
 * and stepped by hand in one thread: a rank calls {@link #contribute} once per round, then
 * {@link #tryResult} until it returns true, and only then starts its next round. An engine with its own
 * collective (NCCL, MPI, Gloo) implements this interface by doing the all-reduce inside {@code contribute}
 * and answering {@code tryResult} at once.
 *
 * <p>Threads: each rank calls from its own scheduler thread; implementations are thread-safe across ranks.
 */
public interface RankAgreement {

    /** Number of ranks in the group. */
    int groupSize();

    /**
     * Contributes this rank's values for its round {@code round} (0, 1, 2, ... per rank).
     *
     * @throws IllegalStateException if the rank contributes a round out of order or twice
     */
    void contribute(int rank, long round, long completedPrefix, long firstFailedSeq);

    /**
     * Writes round {@code round}'s result into {@code out} and returns true once the round is decided; returns
     * false (and leaves {@code out} untouched) before that. Allocation-free.
     *
     * <p>A round is decided in one of two ways (see {@link Result}): normally, once every rank contributed it, with
     * the group minimum of {@code completedPrefix} and of {@code firstFailedSeq}
     * ({@link Result#setDecided}); or, by an agreement that detects failed ranks (one over processes, with
     * timeouts), <em>degraded</em>, naming the failed ranks and carrying no minima ({@link Result#setDegraded}).
     * The caller then aborts everything in flight with {@code RANK_FAILED}. Once a round is degraded every later
     * round is too; the in-process agreements never degrade.
     *
     * @param out the caller's result holder, reused round after round; written only on the calling thread
     * @throws NullPointerException if {@code out} is null
     */
    boolean tryResult(int rank, long round, Result out);

    /**
     * The result of one agreement round, caller-owned and reused: a caller allocates one per agreement loop and
     * passes it to every {@link RankAgreement#tryResult} call; an implementation fills it through
     * {@link #setDecided} or {@link #setDegraded} inside {@code tryResult}. Reads are valid after
     * {@code tryResult} returned true and until the holder is passed to {@code tryResult} again.
     *
     * <p>Exactly one of {@link #decided()} and {@link #degraded()} is true once a result was written; neither is
     * before. Asking a degraded result for its minima, a decided one for its failed ranks, or an empty one for
     * anything throws {@link IllegalStateException}: there are no sentinel values to misread.
     *
     * <p>Threads: not thread-safe; owned by the thread that calls {@code tryResult} with it (a rank's scheduler
     * thread). Allocation-free.
     */
    final class Result {
        private static final int EMPTY = 0;
        private static final int DECIDED = 1;
        private static final int DEGRADED = 2;

        private int state = EMPTY;
        private long minCompletedPrefix;
        private long minFirstFailedSeq;
        private long failedRanks;

        /** An empty result: neither decided nor degraded until an agreement writes it. */
        public Result() {
        }

        /**
         * True when the round was decided normally: {@link #minCompletedPrefix()} and {@link #minFirstFailedSeq()}
         * hold the group's minima.
         */
        public boolean decided() {
            return state == DECIDED;
        }

        /** True when the round was decided degraded: {@link #failedRanks()} names the failed ranks. */
        public boolean degraded() {
            return state == DEGRADED;
        }

        /**
         * The group minimum of the ranks' {@code completedPrefix}.
         *
         * @throws IllegalStateException unless {@link #decided()}
         */
        public long minCompletedPrefix() {
            requireDecided("minCompletedPrefix");
            return minCompletedPrefix;
        }

        /**
         * The group minimum of the ranks' {@code firstFailedSeq} ({@link Long#MAX_VALUE}: no rank failed one).
         *
         * @throws IllegalStateException unless {@link #decided()}
         */
        public long minFirstFailedSeq() {
            requireDecided("minFirstFailedSeq");
            return minFirstFailedSeq;
        }

        /**
         * The failed ranks of a degraded round, bit {@code r} set for rank {@code r} (ranks 0 to 63); never 0.
         *
         * @throws IllegalStateException unless {@link #degraded()}
         */
        public long failedRanks() {
            if (state != DEGRADED) {
                throw new IllegalStateException("failedRanks() of " + stateName()
                    + " agreement result: only a degraded round names failed ranks; check degraded() first");
            }
            return failedRanks;
        }

        /**
         * For implementations, inside {@code tryResult}: the round was decided normally with these group minima.
         * Replaces whatever the holder held.
         */
        public void setDecided(long minCompletedPrefix, long minFirstFailedSeq) {
            this.minCompletedPrefix = minCompletedPrefix;
            this.minFirstFailedSeq = minFirstFailedSeq;
            this.failedRanks = 0;
            this.state = DECIDED;
        }

        /**
         * For implementations, inside {@code tryResult}: the round is degraded because the ranks in
         * {@code failedRanks} (bit {@code r} for rank {@code r}) failed. Replaces whatever the holder held.
         *
         * @throws IllegalArgumentException if {@code failedRanks} is 0 (a degraded round names a failed rank)
         */
        public void setDegraded(long failedRanks) {
            if (failedRanks == 0) {
                throw new IllegalArgumentException("a degraded agreement round must name at least one failed rank");
            }
            this.failedRanks = failedRanks;
            this.minCompletedPrefix = 0;
            this.minFirstFailedSeq = 0;
            this.state = DEGRADED;
        }

        /** Empties the holder (neither decided nor degraded), e.g. before reusing it for another agreement. */
        public void clear() {
            state = EMPTY;
            minCompletedPrefix = 0;
            minFirstFailedSeq = 0;
            failedRanks = 0;
        }

        /** For logs and test messages; allocates. */
        @Override
        public String toString() {
            return switch (state) {
                case DECIDED -> "decided(minCompletedPrefix=" + minCompletedPrefix + ", minFirstFailedSeq="
                    + minFirstFailedSeq + ")";
                case DEGRADED -> "degraded(failedRanks=0b" + Long.toBinaryString(failedRanks) + ")";
                default -> "empty";
            };
        }

        private void requireDecided(String accessor) {
            if (state != DECIDED) {
                throw new IllegalStateException(accessor + "() of " + stateName() + " agreement result: "
                    + (state == DEGRADED
                        ? "a degraded round (failed ranks 0b" + Long.toBinaryString(failedRanks)
                            + ") carries no minima; check degraded() first"
                        : "read it only after tryResult returned true"));
            }
        }

        private String stateName() {
            return state == DECIDED ? "a decided" : state == DEGRADED ? "a degraded" : "an empty";
        }
    }

    /**
     * Tells the group that {@code rank} stops taking part (its controller stopped after a sticky CUDA error), so
     * that an agreement with failure detection degrades the group at once instead of after its timeout. The
     * default does nothing: in-process groups never lose a rank.
     */
    default void leave(int rank) {
    }

    /**
     * A second, independent agreement among the same ranks, used for load-back completions so that backup and
     * load rounds never mix. Every rank must get the same channel object (or one backed by the same collective).
     * The default refuses: an engine's own implementation either overrides this or passes a load agreement to
     * the controller's builder explicitly.
     */
    default RankAgreement loadChannel() {
        throw new UnsupportedOperationException(getClass().getName()
            + " has no load channel: pass a separate RankAgreement for loads to the controller builder");
    }
}
