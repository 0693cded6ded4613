package io.hicache.core;

/**
 * Told when backups end. Called on the scheduler thread from {@link HiCacheController#poll()},
 * {@link HiCacheController#abort} and {@link HiCacheController#close()}; must not call back into the controller.
 */
public interface BackupListener {
    /** The backup's host value is now published on its node(s). */
    default void onCommitted(Backup backup) {
    }

    /** The backup was aborted and its pages released; it was never published. */
    default void onAborted(Backup backup, AbortReason reason) {
    }
}
