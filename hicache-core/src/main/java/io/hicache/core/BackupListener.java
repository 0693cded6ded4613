package io.hicache.core;

/**
 * Told when backups end. Called on the scheduler thread from {@link HiCache#poll()},
 * {@link HiCache#abort} and {@link HiCache#close()}; must not call back into the cache.
 */
public interface BackupListener {
    /** The backup's host value is now published on its node(s). */
    default void onCommitted(BackupHandle backup) {
    }

    /** The backup was aborted and its pages released; it was never published. */
    default void onAborted(BackupHandle backup, AbortReason reason) {
    }
}
