package io.hicache.sim.engine;

import io.hicache.core.HiCache;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.radix.MatchResult;
import io.hicache.sim.StorageOptions;
import io.hicache.sim.report.StorageResult;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.L3Prefetch;
import io.hicache.storage.L3Tier;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreStats;
import io.hicache.storage.tier.MemoryPageStore;

import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.concurrent.locks.LockSupport;

/**
 * The storage tier of one {@link Instance}: the fleet's store, shared by the CP group, and one {@link L3Tier} per rank
 * attached to its cache as an engine attaches it (the cache's own {@code match}, {@code poll} and commits drive it).
 * The store's I/O is real, but the tiers reach it through a {@link TimedStore}, so the simulated timeline decides when
 * each operation's completion becomes visible: a put at its modelled completion time (latency + true bytes /
 * bandwidth, puts queued on the instance's write link), a read at the next poll; the replay's thread waits (wall
 * clock) for the real I/O at those points. A prefetch is run to its end when it starts; the simulated time a request
 * waits for it is modelled: latency + true bytes / bandwidth, bounded by the prefetch policy (none under best
 * effort, the deadline under timeout). Owned by the replay's thread.
 */
final class StorageSim implements AutoCloseable {
    private static final long IO_DEADLINE_NS = TimedStore.IO_DEADLINE_NS;

    /** Tests set this to wrap the run's store (e.g. to vary how fast its I/O is); null: the store as opened. */
    static volatile java.util.function.UnaryOperator<PageStore> wrapStoreForTests;

    private final StorageOptions options;
    private final PageStore store;
    /** The tiers' view of the store: completions become visible at simulated times. */
    private final TimedStore io;
    private final LongSupplier clockNs;
    private final L3Tier[] tiers;
    private HiCache[] caches;
    private final StorageTierConfig tierConfig;
    private final double trueBytesPerSimByte;
    private final long simPageBytes;
    private final int pageSizeTokens;
    private final L3Prefetch[] scratch;
    private long storageHitPages;
    private long waitNs;
    private int prefetchQueuePeak;
    private int writeQueuePeak;
    private int published;
    /** Simulated time before which the tiers were polled (wake-ups of requests waiting for prefetches). */
    long nextReadyNs = Long.MAX_VALUE;
    private boolean closed;

    /**
     * Opens the store ({@code file}/{@code redis}: connects now, so a bad location or password fails before the run).
     *
     * @param backend             the fleet's store
     * @param clockNs             the instance's simulated clock
     * @param simPageBytes        bytes of one simulated host page (the model store's capacity unit)
     * @param trueBytesPerSimByte true KV bytes one simulated byte stands for
     */
    StorageSim(StorageOptions options, TimedStore.Backend backend, LongSupplier clockNs, int cp, int pageSizeTokens,
               long simPageBytes, double trueBytesPerSimByte) {
        this.options = options;
        this.trueBytesPerSimByte = trueBytesPerSimByte;
        this.simPageBytes = simPageBytes;
        this.pageSizeTokens = pageSizeTokens;
        this.store = backend.store;
        this.clockNs = clockNs;
        this.io = new TimedStore(backend, clockNs, options.latencyNs(), options.bandwidthBytesPerSecond(),
                trueBytesPerSimByte);
        this.tiers = new L3Tier[cp];
        this.tierConfig = StorageTierConfig.DEFAULT.withWritePolicy(options.writePolicy())
                .withPrefetchPolicy(options.prefetchPolicy())
                // the controllers' trees hold one key per simulated page: thresholds count tree tokens
                .withPrefetchThresholdTokens(options.prefetchThresholdTokens() / pageSizeTokens);
        this.scratch = new L3Prefetch[cp];
    }

    /**
     * Opens the run's store, shared by every instance of the fleet ({@code file}/{@code redis}: connects now, so a
     * bad location or password fails before the run). The caller closes it after the tiers.
     */
    static PageStore openStore(StorageOptions options, int pageSizeTokens, long simPageBytes) {
        PageStore store = switch (options.kind()) {
            case MODEL -> new MemoryPageStore(options.capacityTokens() == 0 ? 0
                    : Math.max(simPageBytes, options.capacityTokens() / pageSizeTokens * simPageBytes),
                    StoreConfig.DEFAULT_MAX_BATCH_PAGES);
            case FILE, REDIS -> PageStores.open(options.location(), StoreConfig.defaults());
        };
        java.util.function.UnaryOperator<PageStore> wrap = wrapStoreForTests;
        return wrap == null ? store : wrap.apply(store);
    }

    /** Attaches a tier to each rank's built cache (the ranks of a group share a prefetch agreement). */
    void attach(HiCache[] caches, String modelId) {
        this.caches = caches;
        int cp = caches.length;
        InProcessRankAgreement agreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        for (int r = 0; r < cp; r++) {
            KeyNamespace ns = KeyNamespace.builder().modelId(modelId).kvDtype("sim-1-byte-per-layer")
                    .pageSizeTokens(caches[r].tree().pageSize()).hostLayout(caches[r].hostPool().layout()).cp(cp, r)
                    .build();
            tiers[r] = L3Tier.attach(caches[r], io, ns, tierConfig, agreement);
        }
    }

    /** Notes the tiers' queue depths (after the caches' polls, which drive the tiers). */
    void sample() {
        for (L3Tier t : tiers) {
            prefetchQueuePeak = Math.max(prefetchQueuePeak, t.metrics().prefetchesInFlight());
            writeQueuePeak = Math.max(writeQueuePeak, t.metrics().writesInFlight());
        }
    }

    /**
     * Makes visible the store operations due at the instance's current simulated time (waiting for their real I/O);
     * call before polling the caches.
     *
     * @return operations that became visible
     */
    int advanceIo() {
        return io.advance(clockNs.getAsLong());
    }

    /** Whether a store operation becomes visible at {@code nowNs} ({@link #advanceIo} has work). */
    boolean ioDue(long nowNs) {
        return io.due(nowNs);
    }

    /** The simulated time the next held write completes, or {@code Long.MAX_VALUE}: the instance wakes then. */
    long nextIoDueNs() {
        return io.nextDueNs();
    }

    /** Polls every rank's cache, which advances its tier's writes and prefetches; returns the tiers' work ended. */
    private int poll() {
        int before = inFlight();
        for (HiCache c : caches) {
            c.poll();
        }
        sample();
        return before - inFlight();
    }

    /**
     * Prefetches what storage holds beyond {@code match} for a request whose page keys are {@code keys}, waits for the
     * I/O (wall clock) and publishes it on every rank, all at the current simulated time (writes due by then are
     * made visible too, puts submitted meanwhile are held to their modelled completion).
     *
     * @return the simulated time the request waits for it (0 under best effort), or -1 when no prefetch started
     */
    long prefetch(int[] keys, MatchResult[] match, long requestId) {
        published = 0;
        for (int r = 0; r < tiers.length; r++) {
            scratch[r] = tiers[r].prefetch(keys, 0, keys.length, match[r], requestId);
        }
        if (scratch[0] == null) {
            for (int r = 1; r < tiers.length; r++) {
                if (scratch[r] != null) {
                    throw new IllegalStateException("ranks disagree on starting a prefetch for request " + requestId);
                }
            }
            return -1;
        }
        if (!pollUntil(this::allEnded, clockNs.getAsLong())) {
            throw new IllegalStateException("storage prefetch of request " + requestId + " still running after "
                    + TimeUnit.NANOSECONDS.toSeconds(IO_DEADLINE_NS) + " s of wall-clock time");
        }
        published = scratch[0].publishedPages();
        double trueBytes = (double) published * simPageBytes * trueBytesPerSimByte;
        long transferNs = published == 0 ? 0 : options.latencyNs()
                + (long) (trueBytes / options.bandwidthBytesPerSecond() * 1e9);
        long wait = switch (options.prefetchPolicy()) {
            case BEST_EFFORT -> 0;
            case WAIT_COMPLETE -> transferNs;
            case TIMEOUT -> Math.min(transferNs, tierConfig.timeoutNs((long) scratch[0].pageCount() * pageSizeTokens));
        };
        waitNs += wait;
        return wait;
    }

    private boolean allEnded() {
        for (L3Prefetch p : scratch) {
            if (p != null && !p.isDone()) {
                return false;
            }
        }
        return true;
    }

    /** The per-rank prefetches of the last {@link #prefetch} (a copy), for {@link #consume}. */
    L3Prefetch[] lastPrefetches() {
        return scratch.clone();
    }

    /** The request of {@code prefetches} took its pages (or runs without them): they may be host-evicted again. */
    void consume(L3Prefetch[] prefetches) {
        for (L3Prefetch p : prefetches) {
            if (p != null) {
                p.consume();
            }
        }
    }

    /** Pages the last {@link #prefetch} published. */
    int lastPublished() {
        return published;
    }

    /** Counts host hits a prefetch brought in. */
    void recordHit(int pages) {
        storageHitPages += pages;
    }

    /**
     * At the end of the run: completes every write and prefetch now, whatever its modelled completion time (waiting
     * for the real I/O), so that what this run committed is in the store for the next one.
     */
    void flush() {
        if (!pollUntil(() -> inFlight() == 0, Long.MAX_VALUE)) {
            throw new IllegalStateException("storage writes still running after "
                    + TimeUnit.NANOSECONDS.toSeconds(IO_DEADLINE_NS) + " s of wall-clock time");
        }
    }

    /**
     * Makes the store operations due by simulated time {@code visibleNs} visible and polls the caches until
     * {@code done}, waiting (wall clock) for the real I/O; a round where nothing became visible or ended parks
     * briefly (the store's threads are working, or the ranks' agreement needs another round).
     *
     * @return false if {@link #IO_DEADLINE_NS} of wall-clock time passed first
     */
    private boolean pollUntil(java.util.function.BooleanSupplier done, long visibleNs) {
        long deadline = System.nanoTime() + IO_DEADLINE_NS;
        while (!done.getAsBoolean()) {
            if (io.advance(visibleNs) + poll() == 0) {
                if (System.nanoTime() > deadline) {
                    return false;
                }
                LockSupport.parkNanos(20_000);
            }
        }
        return true;
    }

    private int inFlight() {
        int n = 0;
        for (L3Tier t : tiers) {
            n += t.inFlight();
        }
        return n;
    }

    /** The run's storage figures; {@code pageSizeTokens} converts hit pages to tokens. */
    StorageResult result(int pageSizeTokens) {
        long writePages = 0;
        long writeBytes = 0;
        long writeFailed = 0;
        long prefetchBytes = 0;
        long failed = 0;
        double writeBw = 0;
        double readBw = 0;
        for (L3Tier t : tiers) {
            var m = t.metrics();
            writePages += m.get(StorageMetric.WRITE_PAGES_STORED);
            writeBytes += m.get(StorageMetric.WRITE_BYTES);
            writeFailed += m.get(StorageMetric.WRITE_FAILED_PAGES) + m.get(StorageMetric.WRITE_BACK_DROPPED_PAGES);
            prefetchBytes += m.get(StorageMetric.PREFETCH_BYTES);
            failed += m.get(StorageMetric.PREFETCH_FAILED_PAGES);
            writeBw += m.writeBytesPerSecond();
            readBw += m.prefetchBytesPerSecond();
        }
        var m0 = tiers[0].metrics();
        long started = m0.get(StorageMetric.PREFETCH_STARTED);
        long pages = m0.get(StorageMetric.PREFETCH_PAGES_REQUESTED);
        long publishedPages = m0.get(StorageMetric.PREFETCH_PAGES_PUBLISHED);
        long noRoom = m0.get(StorageMetric.PREFETCH_NO_ROOM);
        StoreStats s = store.stats();
        return new StorageResult(options.displayName(), storageHitPages * pageSizeTokens, writePages,
                Math.round(writeBytes * trueBytesPerSimByte), writeFailed, s.putBytes(), s.getBytes(), writeBw, readBw,
                started, pages, publishedPages, Math.round(prefetchBytes * trueBytesPerSimByte), failed, noRoom,
                waitNs / 1e9, prefetchQueuePeak, writeQueuePeak);
    }

    /** Closes the tiers (their leases and protections end); before the caches close. The store stays open. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        RuntimeException failure = null;
        try {
            io.close(); // completes what is held, so the tiers' close finds no store operation running
        } catch (RuntimeException e) {
            failure = e;
        }
        for (L3Tier t : tiers) {
            if (t == null) {
                continue;
            }
            try {
                t.close();
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
