package io.hicache.core.internal;

import io.hicache.radix.MatchResult;

/**
 * A lower tier attached to a built controller (the L3 storage tier an engine attaches to its
 * {@link io.hicache.core.HiCache}), so the facade's own calls drive it: the engine's {@link
 * io.hicache.core.BackupListener} stays the engine's, and the engine calls nothing more per step.
 *
 * <p>Every method is called on the controller's scheduler thread, synchronously, from inside the controller's
 * calls: {@link #onCommitted} after the engine's listener heard of the commit, {@link #onMatch} at the end of each
 * match, {@link #poll} at the end of each poll (not after a sticky error stopped the controller), and {@link #close}
 * first thing in the controller's close, while the controller and its host memory are still live. Apart from
 * {@link #close}, none may call back into the controller's commit or poll, nor throw: a failure is the tier's own to
 * count and log.
 */
public interface TierAttachment {
    /** {@code backup} committed: its host copy is published on its nodes. */
    void onCommitted(Backup backup);

    /** A match of the engine just filled {@code match} (it touched the hit counts of its nodes). */
    void onMatch(MatchResult match);

    /** The controller's duty cycle ran: advance the tier's own work. */
    void poll();

    /**
     * The controller is closing: end everything that uses its host memory (wait for the I/O that reads or writes
     * it) and let go of it. If this throws, the controller is not closed and its close may be called again.
     */
    void close();
}
