package io.hicache.storage.tier;

import io.hicache.core.spi.StoragePort;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.storage.HostPage;
import io.hicache.storage.PageStore;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStatus;
import io.hicache.storage.tier.StorageTier.Prefetch;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The L3 → L2 half of a {@link StorageTier}: leases host pages for the pages a match is missing
 * ({@link StoragePort#reserveHost}) within a share of the host pool, checks existence and reads on the store's
 * threads, ends them in FIFO order with the landed prefix the group agreed ({@link PrefetchAgreement}, run by the
 * tier) and publishes only that prefix ({@link StoragePort#publishHost}); the rest of the lease is freed. A
 * published node is held against host eviction until its request consumes it. A lease always ends: published,
 * released on failure or cancellation, or released by {@link #close}.
 *
 * <p><b>KV events.</b> Published pages are announced stored in L3 too (through the {@link L3Announcer}, which leaves
 * out those announced already), since this cache may not have written them. A page a read finds gone is announced
 * removed: on a rank alone at once, in a CP group once the group agreed on it (the head prefetch's gone-pages rounds,
 * see {@link PrefetchAgreement}), whichever rank's lane holds it.
 *
 * <p><b>Draft KV.</b> In a cache with draft/MTP layers every prefetched page must bring its draft part too (its draft
 * key, {@link PageHasher#draftKey}, read into the draft host pool's page of the same id): a page lands whole only
 * when both parts exist and read back whole, and is published as carrying draft KV, so its load-back restores both.
 * A target part whose draft part is missing is not a hit (loading it would leave an earlier page's draft bytes on the
 * device).
 *
 * <p>Owned by the scheduler thread.
 */
final class TierPrefetcher {
    /** Store batches one prefetch may span on a rank (its existence checks run one after another). */
    static final int MAX_PREFETCH_BATCHES = 16;

    /** The cache's controller, reached only through its storage port. */
    private final StoragePort ctl;
    private final PageStore store;
    private final StorageTierConfig cfg;
    private final StorageTierCounters metrics;
    private final PageHasher hasher;
    private final HostViews views;
    private final KnownKeys known;
    private final L3Announcer announcer;
    private final int cpSize;
    private final int pageSize;
    private final LongSupplier clockNs;
    private final int maxBatch;
    private final long prefetchCapUnits;
    private final ArrayDeque<Prefetch> prefetches = new ArrayDeque<>();
    private final LinkedHashSet<Prefetch> protectedPrefetches = new LinkedHashSet<>();
    private long prefetchUnitsHeld;
    /** In a CP group: the ended prefetch whose gone pages the group is agreeing on, one per round, or null. */
    private Prefetch goneHead;
    /** The last gone position of {@link #goneHead} agreed (-1 before the first). */
    private long goneCursor;

    TierPrefetcher(StoragePort ctl, PageStore store, StorageTierConfig cfg, StorageTierCounters metrics,
                   PageHasher hasher, HostViews views, KnownKeys known, L3Announcer announcer, int cpSize,
                   LongSupplier clockNs) {
        this.ctl = ctl;
        this.store = store;
        this.cfg = cfg;
        this.metrics = metrics;
        this.hasher = hasher;
        this.views = views;
        this.known = known;
        this.announcer = announcer;
        this.cpSize = cpSize;
        this.pageSize = ctl.pageSize();
        this.clockNs = clockNs;
        this.maxBatch = Math.max(1, store.maxBatchPages());
        this.prefetchCapUnits = Math.max(1, (long) Math.floor(cfg.prefetchHostShare()
                * ctl.hostBudgetCapacityPages()));
    }

    /** Prefetches not yet ended. */
    int size() {
        return prefetches.size();
    }

    /** True while a prefetch awaits the group: not yet ended, or its gone pages not yet agreed. */
    boolean awaitsGroup() {
        return !prefetches.isEmpty() || goneHead != null;
    }

    /** See {@link StorageTier#prefetch}. */
    Prefetch prefetch(int[] tokens, int from, int len, MatchResult match, long requestId) {
        int total = len / pageSize;
        int matched = match.devicePageCount() + match.hostPageCount();
        int missing = total - matched;
        if (missing <= 0 || (long) missing * pageSize <= cfg.prefetchThresholdTokens()) {
            return null;
        }
        RadixNode last = match.lastHostNode();
        if (!last.isRoot() && last.hostValue() == null) {
            metrics.increment(StorageMetric.PREFETCH_NOT_CONTIGUOUS);
            return null;
        }
        int pages = Math.min(missing, MAX_PREFETCH_BATCHES * maxBatch); // owned pages per rank <= positions
        long units = ((long) pages + cpSize - 1) / cpSize;
        if (prefetchUnitsHeld + units > prefetchCapUnits) {
            long room = prefetchCapUnits - prefetchUnitsHeld;
            pages = (int) Math.min(pages, room * cpSize);
            units = ((long) pages + cpSize - 1) / cpSize;
            if (pages > 0 && (long) pages * pageSize > cfg.prefetchThresholdTokens()) {
                metrics.increment(StorageMetric.PREFETCH_CUT_BY_SHARE);
            }
        }
        if (pages <= 0 || (long) pages * pageSize <= cfg.prefetchThresholdTokens()) {
            metrics.increment(StorageMetric.PREFETCH_NO_ROOM);
            return null;
        }
        StoragePort.Lease lease = ctl.reserveHost(matched, pages, total);
        if (lease == null) {
            metrics.increment(StorageMetric.PREFETCH_NO_ROOM);
            return null;
        }
        int[] own = Arrays.copyOfRange(tokens, from, from + (matched + pages) * pageSize);
        byte[] hashes = hasher.chainAfter(last, own, matched, pages);
        Prefetch p = new Prefetch(requestId, own, matched, pages, lease, hashes, units,
                clockNs.getAsLong() + cfg.timeoutNs((long) pages * pageSize));
        // the page before the first (chainAfter gave the match's last node its hashes)
        p.parentFp = last.isRoot() ? L3Announcer.NONE : lastPageFp(last);
        int[] offsets = new int[lease.pageCount()];
        int owned = lease.ownedOffsets(offsets);
        p.ownedOffsets = Arrays.copyOf(offsets, owned);
        p.keys = new ArrayList<>(owned);
        p.draftKeys = views.hasDraft() ? new ArrayList<>(owned) : null;
        for (int i = 0; i < owned; i++) {
            p.keys.add(PageHasher.key(hashes, p.ownedOffsets[i]));
            if (p.draftKeys != null) {
                p.draftKeys.add(hasher.draftKey(p.keys.get(i)));
            }
        }
        prefetchUnitsHeld += units;
        metrics.increment(StorageMetric.PREFETCH_STARTED);
        metrics.add(StorageMetric.PREFETCH_PAGES_REQUESTED, pages);
        p.ioStartNs = System.nanoTime();
        checkExistence(p);
        prefetches.add(p);
        return p;
    }

    /** See {@link StorageTier#mayRun}. */
    boolean mayRun(Prefetch p) {
        if (p.state == Prefetch.State.ENDED) {
            return true;
        }
        boolean run = switch (cfg.prefetchPolicy()) {
            case BEST_EFFORT -> true;
            case WAIT_COMPLETE -> false;
            case TIMEOUT -> clockNs.getAsLong() >= p.deadlineNs;
        };
        if (run && !p.terminatedEarly) {
            p.terminatedEarly = true;
            metrics.increment(StorageMetric.PREFETCH_TERMINATED_EARLY);
            abandon(p);
        }
        return run;
    }

    /**
     * The request of {@code p} runs without it (it computes the pages itself, so a later publish would be refused or
     * would hold host pages nobody loads): no further store batch is submitted and nothing is published. On a rank
     * alone a prefetch still checking existence (no store operation holds its host pages) releases its lease at once,
     * so the request's own backup finds that room; otherwise the lease goes once its reads are done. (In a CP group
     * every rank's host budget counts every rank's leases, so the lease ends with the agreed end, as a cancel's.)
     */
    private void abandon(Prefetch p) {
        p.cancelled = true;
        if (cpSize == 1 && p.state == Prefetch.State.CHECKING && !p.leaseReleased) {
            ctl.releaseHost(p.lease);
            p.leaseReleased = true;
            prefetchUnitsHeld -= p.units;
        }
    }

    /** See {@link StorageTier#cancel}. */
    void cancel(Prefetch p, boolean live) {
        if (!p.cancelled && p.state != Prefetch.State.ENDED) {
            p.cancelled = true;
            metrics.increment(StorageMetric.PREFETCH_CANCELLED);
        }
        consume(p, live);
    }

    /** See {@link StorageTier#consume}; {@code live}: the tier and its controller are open. */
    void consume(Prefetch p, boolean live) {
        if (p.node != null) {
            if (live) {
                ctl.releaseHostCopy(p.node);
            }
            p.node = null;
            protectedPrefetches.remove(p);
        }
    }

    /** Advances every prefetch's I/O; returns work done. */
    int poll() {
        int work = 0;
        for (Prefetch p : prefetches) {
            work += advance(p);
        }
        return work;
    }

    /**
     * This rank's contribution for the head prefetch (see {@link PrefetchAgreement}): while a prefetch's gone pages
     * are being agreed, the smallest position past the last agreed one of a page this rank's reads found gone and no
     * write or check here has found stored since (or {@link PrefetchAgreement#NO_MORE_GONE}); else the head
     * prefetch's landed positions, or {@link PrefetchAgreement#NOT_LANDED}. In a group the landed positions stop at
     * a page an earlier prefetch's read found gone after this one read it: the earlier one's removal of it is
     * announced first (prefetches end in order), so publishing it here would announce it stored in L3 again while
     * the store lacks it (and the rank that found it is the only one that knows).
     */
    long headValue() {
        if (goneHead != null) {
            return nextGone(goneHead, goneCursor);
        }
        Prefetch head = prefetches.peekFirst();
        if (head == null || head.state != Prefetch.State.LANDED) {
            return PrefetchAgreement.NOT_LANDED;
        }
        return cpSize > 1 ? Math.min(head.localPositions, head.goneAfterRead) : head.localPositions;
    }

    /**
     * The first gone position of {@code p} past {@code after} that this rank still takes for gone: a write of it
     * (another request computed it) may have been agreed and announced stored since; announcing the page removed
     * after that would drop a stored page from every router's index.
     */
    private long nextGone(Prefetch p, long after) {
        for (int i = 0; i < p.goneCount; i++) {
            int k = p.goneIndex[i];
            if (p.ownedOffsets[k] > after && (known.isSuspect(p.keys.get(k))
                    || (p.draftKeys != null && known.isSuspect(p.draftKeys.get(k))))) {
                return p.ownedOffsets[k];
            }
        }
        return PrefetchAgreement.NO_MORE_GONE;
    }

    /**
     * A round's result for the head prefetch ({@code value}, the group minimum of {@link #headValue()}; with
     * {@code decided} false, this rank's own value of a degraded round, which agrees on nothing). While landing: ends
     * it once it landed everywhere ({@code value} >= 0), publishing {@code value} leading positions (none when not
     * decided); in a group whose prefix stopped short, its gone pages follow, one per round. While its gone pages are
     * agreed: the speaker announces the page at {@code value} removed; {@link PrefetchAgreement#NO_MORE_GONE} (or an
     * undecided round) ends them.
     *
     * @return work done
     */
    int agreed(long value, boolean decided) {
        if (goneHead != null) {
            if (!decided || value == PrefetchAgreement.NO_MORE_GONE || value < 0 || value >= goneHead.pages) {
                goneHead = null;
            } else {
                Prefetch p = goneHead;
                StoragePort.StorageTransitions o = ctl.storageTransitions();
                if (o != null) {
                    o.sequencePages(false, p.tokens, 0,
                            p.startPage + (int) value, 1);
                }
                announcer.pageGone(L3Announcer.fp(p.hashes, (int) value * PageHasher.HASH));
                goneCursor = value;
            }
            return 1;
        }
        Prefetch head = prefetches.peekFirst();
        if (value < 0 || head == null || head.state != Prefetch.State.LANDED) {
            return 0;
        }
        prefetches.pollFirst();
        int positions = decided ? (int) Math.min(value, head.pages) : 0;
        end(head, positions);
        if (cpSize > 1 && decided && positions < head.pages) { // some rank stopped early: maybe at a gone page
            goneHead = head;
            goneCursor = -1;
        }
        return 1;
    }

    /**
     * Shutdown, first step: nothing is published any more; advances every prefetch's I/O as far as the store has
     * answered.
     *
     * @return a store operation still running, or null when no prefetch has one
     */
    StoreOp<?> drain() {
        StoreOp<?> pending = null;
        for (Prefetch p : prefetches) {
            p.cancelled = true; // shutdown publishes nothing
            while (advance(p) > 0) {
                // CHECKING -> READING -> LANDED as far as the store has answered
            }
            StoreOp<?> op = runningOp(p);
            if (op != null) {
                pending = op;
            }
        }
        return pending;
    }

    /** Shutdown, last step (no store I/O left): releases every lease and host protection. */
    void close(boolean live) {
        for (Prefetch p : prefetches) {
            if (live && !p.leaseReleased) {
                ctl.releaseHost(p.lease);
            }
            p.leaseReleased = true;
            p.state = Prefetch.State.ENDED;
        }
        prefetches.clear();
        goneHead = null;
        prefetchUnitsHeld = 0;
        for (Prefetch p : protectedPrefetches) {
            if (live) {
                ctl.releaseHostCopy(p.node);
            }
            p.node = null;
        }
        protectedPrefetches.clear();
    }

    /** Asks the store whether the next batch of {@code p}'s keys (from {@code p.present}) exists, both parts. */
    private void checkExistence(Prefetch p) {
        int end = Math.min(p.keys.size(), p.present + maxBatch);
        if (end == p.present) {
            p.exists = StoreOp.completed(0);
            p.draftExists = p.draftKeys == null ? null : StoreOp.completed(0);
            return;
        }
        p.exists = store.existsPrefix(p.keys.subList(p.present, end));
        p.draftExists = p.draftKeys == null ? null : store.existsPrefix(p.draftKeys.subList(p.present, end));
    }

    /** Advances a prefetch's I/O; returns work done. */
    private int advance(Prefetch p) {
        switch (p.state) {
            case CHECKING -> {
                if (!p.exists.isDone() || (p.draftExists != null && !p.draftExists.isDone())) {
                    return 0;
                }
                int from = p.present;
                int chunk = Math.min(maxBatch, p.keys.size() - from);
                int k = Math.min(chunk, Math.max(0, p.exists.result()));
                if (p.draftExists != null) {
                    k = Math.min(k, Math.max(0, p.draftExists.result())); // stored only when both parts are
                }
                p.present += k;
                if (k == chunk && p.present < p.keys.size() && !p.cancelled) {
                    checkExistence(p);
                    return 1;
                }
                if (p.present == 0 || p.cancelled) {
                    land(p, 0);
                    return 1;
                }
                p.gets = new ArrayList<>();
                p.draftGets = p.draftKeys == null ? null : new ArrayList<>();
                for (int c = 0; c < p.present; c += maxBatch) {
                    int end = Math.min(p.present, c + maxBatch);
                    List<HostPage> pages = new ArrayList<>(end - c);
                    List<HostPage> drafts = p.draftKeys == null ? null : new ArrayList<>(end - c);
                    for (int i = c; i < end; i++) {
                        pages.add(views.of(p.lease.hostPage(i)));
                        if (drafts != null) {
                            drafts.add(views.draft(p.lease.hostPage(i)));
                        }
                    }
                    p.gets.add(store.get(p.keys.subList(c, end), pages));
                    if (drafts != null) {
                        p.draftGets.add(store.get(p.draftKeys.subList(c, end), drafts));
                    }
                }
                p.state = Prefetch.State.READING;
                return 1;
            }
            case READING -> {
                if (runningOp(p) != null) {
                    return 0;
                }
                int good = 0;
                boolean whole = true;
                long failed = 0;
                for (int c = 0; c < p.gets.size(); c++) {
                    StoreResult r = p.gets.get(c).result();
                    StoreResult d = p.draftGets == null ? null : p.draftGets.get(c).result();
                    for (int i = 0; whole && i < r.size(); i++) {
                        whole = r.ok(i) && (d == null || d.ok(i)); // a page lands whole when both parts do
                        good += whole ? 1 : 0;
                    }
                    failed += r.count(StoreStatus.FAILED) + r.count(StoreStatus.REJECTED);
                    if (d != null) {
                        failed += d.count(StoreStatus.FAILED) + d.count(StoreStatus.REJECTED);
                    }
                }
                pagesGone(p);
                metrics.recordRead(good * (views.pageBytes() + views.draftPageBytes()), System.nanoTime() - p.ioStartNs);
                metrics.add(StorageMetric.PREFETCH_FAILED_PAGES, failed);
                land(p, good);
                return 1;
            }
            default -> {
                return 0;
            }
        }
    }

    /**
     * Pages the existence check found in the store but the read found missing or corrupt (either part) are gone from
     * it (deleted, expired, damaged): their keys are forgotten, so that a later write of their node puts them again,
     * and counted. On a rank alone the cache's observer (its KV events) is told at once, one call per run of
     * consecutive positions; in a CP group they are kept for the group's gone-pages rounds
     * ({@link PrefetchAgreement}), which announce every rank's. A check that merely stops early is not taken as proof
     * (a store backing off answers 0).
     */
    private void pagesGone(Prefetch p) {
        StoragePort.StorageTransitions o = cpSize > 1 ? null : ctl.storageTransitions();
        int runFirst = -1;
        int runEnd = -1;
        for (int c = 0; c < p.gets.size(); c++) {
            StoreResult r = p.gets.get(c).result();
            StoreResult d = p.draftGets == null ? null : p.draftGets.get(c).result();
            for (int i = 0; i < r.size(); i++) {
                if (!gone(r.status(i)) && (d == null || !gone(d.status(i)))) {
                    continue;
                }
                int k = c * maxBatch + i;
                known.forget(p.keys.get(k));
                if (p.draftKeys != null) {
                    known.forget(p.draftKeys.get(k));
                }
                metrics.increment(StorageMetric.PREFETCH_PAGES_GONE);
                if (r.status(i) == StoreStatus.CORRUPT || (d != null && d.status(i) == StoreStatus.CORRUPT)) {
                    metrics.increment(StorageMetric.CORRUPT_PAGES);
                }
                if (p.goneIndex == null) {
                    p.goneIndex = new int[Math.min(p.present, maxBatch)];
                } else if (p.goneCount == p.goneIndex.length) {
                    p.goneIndex = Arrays.copyOf(p.goneIndex, p.goneCount * 2);
                }
                p.goneIndex[p.goneCount++] = k;
                goneForOthers(p, p.keys.get(k));
                if (o != null) {
                    announcer.pageGone(L3Announcer.fp(p.hashes, p.ownedOffsets[k] * PageHasher.HASH));
                }
                int position = p.startPage + p.ownedOffsets[k];
                if (position != runEnd) {
                    if (runFirst >= 0 && o != null) {
                        o.sequencePages(false, p.tokens, 0, runFirst,
                                runEnd - runFirst);
                    }
                    runFirst = position;
                }
                runEnd = position + 1;
            }
        }
        if (runFirst >= 0 && o != null) {
            o.sequencePages(false, p.tokens, 0, runFirst,
                    runEnd - runFirst);
        }
    }

    /**
     * Another prefetch not ended yet that read the page of {@code key} before it went may still publish it: it then
     * announces on L3 only the pages before it (that page's removal is out, or comes when the group agrees on it).
     */
    private void goneForOthers(Prefetch p, io.hicache.storage.PageKey key) {
        for (Prefetch q : prefetches) {
            if (q != p) {
                int i = q.keys.indexOf(key);
                if (i >= 0) {
                    q.goneAfterRead = Math.min(q.goneAfterRead, q.ownedOffsets[i]);
                }
            }
        }
    }

    private static boolean gone(StoreStatus s) {
        return s == StoreStatus.MISS || s == StoreStatus.CORRUPT;
    }

    /** The first store operation of {@code p} still running, or null. */
    private static StoreOp<?> runningOp(Prefetch p) {
        if (p.state == Prefetch.State.CHECKING) {
            return !p.exists.isDone() ? p.exists
                    : p.draftExists != null && !p.draftExists.isDone() ? p.draftExists : null;
        }
        if (p.state == Prefetch.State.READING) {
            StoreOp<?> op = running(p.gets);
            return op != null ? op : running(p.draftGets);
        }
        return null;
    }

    private static StoreOp<?> running(List<StoreOp<StoreResult>> ops) {
        if (ops != null) {
            for (StoreOp<StoreResult> g : ops) {
                if (!g.isDone()) {
                    return g;
                }
            }
        }
        return null;
    }

    /** The I/O of {@code p} is done with {@code goodOwned} leading owned pages whole. */
    private static void land(Prefetch p, int goodOwned) {
        int positions = goodOwned < p.ownedOffsets.length ? p.ownedOffsets[goodOwned] : p.pages;
        p.localPositions = p.cancelled ? 0 : positions;
        p.state = Prefetch.State.LANDED;
    }

    private void end(Prefetch p, int positions) {
        p.state = Prefetch.State.ENDED;
        if (p.leaseReleased) {
            return; // abandoned while checking: its lease went then
        }
        prefetchUnitsHeld -= p.units;
        p.leaseReleased = true;
        if (positions <= 0 || p.cancelled) {
            ctl.releaseHost(p.lease);
            return;
        }
        RadixNode node = ctl.publishHost(p.lease, p.tokens, 0, positions, p.hashes, 0, p.draftKeys != null);
        if (node == null) {
            metrics.increment(StorageMetric.PREFETCH_PUBLISH_REFUSED);
            return;
        }
        p.published = positions;
        // a rank alone announced the removal of a page another read found gone since this one read it; in a group
        // every rank stopped its contribution there, or the finder ends later and its removal follows this
        int inL3 = cpSize > 1 ? positions : Math.min(positions, p.goneAfterRead);
        if (inL3 > 0 && ctl.storageTransitions() != null) {
            // in L3 on every lane (each rank read its part): announced there too, if this cache never did
            long[] fps = new long[inL3 + 1];
            fps[0] = p.parentFp;
            for (int i = 0; i < inL3; i++) {
                fps[i + 1] = L3Announcer.fp(p.hashes, i * PageHasher.HASH);
            }
            announcer.sequencePagesStored(p.tokens, p.startPage, inL3, fps);
        }
        // held for its request: not host-evicted before the request has loaded it (see consume)
        ctl.protectHostCopy(node);
        p.node = node;
        protectedPrefetches.add(p);
        metrics.add(StorageMetric.PREFETCH_PAGES_PUBLISHED, positions);
        // not a page another read found gone since this one read it: it is not in the store any more
        for (int i = 0; i < p.keys.size() && p.ownedOffsets[i] < Math.min(positions, p.goneAfterRead); i++) {
            known.add(p.keys.get(i));
            if (p.draftKeys != null) {
                known.add(p.draftKeys.get(i));
            }
        }
    }

    /** The fingerprint of the last page of {@code node}, which has its hashes. */
    private static long lastPageFp(RadixNode node) {
        byte[] h = new byte[PageHasher.HASH];
        node.copyPageHash(node.pageCount() - 1, h, 0);
        return L3Announcer.fp(h, 0);
    }
}
