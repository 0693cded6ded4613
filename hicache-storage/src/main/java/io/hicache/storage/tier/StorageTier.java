package io.hicache.storage.tier;

import io.hicache.core.BackupHandle;
import io.hicache.core.BackupListener;
import io.hicache.core.spi.StoragePort;
import io.hicache.core.cp.RankAgreement;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StorageTierMetrics;
import io.hicache.storage.StorageWritePolicy;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * The L3 storage tier of one CP rank, sitting on its cache's {@link StoragePort} (engines get one behind their
 * {@link io.hicache.core.HiCache} through {@link io.hicache.storage.L3Tier}, which calls this class for them):
 * writes committed host pages to a {@link PageStore} (L2 → L3) under a {@link StorageWritePolicy}, and prefetches
 * pages a match is missing from the store into leased host pages (L3 → L2), publishing them as host hits once every
 * rank of the group agrees they landed.
 *
 * <p><b>Keys.</b> Every radix node the tier touches gets its page hashes once ({@link StoragePort#setPageHashes}), and
 * they split with the node: the SHA-256 chain of SGLang's {@code get_hash_str}, seeded with this lane's
 * {@link KeyNamespace#seed()}. A page's object key is its hash.
 *
 * <p><b>Draft KV.</b> In a cache with draft/MTP layers a page is stored as two objects, its draft part under
 * {@link KeyNamespace#draftKey} of its key and then its target part, which commits the pair; a prefetched page is a
 * host hit only when both parts read back whole, and is published as carrying draft KV so its load-back restores
 * both.
 *
 * <p><b>Writes</b> run behind the host commit: the tier learns of commits as the controller's
 * {@link BackupListener} and of host evictions as its {@link StoragePort.EvictionObserver}, and does the work in
 * {@link #poll()}
 * (never inside the controller's callbacks, never on the forward path, so a device backup never waits for it). A
 * write first asks the store which of its keys exist and puts only the rest; keys known to be stored are not asked
 * again while younger than {@link StorageTierConfig#knownKeysMaxAgeNs()}, and all are forgotten when the store
 * answers a new {@link PageStore#epoch()} (asked every {@link StorageTierConfig#storeEpochCheckNs()}); a key a read
 * found missing or damaged is put by the next write of it whatever the existence check says. While a write reads a node's host pages the node is host-protected (not host-evictable; in a CP group the
 * protection is dropped when every rank finished the write, so host eviction picks the same nodes everywhere);
 * write-back copies the evicted pages into a bounded staging area first, since their host pages are freed at once.
 *
 * <p><b>Prefetch.</b> {@link #prefetch} leases host pages ({@link StoragePort#reserveHost}) within a share of
 * the host pool, checks existence and reads on the store's threads. Completion is agreed in FIFO order through a
 * {@link RankAgreement} (minimum over the group of the pages each rank has whole, in positions), and only the agreed
 * prefix is published ({@link StoragePort#publishHost}); the rest of the lease is freed. A lease always ends:
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
 * <p><b>Parts.</b> The tier is the controller's listener and observer and the engine's entry point; the work is done
 * by its parts, each owned by the same thread: {@link PageHasher} (the keys), {@link TierWriter} (L2 → L3),
 * {@link TierPrefetcher} (L3 → L2) with its {@link PrefetchAgreement}, sharing {@link HostViews} and
 * {@link KnownKeys}.
 *
 * <p><b>Threads.</b> Owned by the controller's scheduler thread: every method is called there, except
 * {@link #metrics()} (any thread). Store I/O runs on the store's threads; the tier only polls its operations.
 */
public final class StorageTier implements BackupListener, StoragePort.EvictionObserver, AutoCloseable {
    /** The cache's controller, reached only through its storage port. */
    private final StoragePort ctl;
    private final StorageTierConfig cfg;
    private final StorageTierCounters metrics = new StorageTierCounters();
    private final TierWriter writer;
    private final TierPrefetcher prefetcher;
    private final PrefetchAgreement agreement;
    private final PageStore store;
    private final KnownKeys known;
    private final LongSupplier clockNs;
    /** The store's epoch question in flight, or null. */
    private StoreOp<Long> epochOp;
    /** The last epoch the store answered (valid once {@link #epochSeen}) and when it was last asked (cache clock). */
    private long epoch;
    private boolean epochSeen;
    private long epochAskedNs;
    private boolean closed;

    /**
     * A tier on the cache behind {@code controller} (its port), which must not have a host-eviction observer yet;
     * register the tier as the cache's {@link BackupListener} (e.g. through {@link ForwardingBackupListener}), or
     * attach it through the port, so it sees commits.
     *
     * @param store     the store; shared by the ranks of a group (their keys differ by lane), not closed by the tier
     * @param namespace this rank's lane namespace ({@link KeyNamespace#NONE}: SGLang's unseeded keys)
     * @param agreement the group's agreement for prefetch completions and write protections (a channel of its own),
     *                  null for one rank
     * @param clockNs   the clock of the timeout policy (the controller's clock)
     * @throws IllegalArgumentException on a null argument, or an agreement given exactly when {@code cpSize == 1}
     */
    public StorageTier(StoragePort controller, PageStore store, KeyNamespace namespace, StorageTierConfig config,
                       RankAgreement agreement, int cpSize, LongSupplier clockNs) {
        if (controller == null || store == null || namespace == null || config == null || clockNs == null) {
            throw new IllegalArgumentException("controller, store, namespace, config and clock must not be null");
        }
        if (cpSize < 1 || (cpSize > 1) != (agreement != null)) {
            throw new IllegalArgumentException("a CP group of " + cpSize + " ranks needs an agreement exactly when "
                    + "cpSize > 1");
        }
        this.ctl = controller;
        this.cfg = config;
        PageHasher hasher = new PageHasher(controller, namespace);
        HostViews views = new HostViews(controller);
        this.store = store;
        this.clockNs = clockNs;
        KnownKeys known = new KnownKeys(clockNs, config.knownKeysMaxAgeNs());
        this.known = known;
        L3Announcer announcer = new L3Announcer(controller, hasher);
        this.writer = new TierWriter(controller, store, config, metrics, hasher, views, known, announcer,
                cpSize > 1);
        this.prefetcher = new TierPrefetcher(controller, store, config, metrics, hasher, views, known, announcer,
                cpSize, clockNs);
        this.agreement = new PrefetchAgreement(agreement, controller.rank());
        store.registerHostMemory(controller.hostMemory(false));
        if (controller.hasDraftPool()) {
            store.registerHostMemory(controller.hostMemory(true));
        }
        controller.observeHostEvictions(this);
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
        writer.onCommitted(handle);
    }

    @Override
    public void onHostEvicting(RadixNode node, StoragePort.HostCopy pages) {
        if (!closed) {
            writer.onHostEvicting(node, pages);
        }
    }

    // ------------------------------------------------------------------ engine calls

    /**
     * Starts a prefetch of the pages of {@code tokens[from, from + len)} after {@code match} (the engine's match of
     * the same tokens, just made), if storage may extend it by more than the threshold. Leases host pages for them
     * (at most the configured share of the pool for all prefetches together, and at most
     * 16 store batches per rank).
     *
     * @return the prefetch, or null when none was started (too short, not contiguous, no room, closed)
     */
    public Prefetch prefetch(int[] tokens, int from, int len, MatchResult match, long requestId) {
        if (closed || ctl.isClosed()) {
            return null;
        }
        Prefetch p = prefetcher.prefetch(tokens, from, len, match, requestId);
        updateDepths();
        return p;
    }

    /**
     * Whether the request of {@code p} may run now under the prefetch policy: at once under best effort, when the
     * prefetch ended under wait-complete, at the ended prefetch or its deadline under timeout. A prefetch the request
     * runs without (true before it ended) is abandoned: no further store batch, nothing published, its lease released
     * at once when it was still checking existence on a rank alone, else once its reads are done.
     */
    public boolean mayRun(Prefetch p) {
        return prefetcher.mayRun(p);
    }

    /**
     * The request of {@code p} was cancelled: nothing of the prefetch is published; its lease is released once its
     * reads are done (the store owns the pages until then); pages already published lose their hold. Idempotent.
     */
    public void cancel(Prefetch p) {
        prefetcher.cancel(p, live());
    }

    /**
     * The request of {@code p} has taken its pages (its load-back was issued, which protects them itself, or it runs
     * without them): the published node is no longer held against host eviction. Idempotent; a no-op before the
     * prefetch ended.
     */
    public void consume(Prefetch p) {
        prefetcher.consume(p, live());
    }

    /**
     * Under write_through_selective: a match touched the nodes of {@code match}'s path; those whose hit count reached
     * the threshold and whose pages are not known to be stored are written. A no-op under the other policies.
     */
    public void onMatch(MatchResult match) {
        if (!closed) {
            writer.onMatch(match);
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
        checkEpoch();
        int work = writer.poll() + prefetcher.poll();
        // rounds while anything awaits the group and the last one moved something: what is pending and what a
        // result moves are agreed state, so every rank opens the same rounds
        while ((prefetcher.awaitsGroup() || writer.trackedCount() > 0)
                && agreement.poll(prefetcher.headValue(), writer.agreementValue())) {
            int moved = prefetcher.agreed(agreement.head(), agreement.decided())
                    + writer.agreed(agreement.writes(), agreement.decided());
            if (moved == 0) {
                break;
            }
            work += moved;
        }
        updateDepths();
        return work;
    }

    /**
     * Asks the store for its epoch at most every {@link StorageTierConfig#storeEpochCheckNs()}; a new one (the store
     * restarted empty or was flushed) drops every remembered key, so the next write of each page asks the store
     * again and puts what it lost. An unknown answer (store down) changes nothing.
     */
    private void checkEpoch() {
        if (epochOp != null) {
            if (!epochOp.isDone()) {
                return;
            }
            long e = epochOp.result();
            epochOp = null;
            if (e != PageStore.EPOCH_UNKNOWN) {
                if (epochSeen && e != epoch) {
                    known.clear();
                    metrics.increment(io.hicache.storage.StorageMetric.KNOWN_KEYS_RESETS);
                }
                epoch = e;
                epochSeen = true;
            }
        }
        long now = clockNs.getAsLong();
        if (epochOp == null && (epochAskedNs == 0 || now - epochAskedNs >= cfg.storeEpochCheckNs())) {
            epochAskedNs = now == 0 ? 1 : now;
            epochOp = store.epoch();
        }
    }

    /** Prefetches not yet ended plus writes not yet done. */
    public int inFlight() {
        return prefetcher.size() + writer.size();
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
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (true) {
            StoreOp<?> pending = prefetcher.drain();
            StoreOp<?> write = writer.drain();
            if (pending == null) {
                pending = write;
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
        prefetcher.close(live);
        writer.close(live);
        if (live) {
            ctl.observeHostEvictions(null);
        }
        updateDepths();
    }

    private boolean live() {
        return !closed && !ctl.isClosed();
    }

    private void updateDepths() {
        metrics.queueDepths(prefetcher.size(), writer.size());
    }

    private static void awaitQuietly(StoreOp<?> op, long deadlineNs) {
        long left = deadlineNs - System.nanoTime();
        if (left <= 0) {
            return;
        }
        try {
            op.await(left, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // the caller checks the deadline
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
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
        final StoragePort.Lease lease;
        final byte[] hashes;
        final long units;
        final long deadlineNs;
        int[] ownedOffsets;
        List<PageKey> keys;
        /** The draft keys aligned with {@link #keys}; null when the cache has no draft layers. */
        List<PageKey> draftKeys;
        StoreOp<Integer> exists;
        StoreOp<Integer> draftExists;
        List<StoreOp<StoreResult>> gets;
        List<StoreOp<StoreResult>> draftGets;
        long ioStartNs;
        int present;
        int localPositions;
        /** Owned indices (ascending) of the pages this rank's read found gone, the first {@link #goneCount}. */
        int[] goneIndex;
        int goneCount;
        /** The L3 fingerprint of the page before {@link #startPage} ({@link L3Announcer#NONE} at the start). */
        long parentFp;
        /** The first position another prefetch's read found gone after this one read it (no L3 announcement past). */
        int goneAfterRead = Integer.MAX_VALUE;
        int published;
        RadixNode node;
        boolean cancelled;
        boolean terminatedEarly;
        /** The lease has ended (published or released); a prefetch abandoned while checking ends it early. */
        boolean leaseReleased;
        State state = State.CHECKING;

        Prefetch(long requestId, int[] tokens, int startPage, int pages, StoragePort.Lease lease, byte[] hashes,
                 long units, long deadlineNs) {
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
}
