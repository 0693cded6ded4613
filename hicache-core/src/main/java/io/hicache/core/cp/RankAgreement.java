package io.hicache.core.cp;

/**
 * How the ranks of a context-parallel (CP) group agree, round by round, on what every rank then does alike: which
 * backups commit, which loads complete, what a storage prefetch publishes. An engine plugs in its own collective
 * (NCCL, MPI, Gloo, a TCP mesh) by implementing this interface; {@link InProcessRankAgreement} serves ranks in one JVM
 * and {@code io.hicache.aeron.AeronRankGroup} ranks in separate processes. The conformance kit of
 * {@code hicache-testkit} ({@code RankAgreementConformance}) checks every obligation below against an implementation;
 * run it in the implementation's own tests.
 *
 * <h2>What a round carries: one contribution format</h2>
 * Each round every rank contributes a {@link Contribution}: a vector of {@code width} 64-bit words ({@code 1 <= width
 * <=} {@value #MAX_WORDS}). The result of a round decided normally is the <b>element-wise minimum</b> over the
 * contributions of every rank of the group: word {@code i} of the result is the smallest word {@code i} any rank
 * contributed. That is the only reduction (a MIN all-reduce over {@code int64}: {@code ncclMin}, {@code MPI_MIN},
 * Gloo's {@code MIN}); everything else is encoded into it by the channel's user:
 * <ul>
 *   <li><b>maximum</b>: contribute the bitwise complement {@code ~v}; the complement of the minimum is the maximum;</li>
 *   <li><b>divergence</b>: contribute {@code v} and {@code ~v}; the ranks agree exactly when {@code min == ~min(~v)}
 *       (the minimum equals the maximum), so any difference between the ranks shows in the result;</li>
 *   <li><b>a flag any rank may raise</b>: 0 when raised, {@link Long#MAX_VALUE} when not;</li>
 *   <li><b>gather</b>: words reserved for rank {@code r} carry rank {@code r}'s values, and every other rank writes
 *       {@link Long#MAX_VALUE} (the minimum's identity) there, so the result holds every rank's values (a storage
 *       prefetch can announce every gone page of every lane this way).</li>
 * </ul>
 * The width and the meaning of each word are fixed for a channel by its user, and every rank of a round contributes
 * the same width. The controller's layout (one section for backups, one for loads; both in one round when the cache
 * has a single agreement) is {@link #SECTION_WORDS} words per section:
 * <pre>
 *  word 0  completedPrefix  the first of this rank's items (in sequence order) not yet finished on it
 *  word 1  firstFailedSeq   the first item that failed on this rank (Long.MAX_VALUE: none)
 *  word 2  head, word 3 ~head            the first item not yet retired (every rank retires the same items)
 *  word 4  digest, word 5 ~digest        a digest of the items this rank committed when it applied its last round
 *  word 6  health           Long.MAX_VALUE while this rank knows the group healthy, else why it is degraded
 *  word 7 + 2k, 8 + 2k      fingerprint f and ~f of item head + k (k &lt; WINDOW): a backup's token prefix, node range
 *                           and draft flag, a load's prefix and page count; Long.MAX_VALUE twice for an item this
 *                           rank has not created yet
 * </pre>
 * A round retires at most {@link #WINDOW} items per section, each only if every rank's fingerprint of it is the same;
 * if any pair differs (the ranks agree on a sequence number about different things), the round aborts every item in
 * flight on every rank with {@code AbortReason.DIVERGED} and the group is degraded (see {@link GroupState}).
 *
 * <h2>Obligations of an implementation</h2>
 * <ol>
 *   <li><b>One outcome per round on every live rank, degraded rounds included.</b> For each round, every rank that
 *       obtains a result obtains the same one: decided with the same words (the element-wise minimum of every rank's
 *       contribution: a pure function of the contributions, never of timing), or degraded. A rank that stalls across a
 *       timeout and wakes up obtains, for the rounds it missed, the outcome the others obtained.</li>
 *   <li><b>Degradation is sticky.</b> Once round {@code k} is degraded on any rank, every round after {@code k} is
 *       degraded on every rank.</li>
 *   <li><b>No blocking.</b> {@link #contribute} and {@link #tryResult} return promptly (microseconds, never waiting for
 *       another rank), however the other ranks behave: a rank contributes, then asks again at its next poll. An
 *       implementation over a blocking collective runs the collective on a thread of its own.</li>
 *   <li><b>Failure detection within a stated bound.</b> A rank that stops taking part (it crashed, stalled or vanished
 *       without closing anything) is declared failed, and the rounds it holds up are degraded on every other rank,
 *       within {@link #failureDetectionNs()} of the moment the others contributed. An implementation that cannot
 *       detect a silent rank says so ({@link Long#MAX_VALUE}) and waits for it.</li>
 *   <li><b>Leaving.</b> After {@link #leave(int) leave(r)} the round {@code r} has not seen decided, and every later
 *       one, are degraded on every rank, without waiting for the timeout.</li>
 *   <li><b>Rounds in order.</b> A rank contributes to round {@code k + 1} only after it read round {@code k}'s
 *       result; contributing a round twice, or out of order, throws {@link IllegalStateException}.</li>
 * </ol>
 *
 * <h2>When rounds open</h2>
 * A controller contributes to its next round at <em>every</em> {@code poll()} once it has read the previous round's
 * result, whether or not it has anything in flight (an idle rank's section is empty: its prefix is the next sequence
 * number, no failure, no fingerprints), and reads the result without waiting; when a result is there at once it
 * applies it and, if that retired something, opens the next round in the same poll (at most 64 rounds per poll). So
 * no rank can skip a round, rounds open at the pace of the slowest rank's polls, and an implementation sees one round
 * per channel open per rank at a time.
 *
 * <p>Threads: each rank calls from its own scheduler thread; implementations are thread-safe across ranks.
 */
public interface RankAgreement {
    /** Most words a contribution carries. */
    int MAX_WORDS = 128;
    /** Items one round of a controller section can retire (and fingerprints it carries). */
    int WINDOW = 8;
    /** Words of one controller section (backups or loads) in a contribution. */
    int SECTION_WORDS = 7 + 2 * WINDOW;

    /** Number of ranks in the group. */
    int groupSize();

    /**
     * Contributes this rank's words to its round {@code round} (0, 1, 2, ... per rank). The implementation copies the
     * words; the caller reuses {@code contribution}. Returns promptly, never waiting for another rank.
     *
     * @throws IllegalStateException    if the rank contributes a round out of order or twice
     * @throws IllegalArgumentException if {@code rank} is not one this instance serves
     */
    void contribute(int rank, long round, Contribution contribution);

    /**
     * Writes round {@code round}'s result into {@code out} and returns true once the round is decided or degraded;
     * returns false (leaving {@code out} untouched) before that. Returns promptly; allocation-free.
     *
     * @param out the caller's result holder, reused round after round; written only on the calling thread
     * @throws NullPointerException if {@code out} is null
     */
    boolean tryResult(int rank, long round, Result out);

    /**
     * Tells the group that {@code rank} stops taking part (its cache closed, or stopped after a sticky CUDA error):
     * every round {@code rank} has not seen decided, and every later one, is degraded on every rank, at once rather
     * than after the failure-detection timeout. Idempotent.
     */
    void leave(int rank);

    /**
     * The bound within which a rank that stopped taking part is detected: the rounds it holds up are degraded on every
     * other rank at most this many nanoseconds after they contributed. {@link Long#MAX_VALUE} when the implementation
     * cannot detect a silent rank (it then waits for it; only {@link #leave} degrades).
     */
    long failureDetectionNs();

    /**
     * One rank's words for one round, caller-owned and reused: fill it, pass it to {@link #contribute}, refill it for
     * the next round. A new contribution holds {@code width} words of {@link Long#MAX_VALUE} (the minimum's identity).
     *
     * <p>Threads: not thread-safe; owned by the thread that fills it. Allocation-free after construction.
     */
    final class Contribution {
        private final long[] words;

        /**
         * A contribution of {@code width} words.
         *
         * @throws IllegalArgumentException if {@code width} is outside {@code [1, MAX_WORDS]}
         */
        public Contribution(int width) {
            if (width < 1 || width > MAX_WORDS) {
                throw new IllegalArgumentException("contribution width " + width + " outside [1, " + MAX_WORDS + "]");
            }
            this.words = new long[width];
            clear();
        }

        /** Words carried. */
        public int width() {
            return words.length;
        }

        /** Word {@code i}. */
        public long word(int i) {
            return words[i];
        }

        /** Sets word {@code i} to {@code value}. */
        public void set(int i, long value) {
            words[i] = value;
        }

        /** Sets every word to {@link Long#MAX_VALUE}. */
        public void clear() {
            java.util.Arrays.fill(words, Long.MAX_VALUE);
        }

        /** Copies the words into {@code dst[off, off + width())}. */
        public void copyTo(long[] dst, int off) {
            System.arraycopy(words, 0, dst, off, words.length);
        }

        /** Lowers {@code acc[off + i]} to word {@code i} where the word is smaller: one step of the reduction. */
        public void minInto(long[] acc, int off) {
            for (int i = 0; i < words.length; i++) {
                if (words[i] < acc[off + i]) {
                    acc[off + i] = words[i];
                }
            }
        }

        /** For logs and test messages; allocates. */
        @Override
        public String toString() {
            return "contribution" + java.util.Arrays.toString(words);
        }
    }

    /**
     * The result of one agreement round, caller-owned and reused: a caller allocates one per agreement loop and
     * passes it to every {@link RankAgreement#tryResult} call; an implementation fills it through
     * {@link #setDecided} or {@link #setDegraded} inside {@code tryResult}. Reads are valid after
     * {@code tryResult} returned true and until the holder is passed to {@code tryResult} again.
     *
     * <p>Exactly one of {@link #decided()} and {@link #degraded()} is true once a result was written; neither is
     * before. Asking a degraded result for its words, a decided one for its failed ranks, or an empty one for
     * anything throws {@link IllegalStateException}: there are no sentinel values to misread.
     *
     * <p>Threads: not thread-safe; owned by the thread that calls {@code tryResult} with it (a rank's scheduler
     * thread). Allocation-free.
     */
    final class Result {
        private static final int EMPTY = 0;
        private static final int DECIDED = 1;
        private static final int DEGRADED = 2;

        private final long[] words = new long[MAX_WORDS];
        private int width;
        private int state = EMPTY;
        private long failedRanks;

        /** An empty result: neither decided nor degraded until an agreement writes it. */
        public Result() {
        }

        /** True when the round was decided normally: {@link #word(int)} holds the group's element-wise minimum. */
        public boolean decided() {
            return state == DECIDED;
        }

        /** True when the round was decided degraded: {@link #failedRanks()} names failed ranks. */
        public boolean degraded() {
            return state == DEGRADED;
        }

        /**
         * Words of the decided round.
         *
         * @throws IllegalStateException unless {@link #decided()}
         */
        public int width() {
            requireDecided("width");
            return width;
        }

        /**
         * Word {@code i} of the decided round: the minimum over the group of the ranks' word {@code i}.
         *
         * @throws IllegalStateException     unless {@link #decided()}
         * @throws IndexOutOfBoundsException if {@code i} is outside {@code [0, width())}
         */
        public long word(int i) {
            requireDecided("word");
            if (i < 0 || i >= width) {
                throw new IndexOutOfBoundsException("word " + i + " outside [0, " + width + ")");
            }
            return words[i];
        }

        /**
         * The failed ranks of a degraded round, bit {@code r} set for rank {@code r} (ranks 0 to 63); never 0. The mask
         * names at least one failed rank; ranks may learn of further failures at different times, so it is
         * informational: the outcome every rank agrees on is that the round is degraded.
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
         * For implementations, inside {@code tryResult}: the round was decided normally with the element-wise minimum
         * {@code minima[from, from + width)}. Replaces whatever the holder held.
         *
         * @throws IllegalArgumentException if {@code width} is outside {@code [1, MAX_WORDS]}
         */
        public void setDecided(long[] minima, int from, int width) {
            if (width < 1 || width > MAX_WORDS) {
                throw new IllegalArgumentException("result width " + width + " outside [1, " + MAX_WORDS + "]");
            }
            System.arraycopy(minima, from, words, 0, width);
            this.width = width;
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
            this.width = 0;
            this.state = DEGRADED;
        }

        /** Empties the holder (neither decided nor degraded), e.g. before reusing it for another agreement. */
        public void clear() {
            state = EMPTY;
            width = 0;
            failedRanks = 0;
        }

        /** True when both results are empty, both degraded, or both decided with the same words (for tests). */
        public boolean sameOutcome(Result other) {
            if (state != other.state) {
                return false;
            }
            return state != DECIDED || java.util.Arrays.equals(words, 0, width, other.words, 0, other.width);
        }

        /** For logs and test messages; allocates. */
        @Override
        public String toString() {
            return switch (state) {
                case DECIDED -> "decided" + java.util.Arrays.toString(java.util.Arrays.copyOf(words, width));
                case DEGRADED -> "degraded(failedRanks=0b" + Long.toBinaryString(failedRanks) + ")";
                default -> "empty";
            };
        }

        private void requireDecided(String accessor) {
            if (state != DECIDED) {
                throw new IllegalStateException(accessor + "() of " + stateName() + " agreement result: "
                    + (state == DEGRADED
                        ? "a degraded round (failed ranks 0b" + Long.toBinaryString(failedRanks)
                            + ") carries no words; check degraded() first"
                        : "read it only after tryResult returned true"));
            }
        }

        private String stateName() {
            return state == DECIDED ? "a decided" : state == DEGRADED ? "a degraded" : "an empty";
        }
    }
}
