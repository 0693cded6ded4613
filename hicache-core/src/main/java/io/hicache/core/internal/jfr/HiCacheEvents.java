package io.hicache.core.internal.jfr;

import jdk.jfr.EventType;
import jdk.jfr.Recording;

import java.util.List;

/**
 * Emits the controller's JFR events. Every method first reads its event type's enabled flag (one volatile read) and
 * returns at once when no recording enables it: nothing is built, nothing allocated. Callable from any thread;
 * each method is called by the thread that owns the state it reports (the scheduler, in practice).
 */
public final class HiCacheEvents {
    /** Prefix of every event name. */
    public static final String PREFIX = "io.hicache.";

    /** Every event class, for recordings that enable them by class. */
    public static final List<Class<? extends jdk.jfr.Event>> ALL = List.of(BackupCommittedEvent.class,
        BackupAbortedEvent.class, FallbackEvent.class, LoadCompletedEvent.class, LoadFailedEvent.class,
        AgreementRoundEvent.class, StickyErrorEvent.class);

    private static final EventType COMMITTED = EventType.getEventType(BackupCommittedEvent.class);
    private static final EventType ABORTED = EventType.getEventType(BackupAbortedEvent.class);
    private static final EventType FALLBACK = EventType.getEventType(FallbackEvent.class);
    private static final EventType LOADED = EventType.getEventType(LoadCompletedEvent.class);
    private static final EventType LOAD_FAILED = EventType.getEventType(LoadFailedEvent.class);
    private static final EventType ROUND = EventType.getEventType(AgreementRoundEvent.class);
    private static final EventType STICKY = EventType.getEventType(StickyErrorEvent.class);

    private HiCacheEvents() {
    }

    /**
     * Enables every HiCache event in {@code recording} with no duration threshold, so every event is kept.
     *
     * @param recording a recording not yet started or running
     * @return {@code recording}
     */
    public static Recording enableAll(Recording recording) {
        for (Class<? extends jdk.jfr.Event> c : ALL) {
            recording.enable(c).withoutThreshold();
        }
        return recording;
    }

    /**
     * A backup committed.
     *
     * @param pages           device pages of the node range
     * @param bytes           bytes copied device to host on this rank
     * @param layers          target layers
     * @param draftLayers     draft layers (0 without draft KV)
     * @param commitLatencyNs last layer stored (or forward end) to commit
     * @param rank            this controller's rank
     */
    public static void backupCommitted(int pages, long bytes, int layers, int draftLayers, long commitLatencyNs,
                                       int rank) {
        if (!COMMITTED.isEnabled()) {
            return;
        }
        BackupCommittedEvent e = new BackupCommittedEvent();
        e.pages = pages;
        e.bytes = bytes;
        e.layers = layers;
        e.draftLayers = draftLayers;
        e.commitLatency = commitLatencyNs;
        e.rank = rank;
        e.commit();
    }

    /**
     * A backup aborted and released.
     *
     * @param reason the abort reason
     * @param pages  device pages of the node range
     * @param rank   this controller's rank
     */
    public static void backupAborted(Enum<?> reason, int pages, int rank) {
        if (!ABORTED.isEnabled()) {
            return;
        }
        BackupAbortedEvent e = new BackupAbortedEvent();
        e.reason = reason.name();
        e.pages = pages;
        e.rank = rank;
        e.commit();
    }

    /**
     * A forward fell back to all-layer copies.
     *
     * @param reason the fallback reason
     * @param detail what the engine said when it declared hooks unavailable, or null
     * @param rank   this controller's rank
     */
    public static void fallback(Enum<?> reason, String detail, int rank) {
        if (!FALLBACK.isEnabled()) {
            return;
        }
        FallbackEvent e = new FallbackEvent();
        e.reason = reason.name();
        e.detail = detail == null ? "" : detail;
        e.rank = rank;
        e.commit();
    }

    /**
     * A load completed.
     *
     * @param requestId   the engine's request id
     * @param pages       device pages loaded
     * @param tokens      tokens loaded
     * @param loadLatency issue to agreed completion, nanoseconds
     * @param rank        this controller's rank
     */
    public static void loadCompleted(long requestId, int pages, long tokens, long loadLatency, int rank) {
        if (!LOADED.isEnabled()) {
            return;
        }
        LoadCompletedEvent e = new LoadCompletedEvent();
        e.requestId = requestId;
        e.pages = pages;
        e.tokens = tokens;
        e.loadLatency = loadLatency;
        e.rank = rank;
        e.commit();
    }

    /**
     * A load failed and was rolled back.
     *
     * @param requestId the engine's request id
     * @param pages     device pages the load would have filled
     * @param rank      this controller's rank
     */
    public static void loadFailed(long requestId, int pages, int rank) {
        if (!LOAD_FAILED.isEnabled()) {
            return;
        }
        LoadFailedEvent e = new LoadFailedEvent();
        e.requestId = requestId;
        e.pages = pages;
        e.rank = rank;
        e.commit();
    }

    /**
     * Starts timing an agreement round when the event is enabled.
     *
     * @return an event whose duration has begun, or null when the event is disabled
     */
    public static AgreementRoundEvent beginRound() {
        if (!ROUND.isEnabled()) {
            return null;
        }
        AgreementRoundEvent e = new AgreementRoundEvent();
        e.begin();
        return e;
    }

    /**
     * Ends an agreement round begun by {@link #beginRound()}; does nothing for null.
     *
     * @param e       the event from {@link #beginRound()}, or null
     * @param ranks   ranks in the group
     * @param round   the round's number
     * @param retired backups the round retired on this rank
     * @param rank    this controller's rank
     */
    public static void endRound(AgreementRoundEvent e, int ranks, long round, int retired, int rank) {
        if (e == null) {
            return;
        }
        e.end();
        if (e.shouldCommit()) {
            e.ranks = ranks;
            e.round = round;
            e.retired = retired;
            e.rank = rank;
            e.commit();
        }
    }

    /**
     * A sticky CUDA error stopped the controller.
     *
     * @param error          the error's name
     * @param code           the error code
     * @param call           the call that reported it
     * @param backupsAborted backups aborted by the stop
     * @param rank           this controller's rank
     */
    public static void stickyError(String error, int code, String call, int backupsAborted, int rank) {
        if (!STICKY.isEnabled()) {
            return;
        }
        StickyErrorEvent e = new StickyErrorEvent();
        e.error = error;
        e.code = code;
        e.call = call;
        e.backupsAborted = backupsAborted;
        e.rank = rank;
        e.commit();
    }
}
