package io.hicache.sim;

import io.hicache.core.WritePolicy;
import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.MatchResult;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code --cache-only} engine: hit ratios that depend only on capacities and policies, with no
 * timing. It runs on the real {@link RadixTree}; each request runs to completion before the next:
 *
 * <ol>
 *   <li><b>match</b> the request's tokens: leading device-hit tokens, then host-only tokens after them;</li>
 *   <li><b>insert</b> the whole request (host-only nodes on the path adopt fresh device pages: the
 *   load-back);</li>
 *   <li><b>back up</b> per the write policy, unless the backup mode is {@code none} or there is no
 *   host tier: {@code write_through} copies every node of the path that is not on the host yet,
 *   top-down; {@code write_through_selective} only nodes hit at least twice; {@code write_back}
 *   copies a node (and its ancestors not yet on the host) only when device eviction picks it.
 *   A copy needs host room: host-only leaves are evicted in policy order first, and when there is
 *   still none the backup is refused ({@code no_room}). Copies commit at once (no timing);</li>
 *   <li><b>evict</b> device leaves in policy order down to the device capacity, keeping the
 *   request's own path: a node with a host copy is demoted to a host-only node, one without is
 *   dropped.</li>
 * </ol>
 * Layered and all-layers backup give identical hit ratios here. Counted backups: {@code reserved ==
 * committed} (one per node copied) and {@code no_room}; {@code d2h_bytes} is what those copies
 * would move (prompt tokens x KV bytes per token of target and draft layers).
 *
 * <p>Owned by the calling thread for the duration of {@link #run}; one instance may run several
 * configurations one after another. Allocates per request only when buffers grow and per backup one
 * host value.
 */
// It is the tree's eviction listener (io.hicache.radix.spi, exported to this module only).
@SuppressWarnings("exports")
public final class CacheOnlyEngine implements SimulationEngine, DeviceEvictionListener, HostEvictionListener {

    private static final PendingBackup INSTANT = (prefix, suffix) -> {
        throw new IllegalStateException("cache-only backups commit at once and are never split while pending");
    };

    private RadixTree tree;
    private SimConfig config;
    private long devicePagesCapacity;
    private long hostPagesCapacity;
    private boolean hostWrites;
    private boolean vetoUnbacked;
    private final List<RadixNode> writeBackCandidates = new ArrayList<>();
    private RadixNode[] chain = new RadixNode[64];
    private int[] devicePages = new int[1024];
    private int nextDevicePage;
    private long backupsCommitted;
    private long backupsNoRoom;
    private long backedUpTokens;
    private long hostPagesPeak;
    private long devicePagesPeak;

    /** An engine for one run at a time; {@link #run} sets it up for each configuration. */
    public CacheOnlyEngine() {
    }

    @Override
    public SimResult run(SimConfig config, TraceSource trace, ProgressListener progress) {
        long startNs = System.nanoTime();
        reset(config);
        TokenExpander expander = new TokenExpander(config.blockTokens());
        HitStats hits = new HitStats(config.blockTokens());
        MatchResult match = new MatchResult(256);
        int[] tokens = new int[8192];
        progress.onStart("cache-only " + config.backupMode().cliName(), trace.estimateRecords());
        try (TraceReader reader = trace.open()) {
            long done = 0;
            Request r;
            while ((r = reader.next()) != null) {
                tokens = TokenExpander.ensureCapacity(tokens, expander.tokenCount(r));
                int count = expander.expandInto(r, tokens);
                tree.match(tokens, 0, count, match);
                int deviceHit = match.deviceTokenCount();
                int hostHit = match.hostTokenCount();
                hits.record(r, count, deviceHit, hostHit);
                cache(tokens, count, match.devicePageCount());
                if (r.coversAnswer()) {
                    // the answer joins the cache when the request finishes (cache_finished_req), before the next
                    // turn of its conversation: an upper bound for a timed run whose turns wait for answers
                    tokens = TokenExpander.ensureCapacity(tokens, expander.conversationTokenCount(r));
                    int all = expander.expandConversationInto(r, tokens);
                    // the last answer token's KV is never computed: the prompt plus output - 1 tokens are cached
                    long decodedKv = (long) (r.outputLength() - 1) * config.blockTokens() / r.blockSize();
                    int kv = (int) Math.min(all, count + Math.max(0, decodedKv));
                    cache(tokens, kv, 0); // page ids are opaque here: the tree keeps those it has
                }
                hostPagesPeak = Math.max(hostPagesPeak, tree.hostPagesCommitted());
                devicePagesPeak = Math.max(devicePagesPeak, Math.min(devicePagesCapacity, tree.devicePagesCached()));
                progress.onRequestsDone(++done);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot close trace " + trace.path() + ": " + e.getMessage(), e);
        } finally {
            progress.onFinish();
        }
        double wallSeconds = (System.nanoTime() - startNs) / 1e9;
        SimResult base = SimResult.ofHits(config, trace.name(), hits, wallSeconds);
        long kvBytesPerPromptToken = config.model().kvBytesPerTokenPerLayer()
                * (config.model().layers() + config.draftLayers());
        long d2hBytes = backedUpTokens * kvBytesPerPromptToken / config.blockTokens()
                * trace.blockSize();
        double peak = hostPagesCapacity == 0 || config.hostUnlimited() ? 0 : (double) hostPagesPeak / hostPagesCapacity;
        return new SimResult(config, trace.name(), base.requests(), base.inputTokens(), base.simulatedTokens(),
                base.blocks(), base.blockHitRatio(), base.tokenHitRatio(), base.deviceHitTokens(), base.hostHitTokens(),
                base.prefillTokensComputed(),
                new SimResult.Backups(backupsCommitted, backupsCommitted, 0, backupsNoRoom, 0), d2hBytes, 0,
                SimResult.CommitLatency.NONE, peak, 0, wallSeconds, List.of())
                .withOccupancy(new SimResult.Occupancy(devicePagesPeak * config.pageSize(),
                        hostPagesPeak * config.pageSize()));
    }

    /** The tree of the last run, for tests that check its invariants. */
    RadixTree tree() {
        return tree;
    }

    private void reset(SimConfig c) {
        this.config = c;
        this.tree = RadixTree.builder().pageSize(c.pageSize()).devicePolicy(c.eviction())
                .hostPolicy(c.eviction()).build();
        this.devicePagesCapacity = c.deviceCapacityTokens() / c.pageSize();
        this.hostPagesCapacity = c.hostUnlimited() ? Long.MAX_VALUE : c.hostCapacityTokens() / c.pageSize();
        this.hostWrites = c.hasHostTier() && c.backupMode() != BackupMode.NONE && hostPagesCapacity > 0;
        this.vetoUnbacked = false;
        this.writeBackCandidates.clear();
        this.nextDevicePage = 0;
        this.backupsCommitted = 0;
        this.backupsNoRoom = 0;
        this.backedUpTokens = 0;
        this.hostPagesPeak = 0;
        this.devicePagesPeak = 0;
    }

    /** Inserts {@code tokens[0, count)}, backs up its path by the write policy, then evicts down to capacity. */
    private void cache(int[] tokens, int count, int deviceHitPages) {
        insert(tokens, count, deviceHitPages);
        RadixNode last = tree.lastInsertNode();
        if (hostWrites && config.writePolicy() != WritePolicy.WRITE_BACK) {
            writeThrough(last, config.writePolicy() == WritePolicy.WRITE_THROUGH_SELECTIVE ? 2 : 1);
        }
        evictToCapacity(last);
    }

    private void insert(int[] tokens, int count, int deviceHitPages) {
        int pages = count / config.pageSize();
        if (devicePages.length < pages) {
            devicePages = new int[Math.max(pages, devicePages.length * 2)];
        }
        // Page ids are opaque to the tree; pages before the device hit are reported back as duplicates.
        for (int i = deviceHitPages; i < pages; i++) {
            devicePages[i] = nextDevicePage;
            nextDevicePage = (nextDevicePage + 1) & Integer.MAX_VALUE;
        }
        tree.insert(tokens, 0, count, devicePages, 0);
    }

    /** Backs up, top-down, every node of the path to {@code last} hit at least {@code minHits} times. */
    private void writeThrough(RadixNode last, int minHits) {
        int n = pathTopDown(last, false);
        for (int i = 0; i < n; i++) {
            RadixNode node = chain[i];
            if (node.isBackedUp()) {
                continue;
            }
            if (node.hitCount() < minHits || !backUp(node)) {
                return;
            }
        }
    }

    /** Backs up {@code node} and its ancestors that are not on the host yet, top-down. */
    private void writeBackChain(RadixNode node) {
        int n = pathTopDown(node, true);
        for (int i = 0; i < n; i++) {
            if (!backUp(chain[i])) {
                return;
            }
        }
    }

    /**
     * Fills {@code chain[0..n)} with the path from the root's child down to {@code last}, or, when
     * {@code unbackedOnly}, with its trailing run of nodes that are not backed up.
     */
    private int pathTopDown(RadixNode last, boolean unbackedOnly) {
        int n = 0;
        for (RadixNode x = last; x != null && !x.isRoot(); x = x.parent()) {
            if (unbackedOnly && x.isBackedUp()) {
                break;
            }
            if (n == chain.length) {
                chain = java.util.Arrays.copyOf(chain, n * 2);
            }
            chain[n++] = x;
        }
        for (int i = 0, j = n - 1; i < j; i++, j--) {
            RadixNode t = chain[i];
            chain[i] = chain[j];
            chain[j] = t;
        }
        return n;
    }

    private boolean backUp(RadixNode node) {
        if (!tree.canBackUp(node)) {
            return false;
        }
        int pages = node.pageCount();
        if (!ensureHostRoom(pages)) {
            backupsNoRoom++;
            return false;
        }
        tree.markPending(node, INSTANT);
        tree.commitHost(node, INSTANT, new CountedHostValue(pages));
        backupsCommitted++;
        backedUpTokens += (long) pages * config.pageSize();
        return true;
    }

    private boolean ensureHostRoom(int pages) {
        if (hostPagesCapacity == Long.MAX_VALUE) {
            return true;
        }
        long free = hostPagesCapacity - tree.hostPagesCommitted() - tree.hostPagesPending();
        if (free < pages) {
            tree.evictHost((int) Math.min(Integer.MAX_VALUE, pages - free), this);
            free = hostPagesCapacity - tree.hostPagesCommitted() - tree.hostPagesPending();
        }
        return free >= pages;
    }

    private void evictToCapacity(RadixNode keep) {
        long excess = tree.devicePagesCached() - devicePagesCapacity;
        if (excess <= 0) {
            return;
        }
        tree.lock(keep);
        try {
            if (hostWrites && config.writePolicy() == WritePolicy.WRITE_BACK) {
                // First pass: evict what already has a host copy, collect the rest; copy those, then evict again.
                vetoUnbacked = true;
                writeBackCandidates.clear();
                tree.evictDevice((int) Math.min(Integer.MAX_VALUE, excess), this);
                vetoUnbacked = false;
                for (int i = 0; i < writeBackCandidates.size(); i++) {
                    RadixNode node = writeBackCandidates.get(i);
                    if (node.isAttached() && !node.isBackedUp()) {
                        writeBackChain(node);
                    }
                }
                writeBackCandidates.clear();
                excess = tree.devicePagesCached() - devicePagesCapacity;
            }
            if (excess > 0) {
                tree.evictDevice((int) Math.min(Integer.MAX_VALUE, excess), this);
            }
        } finally {
            tree.unlock(keep);
        }
    }

    @Override
    public boolean mayEvict(RadixNode node) {
        if (vetoUnbacked && node.hostValue() == null) {
            writeBackCandidates.add(node);
            return false;
        }
        return true;
    }

    @Override
    public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
        // Page ids are not recycled: capacity is enforced on the tree's page count.
    }

    @Override
    public void onHostEvicted(RadixNode node, HostValue value) {
        // Host pages are only counted by the tree.
    }

    /** A host value that is only a page count (cache-only mode moves no bytes). Immutable. */
    private record CountedHostValue(int pageCount) implements HostValue {
        @Override
        public HostValue head(int pages) {
            return new CountedHostValue(pages);
        }

        @Override
        public HostValue tail(int pages) {
            return new CountedHostValue(pageCount - pages);
        }
    }
}
