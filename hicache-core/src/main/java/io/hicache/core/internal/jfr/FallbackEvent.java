package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A forward's backups copy all layers after the forward instead of layer by layer. */
@Name(HiCacheEvents.PREFIX + "AllLayerFallback")
@Label("All-Layer Fallback")
@Category({"HiCache", "Backup"})
@Description("A forward's backups are copied after the forward (configured, hooks unavailable, or write-back)")
@StackTrace(false)
public final class FallbackEvent extends Event {
    /** The {@code FallbackReason}. */
    @Label("Reason")
    public String reason;

    /** What the engine gave when it declared hooks unavailable, else empty. */
    @Label("Detail")
    public String detail;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
