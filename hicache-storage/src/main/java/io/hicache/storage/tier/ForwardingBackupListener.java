package io.hicache.storage.tier;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupListener;

/**
 * A {@link BackupListener} to give the controller's builder before the tier that will listen exists (the tier needs
 * the built controller): set its {@link #target} once the tier is made. Scheduler thread, like every listener call.
 */
public final class ForwardingBackupListener implements BackupListener {
    private BackupListener target;

    /** Forwards to {@code listener} from now on (null: to nobody). */
    public void target(BackupListener listener) {
        this.target = listener;
    }

    @Override
    public void onCommitted(BackupHandle backup) {
        if (target != null) {
            target.onCommitted(backup);
        }
    }

    @Override
    public void onAborted(BackupHandle backup, AbortReason reason) {
        if (target != null) {
            target.onAborted(backup, reason);
        }
    }
}
