package io.hicache.storage;

import io.hicache.storage.tier.StorageTier;

/**
 * One prefetch of an {@link L3Tier}: host pages leased for the pages a request's match is missing, filled from the
 * store on its threads and published as host hits once they landed (on every CP lane). Scheduler thread, like the
 * tier; every method stays callable after the tier or its cache closed (a closed tier ended every prefetch, having
 * published nothing more and released every lease).
 *
 * <p>The engine's part: ask {@link #mayRun()} before scheduling the request; once it runs, match again (the
 * published pages are now host hits), issue its load-back, then {@link #consume()}. A request that is aborted instead
 * calls {@link #cancel()}. Either call ends the hold on the published pages: without one of them they stay
 * unevictable on the host until the tier closes.
 */
public final class L3Prefetch {
    private final L3Tier owner;
    private final StorageTier.Prefetch prefetch;

    L3Prefetch(L3Tier owner, StorageTier.Prefetch prefetch) {
        this.owner = owner;
        this.prefetch = prefetch;
    }

    /** The request id given to {@link L3Tier#prefetch}. */
    public long requestId() {
        return prefetch.requestId();
    }

    /** The first page position (of the request's tokens) the prefetch covers: the end of the match it extends. */
    public int startPage() {
        return prefetch.startPage();
    }

    /** Page positions leased for it (the most it can publish). */
    public int pageCount() {
        return prefetch.pageCount();
    }

    /** True once it ended: its agreed pages published, the rest of its lease released. */
    public boolean isDone() {
        return prefetch.state() == StorageTier.Prefetch.State.ENDED;
    }

    /** Page positions published as host hits; 0 until {@link #isDone()}, and when nothing was stored or it was cancelled. */
    public int publishedPages() {
        return prefetch.publishedPages();
    }

    /**
     * Whether the request may be scheduled now under the tier's {@link PrefetchPolicy}: at once under best effort,
     * once done under wait-complete, once done or past its deadline under timeout (the default). A prefetch its
     * request runs without (the first true before it is done) is abandoned: it submits no further store batch,
     * publishes nothing, and releases its host lease at once when it was still checking existence on a rank alone
     * (else once its reads are done), so the request's own backup has that room.
     */
    public boolean mayRun() {
        return owner.mayRun(prefetch);
    }

    /** The request was aborted: nothing more of the prefetch is published, its lease is released once its reads are done. Idempotent. */
    public void cancel() {
        owner.cancel(prefetch);
    }

    /** The request took the pages (its load-back was issued) or runs without them: they may be host-evicted again. Idempotent. */
    public void consume() {
        owner.consume(prefetch);
    }

    @Override
    public String toString() {
        return prefetch.toString();
    }
}
