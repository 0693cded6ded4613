package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.AbortReason;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadListener;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.Backup;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.HiCache;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.core.DevicePagePool;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Deterministic simulation of same-forward load-back ({@link io.hicache.core.LoadOverlap#SAME_FORWARD}): requests
 * load host hits back and compute on them in the same forward, waiting per layer on the device (target and draft);
 * later requests join loads in flight; requests insert below nodes still loading; H2D faults hit one CP rank; backups
 * are aborted; small host pools force host eviction; device eviction runs in between. Checked after every step on
 * every rank: the tree's invariants; every device page owned exactly once (free list, tree, or a load in flight; a
 * loading node's pages are its load's); after a failed load no node points at its pages or at freed ones; loads end
 * alike on every rank. Checked on the device: when a layer's compute starts (a host function on the compute stream
 * after the wait) the layer's loaded bytes already equal the host bytes, for every load the request uses, unless the
 * load was faulted on that rank. Checked at agreement: a loaded chain's device bytes equal its host bytes.
 *
 * <p>Runs {@code -Dhicache.dst.overlapSeeds=N} seeds (default 200) from {@code -Dhicache.dst.firstSeed} (default 1),
 * or exactly one with {@code -Dhicache.dst.seed=S}; a failure names the seed.
 */
class LoadOverlapDstTest {
    private static final int PAGE = 4;
    private static final int BYTES_PER_TOKEN = 8;

    @Test
    void seededSchedulesKeepEveryInvariant() {
        long single = Long.getLong("hicache.dst.seed", -1);
        long first = single >= 0 ? single : Long.getLong("hicache.dst.firstSeed", 1);
        long seeds = single >= 0 ? 1 : Long.getLong("hicache.dst.overlapSeeds", 200);
        Map<String, Long> totals = new TreeMap<>();
        for (long s = first; s < first + seeds; s++) {
            runSeed(s).forEach((k, v) -> totals.merge(k, v, Long::sum));
        }
        System.out.println("same-forward DST, " + seeds + " seeds: " + totals);
        if (seeds >= 100) {
            // the schedules reach every path the suite is meant to cover: failed loads that invalidated pages
            // inserted below them, host eviction under pressure, joins, faults on one CP rank, draft waits
            assertThat(totals).containsKeys("load.loaded", "load.failed", "metric.LOAD_INVALIDATED_PAGES",
                "load.joined", "insertBelowLoading", "layerChecked", "backup.aborted", "metric.HOST_PAGES_EVICTED",
                "draftLayerChecked", "cp.faultOneRank", "metric.BACKUPS_COMMITTED");
        }
    }

    /**
     * Runs seed {@code s} to its end and checks its runtimes for leaks; returns its path counts. A failure names the
     * seed, its setup and the command that replays it.
     */
    static Map<String, Long> runSeed(long s) {
        World w = new World(s);
        boolean ran = false;
        try {
            w.run(220);
            ran = true;
            w.close(true);
            if (DstSeeds.DIGESTS) {
                // the path counts and the next draw: any change in what the engine drew or saw changes them
                System.out.println("DST-DIGEST overlap " + s + " " + String.format("%016x",
                    w.counts.toString().hashCode() * 31L + w.rnd.nextLong()));
            }
        } catch (AssertionError | RuntimeException e) {
            if (!ran) {
                w.close(false);
            }
            throw new AssertionError("seed " + s + " (" + w.describe() + "): " + e.getMessage()
                + "\nreplay: ./run-tests -pl integration-tests -am -Dtest=LoadOverlapDstTest -Dhicache.dst.seed=" + s
                + " -Dsurefire.failIfNoSpecifiedTests=false", e);
        }
        return w.counts;
    }

    /** One seeded world: a CP group of 1 or 2 ranks with one controller each, and the engine that drives them. */
    static final class World {
        final long seed;
        final Random rnd;
        final int cp;
        final int layers;
        final int draftLayers;
        final int devicePages;
        final int hostPages;
        final Rank[] ranks;
        final Map<String, Long> counts = new TreeMap<>();
        final List<Req> running = new ArrayList<>();
        final List<LoadOp[]> loads = new ArrayList<>();
        final List<Backup[]> backups = new ArrayList<>();
        final List<Backup[]> allBackups = new ArrayList<>();
        /** Loads issued while an H2D fault was set, per rank: their bytes are not expected to arrive. */
        final List<IdentityHashMap<LoadOp, Boolean>> faulted = new ArrayList<>();
        final List<String> violations = new ArrayList<>();
        long tag = 1;

        World(long seed) {
            this.seed = seed;
            this.rnd = new Random(seed);
            this.cp = rnd.nextInt(3) == 0 ? 2 : 1;
            this.layers = 2 + rnd.nextInt(3);
            this.draftLayers = rnd.nextInt(2);
            this.devicePages = 48;
            this.hostPages = rnd.nextBoolean() ? 20 + rnd.nextInt(12) : 96;
            InProcessRankAgreement agreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
            InProcessRankAgreement loadAgreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
            ranks = new Rank[cp];
            for (int r = 0; r < cp; r++) {
                faulted.add(new IdentityHashMap<>());
                ranks[r] = new Rank(r, agreement, loadAgreement);
            }
        }

        String describe() {
            return "cp=" + cp + " layers=" + layers + "+" + draftLayers + " hostPages=" + hostPages;
        }

        void count(String k) {
            counts.merge(k, 1L, Long::sum);
        }

        final class Rank implements DevicePageAllocator, LoadListener {
            final int r;
            final SimulatedCudaRuntime rt;
            final long targetBase;
            final long draftBase;
            final DeviceKvLayout target;
            final DeviceKvLayout draft;
            final HiCache cache;
            final DevicePagePool free;

            Rank(int r, InProcessRankAgreement agreement, InProcessRankAgreement loadAgreement) {
                this.r = r;
                rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(seed * 31 + r)
                    .hostToDeviceBytesPerSecond(1_000_000_000L + rnd.nextInt(4) * 1_000_000_000L).build());
                rt.checkUseAfterFree(true);
                DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(layers)
                    .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(devicePages);
                targetBase = rt.deviceMalloc(tb.packedBytes());
                target = tb.packedFrom(targetBase).build();
                if (draftLayers > 0) {
                    DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                        .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(devicePages);
                    draftBase = rt.deviceMalloc(db.packedBytes());
                    draft = db.packedFrom(draftBase).build();
                } else {
                    draftBase = 0;
                    draft = null;
                }
                HiCache.Builder hb = HiCache.builder().runtime(rt).targetLayout(target)
                    .draftLayout(draft).hostPages(hostPages).threadingMode(ThreadingMode.INVOKER).clock(rt::nowNs)
                    .leaseNs(0).checkThread(false).loadThresholdTokens(PAGE).loadListener(this).maxForwardsInFlight(64);
                if (cp > 1) {
                    hb.cpGroup(cp, r, OwnerLanes.Standard.ROUND_ROBIN, agreement, loadAgreement);
                }
                cache = hb.build();
                free = new DevicePagePool(devicePages);
            }

            @Override
            public boolean allocate(int count, int[] out, int offset) {
                if (!free.allocate(count, out, offset)) {
                    return false;
                }
                for (int i = 0; i < count; i++) {
                    scribble(out[offset + i]);
                }
                return true;
            }

            @Override
            public void free(int[] pages, int offset, int count) {
                for (int i = 0; i < count; i++) {
                    int p = pages[offset + i];
                    if (free.isFree(p)) {
                        violations.add("rank " + r + " device page " + p + " freed twice");
                        continue;
                    }
                    free.free(p);
                }
            }

            /** Garbage in a page the engine just took, so bytes that never arrived show. */
            void scribble(int page) {
                writePage(page, -1 - rnd.nextInt(1000));
            }

            void writePage(int page, long value) {
                fill(target, layers, page, value);
                if (draft != null) {
                    fill(draft, draftLayers, page, ~value);
                }
            }

            private void fill(DeviceKvLayout l, int n, int page, long value) {
                for (int layer = 0; layer < n; layer++) {
                    for (int b = 0; b < l.bufferCount(); b++) {
                        MemorySegment seg = rt.deviceMemory(l.pageAddress(layer, b, page), l.pageBytes());
                        for (long w = 0; w < l.pageBytes() / 8; w++) {
                            seg.setAtIndex(ValueLayout.JAVA_LONG, w, value * 31 + (r + 1) * 7L + layer * 131L + w);
                        }
                    }
                }
            }

            /** True when the load's owned pages hold the host bytes of {@code layer} (draft or target). */
            boolean loadedLayerMatches(LoadOp op, boolean isDraft, int layer, StringBuilder why) {
                return pairsMatch(loadedPairs(op, isDraft, null), isDraft, layer, why);
            }

            /**
             * The (device page, host page) pairs of the load's pages this rank copies, read from the tree now:
             * all of them, or with {@code used} only the device pages in it (a request that joined a load may use
             * only the head of its chain). Returned flat: device, host, device, host, ...
             */
            int[] loadedPairs(LoadOp op, boolean isDraft, java.util.BitSet used) {
                int[] offsets = new int[64];
                int[] out = new int[2 * op.pageCount()];
                int count = 0;
                RadixNode n = op.node(op.nodeCount() - 1);
                int start = op.pageCount();
                while (start > 0) {
                    start -= n.pageCount();
                    HostPages hp = (HostPages) n.hostValue();
                    if (!isDraft || hp.hasDraft()) {
                        int owned = hp.lanes().ownedOffsets(offsets);
                        for (int j = 0; j < owned; j++) {
                            int dev = op.devicePage(start + offsets[j]);
                            if (used == null || used.get(dev)) {
                                out[count++] = dev;
                                out[count++] = hp.hostPage(j);
                            }
                        }
                    }
                    n = n.parent();
                }
                return java.util.Arrays.copyOf(out, count);
            }

            /** True when each pair's device page holds its host page's bytes of {@code layer} (draft or target). */
            boolean pairsMatch(int[] pairs, boolean isDraft, int layer, StringBuilder why) {
                DeviceKvLayout l = isDraft ? draft : target;
                HostKvPool pool = isDraft ? CacheInternals.hostPool(cache, true) : CacheInternals.hostPool(cache, false);
                for (int i = 0; i < pairs.length; i += 2) {
                    for (int b = 0; b < l.bufferCount(); b++) {
                        MemorySegment d = rt.deviceMemory(l.pageAddress(layer, b, pairs[i]), l.pageBytes());
                        MemorySegment h = rt.hostMemory(pool.pageAddress(layer, b, pairs[i + 1]), l.pageBytes());
                        if (d.mismatch(h) != -1) {
                            why.append(isDraft ? "draft" : "target").append(" layer ").append(layer)
                                .append(" device page ").append(pairs[i]).append(" != host page ").append(pairs[i + 1]);
                            return false;
                        }
                    }
                }
                return true;
            }

            @Override
            public void onLoaded(LoadHandle h) {
                LoadOp op = (LoadOp) h;
                if (faulted.get(r).containsKey(op)) {
                    violations.add("rank " + r + " load " + op + " with an H2D fault was agreed LOADED");
                }
                StringBuilder why = new StringBuilder();
                for (int l = 0; l < layers; l++) {
                    if (!loadedLayerMatches(op, false, l, why)) {
                        violations.add("rank " + r + " loaded bytes differ from host bytes: " + why);
                        return;
                    }
                }
                for (int l = 0; l < draftLayers; l++) {
                    if (!loadedLayerMatches(op, true, l, why)) {
                        violations.add("rank " + r + " loaded bytes differ from host bytes: " + why);
                        return;
                    }
                }
                if (r == 0) {
                    count("load.loaded");
                }
            }

            @Override
            public void onLoadFailed(LoadHandle h) {
                if (r == 0) {
                    count("load.failed");
                }
            }

            /**
             * Every device page exactly once: free, a ready tree node, a load in flight (with its loading nodes), or a
             * backup of pages a failed load invalidated, holding them until its copies drained.
             */
            void checkOwnership() {
                int[] owner = new int[devicePages];
                for (int p = 0; p < devicePages; p++) {
                    owner[p] += free.isFree(p) ? 1 : 0;
                }
                for (Backup[] b : allBackups) {
                    for (int i = 0; i < b[r].heldDevicePageCount(); i++) {
                        owner[b[r].heldDevicePage(i)]++;
                    }
                }
                IdentityHashMap<LoadOp, Boolean> inFlight = new IdentityHashMap<>();
                for (LoadOp[] ops : loads) {
                    LoadOp op = ops[r];
                    if (op.state() == LoadHandle.State.QUEUED || op.state() == LoadHandle.State.ISSUED) {
                        inFlight.put(op, true);
                        for (int i = 0; i < op.pageCount(); i++) {
                            owner[op.devicePage(i)]++;
                        }
                    }
                }
                int[] pages = new int[256];
                RadixTestAccess.forEachNode(CacheInternals.tree(cache), n -> {
                    if (!n.hasDeviceValue()) {
                        return;
                    }
                    n.copyDevicePages(pages, 0);
                    if (n.isLoading()) {
                        LoadOp op = (LoadOp) n.pendingLoad();
                        if (!inFlight.containsKey(op)) {
                            violations.add("rank " + r + " node " + n + " still loading for a finished load " + op);
                        }
                        return; // counted under its load
                    }
                    for (int i = 0; i < n.pageCount(); i++) {
                        if (free.isFree(pages[i])) {
                            violations.add("rank " + r + " node " + n + " points at freed device page " + pages[i]);
                        }
                        owner[pages[i]]++;
                    }
                });
                for (int p = 0; p < devicePages; p++) {
                    if (owner[p] != 1) {
                        violations.add("rank " + r + " device page " + p + " owned " + owner[p] + " times");
                    }
                }
            }

            void close() {
                cache.close();
                if (rt.stickyErrorCode() == 0) {
                    rt.deviceFree(targetBase);
                    if (draftBase != 0) {
                        rt.deviceFree(draftBase);
                    }
                }
            }
        }

        /** A request of the engine: its path, per rank, and the loads its forward waits for. */
        final class Req {
            final RadixNode[] last = new RadixNode[cp];
            /** Per rank, the device pages of the request's matched prefix: the only loaded pages it reads. */
            final java.util.BitSet[] used = new java.util.BitSet[cp];
            final List<LoadOp[]> deps = new ArrayList<>();
            boolean forwardDone;
        }

        void run(int steps) {
            for (int i = 0; i < steps; i++) {
                int k = rnd.nextInt(100);
                if (k >= 35 && k < 65) {
                    advance();
                } else if (!settle()) {
                    advance(); // the in-process agreement hands results to the ranks one poll apart
                } else if (k < 35) {
                    request();
                } else if (k < 78) {
                    finishRequest();
                } else if (k < 97) {
                    evictDevice();
                } else {
                    abortBackup();
                }
                check();
            }
            drain();
            for (Req q : new ArrayList<>(running)) {
                unlock(q);
            }
            running.clear();
            drain();
            check();
            for (Metric metric : new Metric[] {Metric.BACKUPS_COMMITTED, Metric.HOST_PAGES_EVICTED,
                Metric.RESERVE_NO_ROOM, Metric.LOAD_INVALIDATED_PAGES, Metric.LOADS_REFUSED}) {
                long v = ranks[0].cache.metric(metric);
                if (v > 0) {
                    counts.merge("metric." + metric, v, Long::sum);
                }
            }
            for (LoadOp[] ops : loads) {
                for (int r = 1; r < cp; r++) {
                    assertThat(ops[r].state()).as("load state on rank %d vs rank 0", r).isEqualTo(ops[0].state());
                }
                assertThat(ops[0].state()).isIn(LoadHandle.State.LOADED, LoadHandle.State.FAILED);
            }
        }

        /**
         * Polls every rank until each load and backup is in the same state class on all of them (the engine's
         * scheduling is identical on every rank only then); false if that does not happen within a few rounds.
         */
        boolean settle() {
            for (int i = 0; i < 4; i++) {
                if (consistent()) {
                    return true;
                }
                for (Rank rank : ranks) {
                    rank.cache.poll();
                }
            }
            return consistent();
        }

        private boolean consistent() {
            for (LoadOp[] ops : loads) {
                for (int r = 1; r < cp; r++) {
                    if (loadClass(ops[r].state()) != loadClass(ops[0].state())) {
                        return false;
                    }
                }
            }
            for (int i = allBackups.size() - 1; i >= 0; i--) {
                Backup[] b = allBackups.get(i);
                boolean done = true;
                for (int r = 0; r < cp; r++) {
                    if (backupClass(b[r].state()) != backupClass(b[0].state())) {
                        return false;
                    }
                    done &= backupClass(b[r].state()) != 0;
                }
                if (done) {
                    allBackups.remove(i);
                }
            }
            return true;
        }

        private static int loadClass(LoadHandle.State s) {
            return s == LoadHandle.State.LOADED ? 1 : s == LoadHandle.State.FAILED ? 2 : 0;
        }

        private static int backupClass(io.hicache.core.BackupState s) {
            return s == io.hicache.core.BackupState.COMMITTED ? 1 : s == io.hicache.core.BackupState.ABORTED ? 2 : 0;
        }

        void check() {
            for (Rank rank : ranks) {
                CacheInternals.tree(rank.cache).checkInvariants();
                // host copies contiguous from the root, the evictable count exact (what the facade's check adds)
                CacheInternals.tree(rank.cache).checkHostContiguity();
                rank.checkOwnership();
            }
            for (LoadOp[] ops : loads) {
                for (int r = 1; r < cp; r++) {
                    LoadHandle.State a = ops[0].state();
                    LoadHandle.State b = ops[r].state();
                    if (a == LoadHandle.State.LOADED && b == LoadHandle.State.FAILED
                        || a == LoadHandle.State.FAILED && b == LoadHandle.State.LOADED) {
                        violations.add("load agreed " + a + " on rank 0 and " + b + " on rank " + r);
                    }
                }
            }
            if (!violations.isEmpty()) {
                throw new AssertionError(String.join("\n", violations));
            }
        }

        void request() {
            if (busyForwards()) {
                for (int i = 0; i < 100_000 && busyForwards(); i++) {
                    advance(); // the engine's forward ring is bounded: let earlier forwards retire
                }
                settleAfterAdvance();
            }
            int family = rnd.nextInt(4);
            int pages = 2 + rnd.nextInt(12);
            int[] tokens = new int[pages * PAGE];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = family * 100_000 + i;
            }
            MatchResult[] m = new MatchResult[cp];
            for (int r = 0; r < cp; r++) {
                m[r] = CacheInternals.tree(ranks[r].cache).match(tokens, 0, tokens.length, new MatchResult());
            }
            Req q = new Req();
            if (m[0].hostPageCount() > 0 && rnd.nextInt(5) != 0) {
                LoadOp[] ops = new LoadOp[cp];
                for (int r = 0; r < cp; r++) {
                    ops[r] = CacheInternals.load(ranks[r].cache.loadBack(m[r], tag, Integer.MAX_VALUE, ranks[r]));
                }
                for (int r = 1; r < cp; r++) {
                    assertThat(ops[r] == null).as("loadBack on rank %d vs rank 0", r).isEqualTo(ops[0] == null);
                }
                if (ops[0] != null) {
                    loads.add(ops);
                    q.deps.add(ops);
                    int faultRank = rnd.nextInt(4) == 0 ? rnd.nextInt(cp) : -1;
                    for (int r = 0; r < cp; r++) {
                        long h2d = ranks[r].cache.metric(Metric.H2D_BYTES);
                        startLoading(ranks[r], r == faultRank);
                        if (r == faultRank && ranks[r].cache.metric(Metric.H2D_BYTES) > h2d) {
                            faulted.get(r).put(ops[r], true); // a rank that owns none of the pages copies nothing
                        }
                    }
                    if (faultRank >= 0 && cp > 1) {
                        count("cp.faultOneRank");
                    }
                }
                for (int r = 0; r < cp; r++) {
                    m[r] = CacheInternals.tree(ranks[r].cache).match(tokens, 0, tokens.length, new MatchResult());
                }
            }
            if (m[0].loadingNode() != null) {
                LoadOp[] joined = new LoadOp[cp];
                for (int r = 0; r < cp; r++) {
                    joined[r] = CacheInternals.load(ranks[r].cache.joinLoad(m[r]));
                }
                if (q.deps.isEmpty() || q.deps.get(0)[0] != joined[0]) {
                    q.deps.add(joined);
                    count("load.joined");
                }
            }
            int prefix = m[0].devicePageCount();
            for (int r = 0; r < cp; r++) {
                q.used[r] = new java.util.BitSet(devicePages);
                for (int i = 0; i < m[r].devicePageCount(); i++) {
                    q.used[r].set(m[r].devicePages()[i]);
                }
            }
            int fresh = pages - prefix;
            int[] dev = new int[pages];
            System.arraycopy(m[0].devicePages(), 0, dev, 0, prefix);
            RadixNode[] prefixLock = new RadixNode[cp];
            for (int r = 0; r < cp; r++) {
                prefixLock[r] = m[r].lastDeviceNode(); // the engine holds its prefix while it makes room
                ranks[r].cache.lock(prefixLock[r]);
                if (ranks[r].free.freePages() < fresh) {
                    ranks[r].cache.evictDevice(fresh - ranks[r].free.freePages(), ranks[r]);
                }
            }
            boolean room = true;
            for (int r = 0; r < cp; r++) {
                room &= ranks[r].free.freePages() >= fresh;
            }
            // every rank allocates the same ids: identical scheduling keeps the free lists identical
            int[] freshPages = new int[fresh];
            if (room) {
                for (int r = 0; r < cp; r++) {
                    int[] mine = new int[fresh];
                    ranks[r].allocate(fresh, mine, 0);
                    if (r == 0) {
                        freshPages = mine;
                    } else if (!java.util.Arrays.equals(mine, freshPages)) {
                        violations.add("rank " + r + " allocated " + java.util.Arrays.toString(mine) + ", rank 0 "
                            + java.util.Arrays.toString(freshPages));
                    }
                }
                System.arraycopy(freshPages, 0, dev, prefix, fresh);
            }
            List<List<Backup>> reserved = new ArrayList<>();
            for (int r = 0; r < cp; r++) {
                List<Backup> mine = new ArrayList<>();
                reserved.add(mine);
                if (!room || fresh == 0) {
                    q.last[r] = prefixLock[r].isRoot() ? null : prefixLock[r];
                    continue;
                }
                int present = ranks[r].cache.insert(tokens, 0, tokens.length, dev, 0);
                if (present != prefix * PAGE) {
                    violations.add("rank " + r + " insert found " + present + " tokens present, match " + prefix * PAGE);
                }
                q.last[r] = ranks[r].cache.lastInsertNode();
                ranks[r].cache.lock(q.last[r]);
                ranks[r].cache.unlock(prefixLock[r]);
                if (r == 0 && m[0].loadingNode() != null) {
                    count("insertBelowLoading");
                }
                for (int p : freshPages) {
                    ranks[r].writePage(p, tag * 1000 + p);
                }
                CacheInternals.reserveByPolicy(ranks[r].cache, q.last[r], draftLayers > 0, mine);
            }
            for (int r = 1; r < cp; r++) {
                if (reserved.get(r).size() != reserved.get(0).size()) {
                    violations.add("rank " + r + " reserved " + reserved.get(r).size() + " backups, rank 0 "
                        + reserved.get(0).size());
                }
            }
            for (int i = 0; i < reserved.get(0).size() && i < reserved.get(cp - 1).size(); i++) {
                Backup[] b = new Backup[cp];
                for (int r = 0; r < cp; r++) {
                    b[r] = reserved.get(r).get(i);
                }
                allBackups.add(b);
                if (i == 0) {
                    backups.add(b);
                }
            }
            forward(q, reserved);
            running.add(q);
            tag++;
        }

        /**
         * Polls (advancing the device when that is not enough) until every rank has retired the same loads and
         * backups. The in-process agreement hands a result to the ranks one poll apart, so an advance in the middle of
         * a request can leave one rank a failed load ahead (its chain already invalidated, the other's still
         * loading); the request's next decisions (its match, the pages it inserts) need identical trees.
         */
        private void settleAfterAdvance() {
            for (int i = 0; i < 10_000 && !settle(); i++) {
                advance();
            }
        }

        private boolean busyForwards() {
            for (Rank rank : ranks) {
                if (rank.cache.backupsInFlight() >= 24) {
                    return true;
                }
            }
            return false;
        }

        void startLoading(Rank rank, boolean fault) {
            if (fault) {
                rank.rt.failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.HOST_TO_DEVICE, CudaError.UNKNOWN);
            }
            try {
                for (int i = 0; ; i++) {
                    try {
                        rank.cache.startLoading();
                        return;
                    } catch (IllegalStateException e) {
                        if (!e.getMessage().contains("still in use") || i > 10_000) {
                            throw e;
                        }
                        // the ring's next event set still serves an earlier batch: let the device and agreement run,
                        // then let every rank catch up with the loads agreed meanwhile before the request goes on
                        advance();
                        settleAfterAdvance();
                    }
                }
            } finally {
                if (fault) {
                    rank.rt.failCopiesMatching(null, null);
                }
            }
        }

        /** The request's forward on every rank: per layer wait for its loads, check the bytes landed, compute, hook. */
        void forward(Req q, List<List<Backup>> reserved) {
            long layerNs = 500L + rnd.nextInt(20_000);
            for (int r = 0; r < cp; r++) {
                Rank rank = ranks[r];
                ForwardHandle h = CacheInternals.forward(rank.cache.beginForward(reserved.get(r)));
                for (int l = 0; l < layers; l++) {
                    waitAndCheck(q, rank, false, l);
                    rank.rt.simulateKernel(rank.cache.computeStream(), layerNs);
                    h.targetLayerStored(l);
                }
                for (int l = 0; l < draftLayers; l++) {
                    waitAndCheck(q, rank, true, l);
                    rank.rt.simulateKernel(rank.cache.computeStream(), layerNs / 4);
                    h.draftLayerStored(l);
                }
                h.endForward();
                if (r == 0) {
                    rank.rt.launchHostFunc(rank.cache.computeStream(), () -> q.forwardDone = true);
                }
            }
        }

        private void waitAndCheck(Req q, Rank rank, boolean isDraft, int layer) {
            for (LoadOp[] ops : q.deps) {
                LoadOp op = ops[rank.r];
                if (isDraft) {
                    rank.cache.waitDraftLayer(op.consumer(), layer);
                } else {
                    rank.cache.waitLayer(op.consumer(), layer);
                }
            }
            // the pages each load brings that this request reads, with their host pages, taken now: the request
            // holds them (locked) until its forward is done, but not the rest of a joined load's chain, which may
            // be evicted and reused before this layer computes
            List<LoadOp> mine = new ArrayList<>();
            List<int[]> pairs = new ArrayList<>();
            for (LoadOp[] ops : q.deps) {
                mine.add(ops[rank.r]);
                pairs.add(rank.loadedPairs(ops[rank.r], isDraft, q.used[rank.r]));
            }
            rank.rt.launchHostFunc(rank.cache.computeStream(), () -> {
                for (int i = 0; i < mine.size(); i++) {
                    LoadOp op = mine.get(i);
                    if (faulted.get(rank.r).containsKey(op) || op.state() == LoadHandle.State.FAILED) {
                        continue; // the engine recomputes a request whose load failed
                    }
                    StringBuilder why = new StringBuilder();
                    if (!rank.pairsMatch(pairs.get(i), isDraft, layer, why)) {
                        violations.add("rank " + rank.r + " compute of " + (isDraft ? "draft " : "") + "layer " + layer
                            + " started before its load landed (" + op + ", " + op.state() + "): " + why);
                    }
                    count(isDraft ? "draftLayerChecked" : "layerChecked");
                }
            });
        }

        void advance() {
            long next = Long.MAX_VALUE;
            for (Rank rank : ranks) {
                next = Math.min(next, rank.rt.nextEventTimeNs());
            }
            if (next != Long.MAX_VALUE) {
                for (Rank rank : ranks) {
                    rank.rt.advanceTo(Math.max(next, rank.rt.nowNs()));
                }
            }
            for (Rank rank : ranks) {
                rank.cache.doAgentWork();
            }
            for (Rank rank : ranks) {
                rank.cache.poll();
            }
        }

        void finishRequest() {
            for (int i = 0; i < running.size(); i++) {
                Req q = running.get(i);
                if (q.forwardDone) {
                    unlock(q);
                    running.remove(i);
                    return;
                }
            }
        }

        private void unlock(Req q) {
            for (int r = 0; r < cp; r++) {
                if (q.last[r] != null) {
                    ranks[r].cache.unlock(q.last[r]); // a no-op on a node a failed load invalidated
                }
            }
        }

        void evictDevice() {
            int pages = 1 + rnd.nextInt(16);
            int first = -1;
            for (Rank rank : ranks) {
                int n = rank.cache.evictDevice(pages, rank);
                if (first < 0) {
                    first = n;
                } else if (n != first) {
                    violations.add("rank " + rank.r + " evicted " + n + " device pages, rank 0 " + first);
                }
            }
        }

        void abortBackup() {
            if (backups.isEmpty()) {
                return;
            }
            Backup[] b = backups.remove(rnd.nextInt(backups.size()));
            boolean any = false;
            for (int r = 0; r < cp; r++) {
                any |= ranks[r].cache.abort(b[r], AbortReason.REQUEST_CANCELLED);
            }
            if (any) {
                count("backup.aborted");
            }
        }

        void drain() {
            for (int i = 0; i < 200_000; i++) {
                boolean busy = false;
                for (Rank rank : ranks) {
                    busy |= rank.cache.backupsInFlight() > 0 || rank.cache.loadsInFlight() > 0;
                }
                if (!busy) {
                    return;
                }
                advance();
            }
            throw new AssertionError("backups or loads did not drain");
        }

        void close(boolean check) {
            for (Rank rank : ranks) {
                try {
                    rank.close();
                } catch (RuntimeException e) {
                    if (check) {
                        throw e;
                    }
                } finally {
                    if (check) {
                        long uaf = rank.rt.useAfterFreeCount();
                        SimulatedCudaRuntime.LeakReport leak = rank.rt.leakReport();
                        rank.rt.close();
                        assertThat(uaf).as("rank %d copies touching freed memory", rank.r).isZero();
                        assertThat(leak.clean()).as("rank %d leak report %s", rank.r, leak).isTrue();
                    } else {
                        rank.rt.close();
                    }
                }
            }
        }
    }
}
