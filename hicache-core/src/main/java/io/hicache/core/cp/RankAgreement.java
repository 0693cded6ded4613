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
     * Fills {@code out[0]} with the group minimum of {@code completedPrefix} and {@code out[1]} with the group
     * minimum of {@code firstFailedSeq} for {@code round} and returns true once every rank has contributed it;
     * returns false (and leaves {@code out} untouched) before that. Allocation-free.
     *
     * <p>When {@code out} has a third slot, {@code out[2]} receives 0 for a normal round. An agreement that detects
     * failed ranks (one over processes, with timeouts) may instead decide a <em>degraded</em> round: {@code out[2]}
     * then holds the non-zero bitmask of the failed ranks, {@code out[0..1]} carry no minima, and the caller aborts
     * everything in flight with {@code RANK_FAILED}. Once a round is degraded every later round is too. Callers pass
     * three slots; the in-process agreements never degrade.
     */
    boolean tryResult(int rank, long round, long[] out);

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
