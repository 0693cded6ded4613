package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A backup was released without being published. Emitted on the scheduler thread. */
@Name(HiCacheEvents.PREFIX + "BackupAborted")
@Label("Backup Aborted")
@Category({"HiCache", "Backup"})
@Description("A backup was aborted and its host pages and device lock released; it was never visible")
@StackTrace(false)
public final class BackupAbortedEvent extends Event {
    /** The {@code AbortReason}. */
    @Label("Reason")
    public String reason;

    /** Device pages of the node range. */
    @Label("Pages")
    public int pages;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
