package io.hicache.core.internal.jfr;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * One round of rank agreement over backups: its duration runs from this rank's contribution to the result being
 * available (a wait on the slowest rank shows up here). Emitted on the scheduler thread, up to once per
 * {@code poll()}: by default only rounds of at least 1 ms are kept ({@link HiCacheEvents#enableAll} keeps all).
 */
@Name(HiCacheEvents.PREFIX + "AgreementRound")
@Label("Agreement Round")
@Category({"HiCache", "CP"})
@Description("A round of agreement among the CP group's ranks on which backups completed or failed")
@StackTrace(false)
@Threshold("1 ms")
public final class AgreementRoundEvent extends Event {
    /** Ranks in the group. */
    @Label("Ranks")
    public int ranks;

    /** The round's number. */
    @Label("Round")
    public long round;

    /** Backups the round retired (committed or aborted) on this rank. */
    @Label("Retired")
    public int retired;

    /** This controller's rank in its CP group. */
    @Label("Rank")
    public int rank;
}
