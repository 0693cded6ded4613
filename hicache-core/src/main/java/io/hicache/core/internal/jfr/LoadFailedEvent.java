package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A load from host memory failed and was rolled back; the engine computes those tokens instead. */
@Name(HiCacheEvents.PREFIX + "LoadFailed")
@Label("Load Failed")
@Category({"HiCache", "Load"})
@Description("A load failed (a CUDA error here or on another rank) and its device pages were freed")
@StackTrace(false)
public final class LoadFailedEvent extends Event {
    /** The engine's request id given to {@code loadBack}. */
    @Label("Request Id")
    public long requestId;

    /** Device pages the load would have filled. */
    @Label("Pages")
    public int pages;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
