package io.hicache.storage.tier;

import io.hicache.core.BackupHandle;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupListener;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.internal.HostLease;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.HostTierObserver;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.storage.HostPage;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StorageTierMetrics;
import io.hicache.storage.StorageWritePolicy;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * The L3 storage tier of one CP rank, sitting on its {@link HiCacheController} (engines get one behind their
 * {@link io.hicache.core.HiCache} through {@link io.hicache.storage.L3Tier}, which calls this class for them):
 * writes committed host pages to a {@link PageStore} (L2 → L3) under a {@link StorageWritePolicy}, and prefetches
 * pages a match is missing from the store into leased host pages (L3 → L2), publishing them as host hits once every
 * rank of the group agrees they landed.
 *
 * <p><b>Keys.</b> Every radix node the tier touches gets its page hashes once ({@link RadixTree#setPageHashes}), and
 * they split with the node: the SHA-256 chain of SGLang's {@code get_hash_str}, seeded with this lane's
 * {@link KeyNamespace#seed()}. A page's object key is its hash.
 *
 * <p><b>Writes</b> run behind the host commit: the tier learns of commits as the controller's
 * {@link BackupListener} and of host evictions as its {@link HostTierObserver}, and does the work in {@link #poll()}
 * (never inside the controller's callbacks, never on the forward path, so a device backup never waits for it). A
 * write first asks the store which of its keys exist and puts only the rest; keys known to be stored are not asked
 * again. While a write reads a node's host pages the node is host-protected (not host-evictable); write-back copies
 * the evicted pages into a bounded staging area first, since their host pages are freed at once.
 *
 * <p><b>Prefetch.</b> {@link #prefetch} leases host pages ({@link HiCacheController#reserveHost}) within a share of
 * the host pool, checks existence and reads on the store's threads. Completion is agreed in FIFO order through a
 * {@link RankAgreement} (minimum over the group of the pages each rank has whole, in positions), and only the agreed
 * prefix is published ({@link HiCacheController#publishHost}); the rest of the lease is freed. A lease always ends:
 * published, released on failure or cancellation, or released by {@link #close()}.
 *
 * <p><b>Visibility across lanes.</b> A CP lane stores the positions it owns under its own namespace; a reader counts
 * a position as stored only if it and every earlier position are stored on their lanes (the agreed minimum), so a
 * page one lane wrote and another did not is never read as a hit.
 *
 * <p><b>Failures.</b> The store retries, backs off and logs distinct errors; the tier counts failed and rejected
 * pages ({@link StorageTierMetrics}) and keeps serving: a failed write leaves the host copy as it is, a failed read
 * ends the prefetch with what landed before it.
 *
 * <p><b>Threads.</b> Owned by the controller's scheduler thread: every method is called there, except
 * {@link #metrics()} (any thread). Store I/O runs on the store's threads; the tier only polls its operations.
 */
public final class StorageTier implements BackupListener, HostTierObserver, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(StorageTier.class);
    private static final int HASH = RadixNode.PAGE_HASH_BYTES;
    private static final int KNOWN_KEYS_CAP = 1 << 20;
    /** Store batches one prefetch may span on a rank (its existence checks run one after another). */
    static final int MAX_PREFETCH_BATCHES = 16;

    private final HiCacheController ctl;
    private final RadixTree tree;
    private final PageStore store;
    private final StorageTierConfig cfg;
    private final RankAgreement agreement;
    private final int rank;
    private final int cpSize;
    private final int pageSize;
    private final LongSupplier clockNs;
    private final byte[] seed;
    private final MessageDigest md;
    private final HostKvPool pool;
    private final long pageBytes;
    private final int maxBatch;
    private final long prefetchCapUnits;
    private final StorageTierCounters metrics = new StorageTierCounters();

    private final ArrayDeque<Prefetch> prefetches = new ArrayDeque<>();
    private final ArrayList<Write> writes = new ArrayList<>();
    private final ArrayList<RadixNode> committed = new ArrayList<>();
    private final java.util.LinkedHashSet<Prefetch> protectedPrefetches = new java.util.LinkedHashSet<>();
    /** Keys known to be committed in the store (bounded, oldest forgotten first). */
    private final Map<PageKey, Boolean> known = new LinkedHashMap<>(1024, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<PageKey, Boolean> eldest) {
            return size() > KNOWN_KEYS_CAP;
        }
    };
    private final HostPage[] views;
    private long prefetchUnitsHeld;
    private int stagedPages;
    private long round;
    private boolean roundOpen;
    private final long[] agreed = new long[2];
    private final byte[] hashScratch = new byte[HASH];
    private final byte[] idScratch;
    private boolean closed;
    private boolean closing;

    /**
     * A tier on {@code controller}, which must not have a host-tier observer yet; register the tier as the
     * controller's {@link BackupListener} (e.g. through {@link ForwardingBackupListener}) so it sees commits.
     *
     * @param store     the store; shared by the ranks of a group (their keys differ by lane), not closed by the tier
     * @param namespace this rank's lane namespace ({@link KeyNamespace#NONE}: SGLang's unseeded keys)
     * @param agreement the group's agreement for prefetch completions (a channel of its own), null for one rank
     * @param clockNs   the clock of the timeout policy (the controller's clock)
     */
    public StorageTier(HiCacheController controller, PageStore store, KeyNamespace namespace, StorageTierConfig config,
                       RankAgreement agreement, int cpSize, LongSupplier clockNs) {
        if (controller == null || store == null || namespace == null || config == null || clockNs == null) {
            throw new IllegalArgumentException("controller, store, namespace, config and clock must not be null");
        }
        if (cpSize < 1 || (cpSize > 1) != (agreement != null)) {
            throw new IllegalArgumentException("a CP group of " + cpSize + " ranks needs an agreement exactly when "
                    + "cpSize > 1");
        }
        this.ctl = controller;
        this.tree = controller.tree();
        this.store = store;
        this.cfg = config;
        this.agreement = agreement;
        this.rank = controller.rank();
        this.cpSize = cpSize;
        this.pageSize = tree.pageSize();
        this.clockNs = clockNs;
        this.seed = namespace.isNone() ? null : namespace.seed().toBytes();
        this.md = sha256();
        this.pool = controller.hostPool();
        this.pageBytes = pool.bytesPerPageAllLayers();
        this.maxBatch = Math.max(1, store.maxBatchPages());
        this.prefetchCapUnits = Math.max(1, (long) Math.floor(cfg.prefetchHostShare()
                * controller.hostBudgetCapacityPages()));
        this.views = new HostPage[pool.pageCount()];
        this.idScratch = new byte[pageSize * 4];
        store.registerHostMemory(pool.segment());
        controller.hostTierObserver(this);
    }

    /** Counters; any thread. */
    public StorageTierMetrics metrics() {
        return metrics;
    }

    /** The configuration. */
    public StorageTierConfig config() {
        return cfg;
    }

    // ------------------------------------------------------------------ controller callbacks

    @Override
    public void onCommitted(BackupHandle handle) {
        Backup backup = (Backup) handle;
        for (int i = 0; i < backup.fragmentCount(); i++) {
            committed.add(backup.fragment(i));
        }
    }

    @Override
    public void onHostEvicting(RadixNode node, HostPages pages) {
        if (closed || cfg.writePolicy() != StorageWritePolicy.WRITE_BACK || !node.hasPageHashes()) {
            return;
        }
        List<PageKey> keys = ownedKeys(node, pages.lanes(), null);
        int n = keys.size();
        if (n == 0) {
            return;
        }
        if (stagedPages + n > cfg.writeBackStagingPages()) {
            metrics.add(StorageMetric.WRITE_BACK_DROPPED_PAGES, n);
            return;
        }
        // the host pages are freed when this returns: copy them out now
        Arena arena = Arena.ofShared();
        MemorySegment staging = arena.allocate(pageBytes * n, 64);
        List<HostPage> staged = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            MemorySegment slice = staging.asSlice(pageBytes * i, pageBytes);
            view(pages.hostPage(i)).copyTo(slice, 0);
            staged.add(HostPage.of(slice));
        }
        stagedPages += n;
        startWrite(new Write(null, keys, staged, arena));
    }

    // ------------------------------------------------------------------ engine calls

    /**
     * Starts a prefetch of the pages of {@code tokens[from, from + len)} after {@code match} (the engine's match of
     * the same tokens, just made), if storage may extend it by more than the threshold. Leases host pages for them
     * (at most the configured share of the pool for all prefetches together, and at most one store batch per rank).
     *
     * @return the prefetch, or null when none was started (too short, not contiguous, no room, closed)
     */
    public Prefetch prefetch(int[] tokens, int from, int len, MatchResult match, long requestId) {
        if (closed || ctl.isClosed()) {
            return null;
        }
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
        long units = (pages + cpSize - 1) / cpSize;
        if (prefetchUnitsHeld + units > prefetchCapUnits) {
            long room = prefetchCapUnits - prefetchUnitsHeld;
            pages = (int) Math.min(pages, room * cpSize);
            units = (pages + cpSize - 1) / cpSize;
        }
        if (pages <= 0 || (long) pages * pageSize <= cfg.prefetchThresholdTokens()) {
            metrics.increment(StorageMetric.PREFETCH_NO_ROOM);
            return null;
        }
        HostLease lease = ctl.reserveHost(matched, pages, total);
        if (lease == null) {
            metrics.increment(StorageMetric.PREFETCH_NO_ROOM);
            return null;
        }
        int[] own = Arrays.copyOfRange(tokens, from, from + (matched + pages) * pageSize);
        byte[] hashes = new byte[pages * HASH];
        if (last.isRoot()) {
            chain(seed, own, matched * pageSize, pages, hashes, 0);
        } else {
            ensureHashes(last);
            last.copyPageHash(last.pageCount() - 1, hashScratch, 0);
            chain(hashScratch, own, matched * pageSize, pages, hashes, 0);
        }
        Prefetch p = new Prefetch(requestId, own, matched, pages, lease, hashes, units,
                clockNs.getAsLong() + cfg.timeoutNs((long) pages * pageSize));
        LaneDescription lanes = lease.lanes();
        int[] offsets = new int[lanes.pageCount()];
        int owned = lanes.ownedOffsets(offsets);
        p.ownedOffsets = Arrays.copyOf(offsets, owned);
        p.keys = new ArrayList<>(owned);
        for (int i = 0; i < owned; i++) {
            p.keys.add(key(hashes, p.ownedOffsets[i]));
        }
        prefetchUnitsHeld += units;
        metrics.increment(StorageMetric.PREFETCH_STARTED);
        metrics.add(StorageMetric.PREFETCH_PAGES_REQUESTED, pages);
        p.ioStartNs = System.nanoTime();
        p.exists = owned == 0 ? StoreOp.completed(0) : store.existsPrefix(p.keys.subList(0, Math.min(owned, maxBatch)));
        prefetches.add(p);
        updateDepths();
        return p;
    }

    /**
     * Whether the request of {@code p} may run now under the prefetch policy: at once under best effort, when the
     * prefetch ended under wait-complete, at the ended prefetch or its deadline under timeout. A prefetch the request
     * runs without is still finished and published for later requests.
     */
    public boolean mayRun(Prefetch p) {
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
        }
        return run;
    }

    /**
     * The request of {@code p} was cancelled: nothing of the prefetch is published; its lease is released once its
     * reads are done (the store owns the pages until then); pages already published lose their hold. Idempotent.
     */
    public void cancel(Prefetch p) {
        if (!p.cancelled && p.state != Prefetch.State.ENDED) {
            p.cancelled = true;
            metrics.increment(StorageMetric.PREFETCH_CANCELLED);
        }
        consume(p);
    }

    /**
     * The request of {@code p} has taken its pages (its load-back was issued, which protects them itself, or it runs
     * without them): the published node is no longer held against host eviction. Idempotent; a no-op before the
     * prefetch ended.
     */
    public void consume(Prefetch p) {
        if (p.node != null) {
            if (!closed && !ctl.isClosed()) {
                tree.releaseHost(p.node);
            }
            p.node = null;
            protectedPrefetches.remove(p);
        }
    }

    /**
     * Under write_through_selective: a match touched the nodes of {@code match}'s path; those whose hit count reached
     * the threshold and whose pages are not known to be stored are written. A no-op under the other policies.
     */
    public void onMatch(MatchResult match) {
        if (closed || cfg.writePolicy() != StorageWritePolicy.WRITE_THROUGH_SELECTIVE) {
            return;
        }
        for (RadixNode n = match.lastHostNode(); n != null && !n.isRoot(); n = n.parent()) {
            if (n.hostValue() != null && n.hitCount() >= cfg.hitThreshold() && n.hostRef() == 0) {
                writeNode(n);
            }
        }
    }

    /**
     * Duty cycle, after the controller's {@code poll}: handles commits, advances writes and prefetches whose store
     * operations finished, agrees on landed prefetches and publishes them.
     *
     * @return work done
     */
    public int poll() {
        if (closed || ctl.isClosed()) {
            return 0;
        }
        int work = 0;
        for (int i = 0; i < committed.size(); i++) {
            RadixNode n = committed.get(i);
            if (!n.isAttached() || n.hostValue() == null) {
                continue;
            }
            ensureHashes(n);
            if (cfg.writePolicy() == StorageWritePolicy.WRITE_THROUGH
                    || (cfg.writePolicy() == StorageWritePolicy.WRITE_THROUGH_SELECTIVE
                    && n.hitCount() >= cfg.hitThreshold())) {
                writeNode(n);
            }
            work++;
        }
        committed.clear();
        for (int i = writes.size() - 1; i >= 0; i--) {
            if (advance(writes.get(i))) {
                writes.remove(i);
                work++;
            }
        }
        for (Prefetch p : prefetches) {
            work += advance(p);
        }
        work += agree();
        updateDepths();
        return work;
    }

    /** Prefetches not yet ended plus writes not yet done. */
    public int inFlight() {
        return prefetches.size() + writes.size();
    }

    /**
     * Waits (wall clock, polling) until every store operation of the tier is done, then ends everything: leases are
     * released (never published), host protections dropped, staging freed. Call before closing the store and the
     * controller. Idempotent.
     *
     * @throws IllegalStateException when operations are still running after {@code timeoutMs}: close the store (which
     *     completes them) and call again
     */
    @Override
    public void close() {
        close(30_000);
    }

    /** {@link #close()} with its bound in milliseconds. */
    public void close(long timeoutMs) {
        if (closed) {
            return;
        }
        closing = true;
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        for (Prefetch p : prefetches) {
            p.cancelled = true; // shutdown publishes nothing
        }
        while (true) {
            StoreOp<?> pending = null;
            for (Prefetch p : prefetches) {
                while (advance(p) > 0) {
                    // CHECKING -> READING -> LANDED as far as the store has answered
                }
                StoreOp<?> op = runningOp(p);
                if (op != null) {
                    pending = op;
                }
            }
            for (int i = writes.size() - 1; i >= 0; i--) {
                Write w = writes.get(i);
                if (advance(w)) {
                    writes.remove(i);
                } else {
                    pending = w.put != null ? w.put : w.exists;
                }
            }
            if (pending == null) {
                break;
            }
            if (System.nanoTime() >= deadline) {
                updateDepths();
                throw new IllegalStateException("storage tier close: store operations still running after "
                        + timeoutMs + " ms; close the store (which completes them) and call close again");
            }
            awaitQuietly(pending, deadline);
        }
        closed = true;
        boolean live = !ctl.isClosed();
        for (Prefetch p : prefetches) {
            if (live) {
                ctl.releaseHost(p.lease);
            }
            p.state = Prefetch.State.ENDED;
        }
        prefetches.clear();
        prefetchUnitsHeld = 0;
        for (Prefetch p : new ArrayList<>(protectedPrefetches)) {
            if (live) {
                tree.releaseHost(p.node);
            }
            p.node = null;
        }
        protectedPrefetches.clear();
        committed.clear();
        if (live) {
            ctl.hostTierObserver(null);
        }
        updateDepths();
    }

    // ------------------------------------------------------------------ writes

    private void writeNode(RadixNode n) {
        HostPages hp = (HostPages) n.hostValue();
        ensureHashes(n);
        List<HostPage> pages = new ArrayList<>();
        List<PageKey> keys = ownedKeys(n, hp.lanes(), pages);
        if (keys.isEmpty()) {
            return;
        }
        for (int from = 0; from < keys.size(); from += maxBatch) {
            int to = Math.min(keys.size(), from + maxBatch);
            tree.protectHost(n);
            startWrite(new Write(n, new ArrayList<>(keys.subList(from, to)), new ArrayList<>(pages.subList(from, to)),
                    null));
        }
    }

    /** Keys (and, if {@code pagesOut} is given, host page views) of the owned positions not known to be stored. */
    private List<PageKey> ownedKeys(RadixNode n, LaneDescription lanes, List<HostPage> pagesOut) {
        HostPages hp = (HostPages) n.hostValue();
        int[] offsets = new int[lanes.pageCount()];
        // a node and its host value cover the same positions; its lanes say which this rank owns
        int owned = lanes.ownedOffsets(offsets);
        List<PageKey> keys = new ArrayList<>(owned);
        for (int i = 0; i < owned; i++) {
            n.copyPageHash(offsets[i], hashScratch, 0);
            PageKey k = PageKey.ofDigest(hashScratch);
            if (pagesOut == null) {
                keys.add(k); // write-back: aligned with the evicted value's pages; the existence check skips known ones
                continue;
            }
            if (known.containsKey(k)) {
                metrics.increment(StorageMetric.WRITE_PAGES_PRESENT);
                continue;
            }
            keys.add(k);
            pagesOut.add(view(hp.hostPage(i)));
        }
        return keys;
    }

    private void startWrite(Write w) {
        w.ioStartNs = System.nanoTime();
        w.exists = store.existsPrefix(w.keys);
        writes.add(w);
    }

    /** Advances a write; returns true when it is done and ended. */
    private boolean advance(Write w) {
        if (w.put == null) {
            if (!w.exists.isDone()) {
                return false;
            }
            int present = Math.min(w.keys.size(), Math.max(0, w.exists.result()));
            metrics.add(StorageMetric.WRITE_PAGES_PRESENT, present);
            for (int i = 0; i < present; i++) {
                known.put(w.keys.get(i), Boolean.TRUE);
            }
            if (present == w.keys.size() || closing) {
                if (present == w.keys.size()) {
                    l3Committed(w);
                }
                finishWrite(w, !ctl.isClosed());
                return true;
            }
            w.offset = present;
            metrics.add(StorageMetric.WRITE_PAGES_SUBMITTED, w.keys.size() - present);
            w.put = store.put(w.keys.subList(present, w.keys.size()), w.pages.subList(present, w.pages.size()));
            return false;
        }
        if (!w.put.isDone()) {
            return false;
        }
        StoreResult r = w.put.result();
        int ok = 0;
        for (int i = 0; i < r.size(); i++) {
            if (r.ok(i)) {
                ok++;
                known.put(w.keys.get(w.offset + i), Boolean.TRUE);
            }
        }
        metrics.add(StorageMetric.WRITE_PAGES_STORED, ok);
        metrics.add(StorageMetric.WRITE_BYTES, ok * pageBytes);
        metrics.add(StorageMetric.WRITE_FAILED_PAGES, r.size() - ok);
        metrics.add(StorageMetric.WRITE_IO_NS, System.nanoTime() - w.ioStartNs);
        if (ok == r.size() && w.offset + ok == w.keys.size()) {
            l3Committed(w);
        }
        finishWrite(w, !ctl.isClosed());
        return true;
    }

    /** Every page of the write's node is in the store: a KV event (medium L3) if the cache publishes them. */
    private void l3Committed(Write w) {
        io.hicache.radix.spi.TierObserver o = ctl.isClosed() ? null : ctl.tierObserver();
        if (o != null && w.node != null && w.node.isAttached() && w.node.pageCount() == w.keys.size()) {
            o.onStored(io.hicache.radix.spi.TierObserver.STORAGE, w.node);
        }
    }

    private void finishWrite(Write w, boolean controllerLive) {
        if (w.node != null && controllerLive && !w.released) {
            tree.releaseHost(w.node);
        }
        w.released = true;
        if (w.staging != null) {
            stagedPages -= w.keys.size();
            w.staging.close();
        }
    }

    // ------------------------------------------------------------------ prefetch

    /** Advances a prefetch's I/O; returns work done. */
    private int advance(Prefetch p) {
        switch (p.state) {
            case CHECKING -> {
                if (!p.exists.isDone()) {
                    return 0;
                }
                int from = p.present;
                int chunk = Math.min(maxBatch, p.keys.size() - from);
                int k = Math.min(chunk, Math.max(0, p.exists.result()));
                p.present += k;
                if (k == chunk && p.present < p.keys.size() && !p.cancelled) {
                    p.exists = store.existsPrefix(p.keys.subList(p.present, Math.min(p.keys.size(),
                            p.present + maxBatch)));
                    return 1;
                }
                if (p.present == 0 || p.cancelled) {
                    land(p, 0);
                    return 1;
                }
                p.gets = new ArrayList<>();
                for (int c = 0; c < p.present; c += maxBatch) {
                    int end = Math.min(p.present, c + maxBatch);
                    List<HostPage> pages = new ArrayList<>(end - c);
                    for (int i = c; i < end; i++) {
                        pages.add(view(p.lease.hostPage(i)));
                    }
                    p.gets.add(store.get(p.keys.subList(c, end), pages));
                }
                p.state = Prefetch.State.READING;
                return 1;
            }
            case READING -> {
                for (StoreOp<StoreResult> g : p.gets) {
                    if (!g.isDone()) {
                        return 0;
                    }
                }
                int good = 0;
                boolean whole = true;
                long failed = 0;
                for (StoreOp<StoreResult> g : p.gets) {
                    StoreResult r = g.result();
                    if (whole) {
                        int lead = r.leadingOk();
                        good += lead;
                        whole = lead == r.size();
                    }
                    failed += r.count(StoreStatus.FAILED) + r.count(StoreStatus.REJECTED);
                }
                metrics.add(StorageMetric.PREFETCH_BYTES, good * pageBytes);
                metrics.add(StorageMetric.PREFETCH_IO_NS, System.nanoTime() - p.ioStartNs);
                metrics.add(StorageMetric.PREFETCH_FAILED_PAGES, failed);
                land(p, good);
                return 1;
            }
            default -> {
                return 0;
            }
        }
    }

    /** The first store operation of {@code p} still running, or null. */
    private static StoreOp<?> runningOp(Prefetch p) {
        if (p.state == Prefetch.State.CHECKING) {
            return p.exists.isDone() ? null : p.exists;
        }
        if (p.state == Prefetch.State.READING) {
            for (StoreOp<StoreResult> g : p.gets) {
                if (!g.isDone()) {
                    return g;
                }
            }
        }
        return null;
    }

    /** The I/O of {@code p} is done with {@code goodOwned} leading owned pages whole. */
    private void land(Prefetch p, int goodOwned) {
        int positions = goodOwned < p.ownedOffsets.length ? p.ownedOffsets[goodOwned] : p.pages;
        p.localPositions = p.cancelled ? 0 : positions;
        p.state = Prefetch.State.LANDED;
    }

    /** Agrees on landed prefetches in FIFO order and ends them. */
    private int agree() {
        int work = 0;
        while (!prefetches.isEmpty()) {
            Prefetch head = prefetches.peekFirst();
            if (head.state != Prefetch.State.LANDED) {
                return work;
            }
            long positions;
            if (agreement == null) {
                positions = head.localPositions;
            } else {
                if (!roundOpen) {
                    agreement.contribute(rank, round, head.localPositions, Long.MAX_VALUE);
                    roundOpen = true;
                }
                if (!agreement.tryResult(rank, round, agreed)) {
                    return work;
                }
                roundOpen = false;
                round++;
                positions = agreed[0];
            }
            prefetches.pollFirst();
            end(head, (int) Math.min(positions, head.pages));
            work++;
        }
        return work;
    }

    private void end(Prefetch p, int positions) {
        prefetchUnitsHeld -= p.units;
        p.state = Prefetch.State.ENDED;
        if (positions <= 0 || p.cancelled) {
            ctl.releaseHost(p.lease);
            return;
        }
        RadixNode node = ctl.publishHost(p.lease, p.tokens, 0, positions, p.hashes, 0);
        if (node == null) {
            metrics.increment(StorageMetric.PREFETCH_PUBLISH_REFUSED);
            return;
        }
        p.published = positions;
        // held for its request: not host-evicted before the request has loaded it (see consume)
        tree.protectHost(node);
        p.node = node;
        protectedPrefetches.add(p);
        metrics.add(StorageMetric.PREFETCH_PAGES_PUBLISHED, positions);
        for (int i = 0; i < p.keys.size() && p.ownedOffsets[i] < positions; i++) {
            known.put(p.keys.get(i), Boolean.TRUE);
        }
    }

    // ------------------------------------------------------------------ hashes

    /** Gives {@code node} and every ancestor without them their page hashes, top-down. */
    private void ensureHashes(RadixNode node) {
        if (node.isRoot() || node.hasPageHashes()) {
            return;
        }
        RadixNode parent = node.parent();
        byte[] prior;
        if (parent.isRoot()) {
            prior = seed;
        } else {
            ensureHashes(parent);
            parent.copyPageHash(parent.pageCount() - 1, hashScratch, 0);
            prior = hashScratch;
        }
        int pages = node.pageCount();
        int[] ids = new int[node.tokenCount()];
        node.copyTokens(ids, 0);
        byte[] hashes = new byte[pages * HASH];
        chain(prior, ids, 0, pages, hashes, 0);
        tree.setPageHashes(node, hashes, 0);
    }

    /** SGLang's chain over {@code pages} pages of {@code ids} from {@code from}, seeded with {@code prior} (or none). */
    private void chain(byte[] prior, int[] ids, int from, int pages, byte[] out, int outOff) {
        byte[] prev = prior == null ? null : prior.clone();
        for (int p = 0; p < pages; p++) {
            md.reset();
            if (prev != null) {
                md.update(prev, 0, HASH);
            }
            int base = from + p * pageSize;
            for (int t = 0; t < pageSize; t++) {
                int v = ids[base + t];
                idScratch[4 * t] = (byte) v;
                idScratch[4 * t + 1] = (byte) (v >>> 8);
                idScratch[4 * t + 2] = (byte) (v >>> 16);
                idScratch[4 * t + 3] = (byte) (v >>> 24);
            }
            md.update(idScratch, 0, pageSize * 4);
            try {
                md.digest(out, outOff + p * HASH, HASH);
            } catch (java.security.DigestException e) {
                throw new IllegalStateException(e);
            }
            if (prev == null) {
                prev = new byte[HASH];
            }
            System.arraycopy(out, outOff + p * HASH, prev, 0, HASH);
        }
    }

    private static PageKey key(byte[] hashes, int position) {
        return PageKey.ofDigest(Arrays.copyOfRange(hashes, position * HASH, position * HASH + HASH));
    }

    private HostPage view(int hostPage) {
        HostPage v = views[hostPage];
        if (v == null) {
            v = HostPage.of(pool, hostPage);
            views[hostPage] = v;
        }
        return v;
    }

    private void updateDepths() {
        metrics.queueDepths(prefetches.size(), writes.size());
    }

    private static void awaitQuietly(StoreOp<?> op, long deadlineNs) {
        long left = deadlineNs - System.nanoTime();
        if (left <= 0) {
            return;
        }
        try {
            op.await(left, TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            // the caller checks the deadline
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    // ------------------------------------------------------------------ state

    /**
     * One prefetch: leased host pages for positions {@code [startPage, startPage + pages)} of a request, filled from
     * the store. Scheduler thread.
     */
    public static final class Prefetch {
        /** Where a prefetch is. */
        public enum State {
            /** Asking the store which keys exist. */
            CHECKING,
            /** Reading the existing keys into the leased host pages. */
            READING,
            /** I/O done on this rank; awaiting the group's agreement. */
            LANDED,
            /** Published (its agreed prefix) or released. */
            ENDED
        }

        final long requestId;
        final int[] tokens;
        final int startPage;
        final int pages;
        final HostLease lease;
        final byte[] hashes;
        final long units;
        final long deadlineNs;
        int[] ownedOffsets;
        List<PageKey> keys;
        StoreOp<Integer> exists;
        List<StoreOp<StoreResult>> gets;
        long ioStartNs;
        int present;
        int localPositions;
        int published;
        RadixNode node;
        boolean cancelled;
        boolean terminatedEarly;
        State state = State.CHECKING;

        Prefetch(long requestId, int[] tokens, int startPage, int pages, HostLease lease, byte[] hashes, long units,
                 long deadlineNs) {
            this.requestId = requestId;
            this.tokens = tokens;
            this.startPage = startPage;
            this.pages = pages;
            this.lease = lease;
            this.hashes = hashes;
            this.units = units;
            this.deadlineNs = deadlineNs;
        }

        /** The engine's request id. */
        public long requestId() {
            return requestId;
        }

        /** First page position the prefetch covers. */
        public int startPage() {
            return startPage;
        }

        /** Positions leased. */
        public int pageCount() {
            return pages;
        }

        /** Positions published as host hits (0 until ended; 0 when nothing was stored or it was cancelled). */
        public int publishedPages() {
            return published;
        }

        /** Current state. */
        public State state() {
            return state;
        }

        @Override
        public String toString() {
            return "Prefetch{request=" + requestId + ", pages=[" + startPage + ", " + (startPage + pages) + "), "
                    + state + (cancelled ? ", cancelled" : "") + ", published=" + published + '}';
        }
    }

    /** One write batch: existence check, then a put of the keys not stored yet. Scheduler thread. */
    private static final class Write {
        final RadixNode node;
        final List<PageKey> keys;
        final List<HostPage> pages;
        final Arena staging;
        StoreOp<Integer> exists;
        StoreOp<StoreResult> put;
        int offset;
        long ioStartNs;
        boolean released;

        Write(RadixNode node, List<PageKey> keys, List<HostPage> pages, Arena staging) {
            this.node = node;
            this.keys = keys;
            this.pages = pages;
            this.staging = staging;
        }
    }
}
