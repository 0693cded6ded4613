package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A sticky CUDA error poisoned the context and stopped the controller. Rare: keeps its stack trace. */
@Name(HiCacheEvents.PREFIX + "StickyError")
@Label("Sticky CUDA Error")
@Category({"HiCache", "Errors"})
@Description("A sticky CUDA error stopped the controller; backups in flight were aborted")
public final class StickyErrorEvent extends Event {
    /** The CUDA error's name, e.g. {@code cudaErrorIllegalAddress}. */
    @Label("Error")
    public String error;

    /** The CUDA error code. */
    @Label("Code")
    public int code;

    /** The call that reported it. */
    @Label("Call")
    public String call;

    /** Backups aborted by the stop. */
    @Label("Backups Aborted")
    public int backupsAborted;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
