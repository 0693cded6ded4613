package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A backup was published as a host hit on every rank of its group. Emitted on the scheduler thread. */
@Name(HiCacheEvents.PREFIX + "BackupCommitted")
@Label("Backup Committed")
@Category({"HiCache", "Backup"})
@Description("A backup's host copy became visible: every layer, target and draft, acked on every CP rank")
@StackTrace(false)
public final class BackupCommittedEvent extends Event {
    /** Device pages of the backed-up node range. */
    @Label("Pages")
    public int pages;

    /** Bytes copied device to host for this backup on this rank, target and draft. */
    @Label("Bytes")
    @DataAmount
    public long bytes;

    /** Target layers copied. */
    @Label("Layers")
    public int layers;

    /** Draft layers copied (0 without draft KV). */
    @Label("Draft Layers")
    public int draftLayers;

    /** From the forward's last layer stored (or its end) to the commit, on the controller's clock. */
    @Label("Commit Latency")
    @Timespan(Timespan.NANOSECONDS)
    public long commitLatency;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
