package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/** A load from host memory finished: its pages are device hits. Emitted on the scheduler thread. */
@Name(HiCacheEvents.PREFIX + "LoadCompleted")
@Label("Load Completed")
@Category({"HiCache", "Load"})
@Description("Host pages were copied back to the device and attached to the tree")
@StackTrace(false)
public final class LoadCompletedEvent extends Event {
    /** The engine's request id given to {@code loadBack}. */
    @Label("Request Id")
    public long requestId;

    /** Device pages loaded. */
    @Label("Pages")
    public int pages;

    /** Tokens loaded. */
    @Label("Tokens")
    public long tokens;

    /** From the load's issue to its completion, agreed across the group, on the controller's clock. */
    @Label("Load Latency")
    @Timespan(Timespan.NANOSECONDS)
    public long loadLatency;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
