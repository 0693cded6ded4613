package io.hicache.storage;

import io.hicache.core.BackupHandle;
import io.hicache.core.HiCache;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.spi.StoragePort;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.core.spi.DistinctErrorLog;
import io.hicache.storage.tier.StorageTier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The L3 storage tier of a {@link HiCache}: committed host pages are written to a {@link PageStore} (L2 → L3) under
 * the configured {@link StorageWritePolicy}, and pages a match is missing are prefetched from it into host memory
 * (L3 → L2), where they become host hits the engine loads back as usual. Keys are SGLang's page hash chains seeded
 * with a {@link KeyNamespace}, so only caches of the same configuration read each other's pages.
 *
 * <p><b>Draft/MTP KV.</b> In a cache with draft layers ({@code HiCache.Builder.draftLayout}) a page is stored as its
 * target part under its key and its draft part under {@link KeyNamespace#draftKey} of it; the target part is put only
 * after its draft part is stored, and a prefetched page becomes a host hit only when both parts read back whole, so a
 * load-back restores both (never the draft bytes of another page). Host copies backed up without their draft KV are
 * stored as target parts only, which a cache without draft layers can read and one with them does not take.
 *
 * <pre>{@code
 * PageStore store = PageStores.open("file:/var/cache/hicache", StoreConfig.defaults());
 * L3Tier l3 = L3Tier.attach(cache, store, namespace, StorageTierConfig.DEFAULT);
 * // per new request, right after cache.match(tokens, 0, n, match):
 * L3Prefetch p = l3.prefetch(tokens, 0, n, match, requestId);   // null: nothing to fetch
 * // before scheduling it: p == null || p.mayRun(); then match again, loadBack, p.consume()
 * // an aborted request: p.cancel()
 * cache.poll();                                                  // every step: also drives the tier
 * cache.close();                                                 // closes the tier first
 * store.close();
 * }</pre>
 *
 * <p><b>Who drives it.</b> Once attached, the cache's own calls drive the tier: {@link HiCache#poll()} advances its
 * writes and prefetches, each commit queues a write, each {@link HiCache#match} counts toward write_through_selective,
 * and {@link HiCache#close()} closes the tier first. The engine's own {@link io.hicache.core.BackupListener} is left
 * alone. The engine calls only {@link #prefetch} and the {@link L3Prefetch} it returns.
 *
 * <p><b>Threads.</b> Every method is the cache's scheduler thread's, like the cache's, except {@link #metrics()} (any
 * thread). Store I/O runs on the store's own threads and never on the scheduler or forward thread; the tier only
 * submits and polls it, so a device backup never waits for storage.
 *
 * <p><b>Failures.</b> Misuse throws at once and changes nothing: a bad argument {@link IllegalArgumentException}, a
 * second tier on one cache, a closed cache or tier {@link IllegalStateException}. A store that is down, slow or
 * returns corrupt objects never stops the cache: failed writes leave the host copy as it is, failed or corrupt reads
 * end the prefetch with what landed whole before them, every failure is counted ({@link StorageMetric}) and the store
 * logs each distinct error once with a count; the cache keeps serving from device and host. An unexpected exception
 * inside the tier's work is logged the same way and the cache goes on. A prefetch's host lease always ends:
 * published, released on failure or {@link L3Prefetch#cancel()}, or released when the tier closes.
 *
 * <p><b>Store.</b> The store stays the caller's (in an in-process CP group one store may serve every rank): close it
 * after the cache. The tier registers the cache's host pool with it once ({@link PageStore#registerHostMemory}).
 */
public final class L3Tier implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(L3Tier.class);

    /** The cache's storage port: all the tier reaches of the cache beyond its API. */
    private final StoragePort controller;
    private final StorageTier tier;
    private final Attachment attachment = new Attachment();
    private final DistinctErrorLog errors = new DistinctErrorLog(LOG, "L3 storage tier", 1024);
    private boolean closed;

    private L3Tier(StoragePort controller, StorageTier tier) {
        this.controller = controller;
        this.tier = tier;
    }

    /**
     * Attaches an L3 tier on {@code store} to {@code cache}, whose rank is alone (no CP group). Scheduler thread.
     *
     * @param namespace the key namespace of this cache's target KV ({@link KeyNamespace#NONE}: SGLang's unseeded
     *                  keys); its page size, host layout and CP lane must be the cache's, its role target (draft
     *                  parts are keyed by {@link KeyNamespace#draftKey})
     * @throws IllegalArgumentException on a null argument or a namespace that does not describe this cache
     * @throws IllegalStateException if the cache is closed or stopped, already has a tier, or is in a CP group
     */
    public static L3Tier attach(HiCache cache, PageStore store, KeyNamespace namespace, StorageTierConfig config) {
        return attach(cache, store, namespace, config, null);
    }

    /**
     * Attaches an L3 tier on {@code store} to {@code cache}, a rank of a CP group: every rank attaches its own tier,
     * with its lane's namespace, the same configuration and the group's {@code prefetchAgreement}, a channel of its
     * own (not the one of backups or loads); a prefetch becomes host hits only as far as every rank's part landed.
     * Every rank must make the same {@link #prefetch} calls in the same order. Scheduler thread.
     *
     * @param prefetchAgreement the group's agreement on prefetch completions; null for a cache without a CP group
     * @throws IllegalArgumentException on a null argument, an agreement that does not match the group, or a
     *     namespace that does not describe this rank
     * @throws IllegalStateException if the cache is closed or stopped, or already has a tier
     */
    public static L3Tier attach(HiCache cache, PageStore store, KeyNamespace namespace, StorageTierConfig config,
                                RankAgreement prefetchAgreement) {
        if (cache == null || store == null || namespace == null || config == null) {
            throw new IllegalArgumentException("L3Tier.attach: cache, store, namespace and config must not be null");
        }
        StoragePort ctl = cache.storagePort();
        if (ctl.isClosed()) {
            throw new IllegalStateException("L3Tier.attach: the HiCache is closed");
        }
        ctl.checkSchedulerThread();
        if (ctl.hasTier()) {
            throw new IllegalStateException("L3Tier.attach: this HiCache already has an L3 tier; close it first");
        }
        int cp = ctl.cpSize();
        if ((cp > 1) != (prefetchAgreement != null)) {
            throw new IllegalArgumentException("L3Tier.attach: a cache in a CP group of " + cp + " ranks needs a "
                    + "prefetch agreement exactly when the group has more than one rank");
        }
        checkNamespace(namespace, ctl, cache);
        StorageTier tier = new StorageTier(ctl, store, namespace, config, prefetchAgreement, cp, ctl.clock());
        L3Tier l3 = new L3Tier(ctl, tier);
        try {
            ctl.attach(l3.attachment);
        } catch (RuntimeException e) {
            tier.close(); // nothing started yet: undoes the observer registration
            throw e;
        }
        return l3;
    }

    private static void checkNamespace(KeyNamespace ns, StoragePort ctl, HiCache cache) {
        if (ns.isNone()) {
            if (ctl.cpSize() > 1) {
                throw new IllegalArgumentException("L3Tier.attach: KeyNamespace.NONE cannot tell the CP lanes apart; "
                        + "give each rank its lane's namespace");
            }
            return;
        }
        int pageSize = ctl.pageSize();
        if (ns.pageSizeTokens() != pageSize) {
            throw new IllegalArgumentException("L3Tier.attach: namespace page size " + ns.pageSizeTokens()
                    + " is not the cache's " + pageSize);
        }
        if (ns.hostLayout() != ctl.hostLayout()) {
            throw new IllegalArgumentException("L3Tier.attach: namespace host layout " + ns.hostLayout()
                    + " is not the cache's " + ctl.hostLayout());
        }
        if (ns.role() != KeyNamespace.Role.TARGET) {
            throw new IllegalArgumentException("L3Tier.attach: pass the target KV's namespace (the draft KV's keys "
                    + "derive from it); namespace role is " + ns.role());
        }
        if (ns.cpSize() != ctl.cpSize() || ns.cpLane() != cache.rank()) {
            throw new IllegalArgumentException("L3Tier.attach: namespace CP " + ns.cpLane() + "/" + ns.cpSize()
                    + " is not the cache's rank " + cache.rank() + " of " + ctl.cpSize());
        }
    }

    /**
     * Starts prefetching the pages of {@code tokens[from, from + len)} that {@code match} (this cache's match of the
     * same tokens, just made) is missing, if the store may extend it by more than the configured threshold: leases
     * host pages for them (within the configured share of the host pool) and submits the existence check. Call it
     * once per new request, before deciding to schedule it. Scheduler thread.
     *
     * <p>Whether the store has anything is not known here: a prefetch starts (and leases its host pages) whenever
     * more than the threshold is missing and the host share has room; its existence check then runs on the store's
     * threads, and one that finds nothing ends with nothing published, releasing its lease.
     *
     * @return the prefetch, or null when none started (too short, the matched prefix ends at a node without a
     *     committed host copy, no host room or host share left: counted in {@link StorageMetric})
     * @throws IllegalArgumentException on a null array or match, a range outside {@code tokens}, or a match this
     *     cache did not make (or whose nodes have left the tree since)
     * @throws IllegalStateException if the tier (or its cache) is closed, or the cache stopped
     */
    public L3Prefetch prefetch(int[] tokens, int from, int len, MatchResult match, long requestId) {
        checkOpen("prefetch");
        controller.checkSchedulerThread();
        if (tokens == null || match == null) {
            throw new IllegalArgumentException("prefetch: tokens and match must not be null");
        }
        if (from < 0 || len < 0 || from > tokens.length - len) {
            throw new IllegalArgumentException("prefetch: range [" + from + ", " + from + " + " + len
                    + ") outside tokens of length " + tokens.length);
        }
        RadixNode n = match.lastHostNode();
        if (n == null) {
            throw new IllegalArgumentException("prefetch: the match is empty; pass the result of HiCache.match");
        }
        RadixNode root = controller.root();
        while (n != null && n != root) {
            n = n.parent();
        }
        if (n == null) {
            throw new IllegalArgumentException("prefetch: the match was not made by this cache, or its nodes left the "
                    + "tree since; match again");
        }
        StorageTier.Prefetch p = tier.prefetch(tokens, from, len, match, requestId);
        return p == null ? null : new L3Prefetch(this, p);
    }

    /** Prefetches not yet ended plus write batches not yet done. Scheduler thread. */
    public int inFlight() {
        return tier.inFlight();
    }

    /** The configuration. Any thread. */
    public StorageTierConfig config() {
        return tier.config();
    }

    /** Counters: pages and bytes written and prefetched, failures, queue depths. Any thread, also after close. */
    public StorageTierMetrics metrics() {
        return tier.metrics();
    }

    /** True once closed (by {@link #close()} or by the cache's close). Scheduler thread. */
    public boolean isClosed() {
        return closed;
    }

    /**
     * Waits (wall clock, at most 30 s) for the tier's store operations in flight, then ends everything: prefetch
     * leases are released (nothing more is published), host pages held for writes or requests are let go, and the
     * cache drives the tier no more. The store stays open. Idempotent; {@link HiCache#close()} calls it first.
     * Scheduler thread.
     *
     * @throws IllegalStateException if store operations are still running after 30 s (the tier stays attached):
     *     close the store, which completes them, and call again
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        controller.checkSchedulerThread();
        tier.close();
        closed = true;
        controller.detach(attachment);
    }

    @Override
    public String toString() {
        return "L3Tier{rank=" + controller.rank() + (closed ? ", closed" : "") + ", " + tier.metrics() + '}';
    }

    // ------------------------------------------------------------------ for L3Prefetch

    boolean mayRun(StorageTier.Prefetch p) {
        controller.checkSchedulerThread();
        return tier.mayRun(p);
    }

    void cancel(StorageTier.Prefetch p) {
        controller.checkSchedulerThread();
        tier.cancel(p);
    }

    void consume(StorageTier.Prefetch p) {
        controller.checkSchedulerThread();
        tier.consume(p);
    }

    private void checkOpen(String call) {
        if (closed || controller.isClosed()) {
            throw new IllegalStateException(call + ": the L3 tier is closed");
        }
    }

    private void failed(String where, RuntimeException e) {
        StackTraceElement[] at = e.getStackTrace();
        // the class and where it came from, not its message: nothing the store was configured with reaches the log
        errors.record(where + ": " + e.getClass().getName() + (at.length > 0 ? " at " + at[0] : ""));
    }

    /** The cache's calls into the tier; scheduler thread. */
    private final class Attachment implements StoragePort.Tier {
        @Override
        public void onCommitted(BackupHandle backup) {
            try {
                tier.onCommitted(backup);
            } catch (RuntimeException e) {
                failed("commit", e);
            }
        }

        @Override
        public void onMatch(MatchResult match) {
            try {
                tier.onMatch(match);
            } catch (RuntimeException e) {
                failed("match", e);
            }
        }

        @Override
        public void poll() {
            try {
                tier.poll();
            } catch (RuntimeException e) {
                failed("poll", e);
            }
        }

        @Override
        public void close() {
            L3Tier.this.close();
        }
    }
}
