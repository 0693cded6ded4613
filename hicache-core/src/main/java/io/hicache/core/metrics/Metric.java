package io.hicache.core.metrics;

/**
 * The counters a controller keeps, and a few levels (named as such). Each has exactly one writing thread (named
 * here); any thread may read.
 */
public enum Metric {
    /** Backups reserved (scheduler). */
    BACKUPS_RESERVED,
    /** Backups published on their node (scheduler). */
    BACKUPS_COMMITTED,
    /** Backups aborted, all reasons (scheduler); per reason in {@link MetricsSnapshot#abortedBy}. */
    BACKUPS_ABORTED,
    /** Reservations refused because the host pool had no room after one host eviction (scheduler). */
    RESERVE_NO_ROOM,
    /** Entries into the all-layer fallback (scheduler or submitter; counted under the metrics' monitor). */
    FALLBACK_ENTRIES,
    /** Host pages freed by host eviction (scheduler). */
    HOST_PAGES_EVICTED,
    /** Target KV bytes copied device-to-host (submitter). */
    D2H_TARGET_BYTES,
    /** Draft KV bytes copied device-to-host (submitter). */
    D2H_DRAFT_BYTES,
    /** Copy calls issued after coalescing, backups (submitter). */
    D2H_COPIES,
    /** Forwards sealed (submitter). */
    FORWARDS_SEALED,
    /** CUDA errors seen by the agents or the scheduler (completion). */
    CUDA_ERRORS,
    /** Backup copy time not hidden behind the forward: final event completion minus forward end, summed (scheduler). */
    EXPOSED_BACKUP_NS,
    /** Loads issued host-to-device (scheduler). */
    LOADS_STARTED,
    /** Loads whose pages became device hits (scheduler). */
    LOADS_COMPLETED,
    /** Loads refused: no device pages even after one device eviction (scheduler). */
    LOADS_REFUSED,
    /** Loads that failed and were rolled back (scheduler). */
    LOADS_FAILED,
    /** Tokens loaded host-to-device (scheduler). */
    LOAD_TOKENS,
    /** Bytes copied host-to-device, target and draft (scheduler). */
    H2D_BYTES,
    /** Copy calls issued for loads (scheduler). */
    H2D_COPIES,
    /** Sum of load durations, issue to agreed completion (scheduler). */
    LOAD_DURATION_NS,
    /**
     * Prompt tokens served from the device: counted by a {@code CacheRequest}'s matches once per request (tokens
     * already on the device when it matched them, loads of other requests included), or by each
     * {@code HiCache.match} call made outside a request (scheduler).
     */
    DEVICE_HIT_TOKENS,
    /**
     * Host pages in use by reserved and committed backups (and storage-tier leases) on the CP group's fullest rank: a
     * level, not a counter (scheduler).
     */
    HOST_PAGES_USED,
    /** Host pages the budget allows: a level, set once at build (scheduler). */
    HOST_PAGES_CAPACITY,
    /**
     * Unexpected exceptions an agent caught while handling one forward or load (submitter and completion, through
     * an atomic increment); the item was aborted and the agent went on.
     */
    AGENT_ERRORS,
    /** Requests that joined a load in flight to use its pages in their own forward (scheduler). */
    LOAD_JOINS,
    /**
     * Device pages of nodes inserted below a load that then failed, dropped with the subtree whose KV depended on
     * the load (scheduler).
     */
    LOAD_INVALIDATED_PAGES,
    /**
     * Prompt tokens served from host memory: tokens a load brought back, counted when it is issued, except the first
     * load of pages a storage prefetch published into host memory (the L3 tier counts those as served from storage),
     * so a token is counted on one tier (scheduler). {@link #LOAD_TOKENS} counts every token loaded.
     */
    HOST_HIT_TOKENS,
    /**
     * Device pages withdrawn from the tree because their KV was never computed (a cancelled or preempted request's,
     * {@code HiCache.withdrawUncomputed}) (scheduler).
     */
    WITHDRAWN_PAGES,
    /** 1 once the CP group is degraded (see {@code HiCache.groupState()}), else 0: a level (scheduler). */
    CP_GROUP_DEGRADED,
    /** Ranks of the CP group declared failed or gone: a level (scheduler). */
    CP_FAILED_RANKS,
    /**
     * Times the CP group was found diverged: ranks contributed different fingerprints for one sequence number, or
     * different digests of what they committed (scheduler; counted once per group, when it degrades).
     */
    CP_DIVERGENCES,
    /**
     * Calls into the {@code RankAgreement} that blocked {@code poll()} past the watchdog's bound, once each (the
     * watchdog thread, through an atomic increment).
     */
    CP_AGREEMENT_BLOCKED,
    /** Host values withdrawn after commit because another rank of the group did not commit them (scheduler). */
    CP_HOST_REVOKED;

    private static final Metric[] VALUES = values();

    static Metric[] all() {
        return VALUES;
    }
}
