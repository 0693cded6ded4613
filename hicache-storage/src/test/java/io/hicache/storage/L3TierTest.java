package io.hicache.storage;

import io.hicache.core.BackupHandle;
import io.hicache.core.BackupListener;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.core.DevicePagePool;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The L3 tier as an engine uses it: a {@link HiCache} built through its builder on the simulated runtime, a file
 * store attached with {@link L3Tier#attach}, and nothing but the facade's calls driving it.
 */
class L3TierTest {
    private static final int LAYERS = 3;
    private static final int DRAFT_LAYERS = 1;
    private static final int PAGE = 4;
    private static final int DEVICE_PAGES = 64;
    private static final int HOST_PAGES = 64;
    private static final StorageTierConfig CFG = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE);

    @TempDir
    Path dir;

    static KeyNamespace namespace() {
        return KeyNamespace.builder().modelId("toy-model").kvDtype("int8").pageSizeTokens(PAGE)
                .hostLayout(HostLayout.LAYER_FIRST).build();
    }

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }

    /** The byte (tag, page position, layer, index) a forward writes into the device KV. */
    private static byte pattern(int tag, int position, int layer, int i) {
        return (byte) (tag * 31 + position * 7 + layer * 13 + i);
    }

    /** The byte a forward writes into the draft/MTP KV: differs from every target byte of the same page. */
    private static byte draftPattern(int tag, int position, int layer, int i) {
        return (byte) (pattern(tag, position, layer, i) ^ 0x5a);
    }

    @Test
    void writtenThroughByOneCacheThenPrefetchedByAFreshOneWithExactlyTheBytesBackedUp() {
        int[] t = tokens(1000, 8 * PAGE);
        List<BackupHandle> heard = new ArrayList<>();
        try (Engine a = new Engine(heard); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            a.forward(t, 5);
            a.settle(() -> l3.inFlight() == 0);
            assertThat(heard).hasSize(1); // the engine's own listener still hears every commit
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(8);
            assertThat(l3.metrics().get(StorageMetric.WRITE_BYTES)).isEqualTo(8 * a.cache.hostPool().bytesPerPage());
        }
        // a new process: an empty cache over the same directory
        try (Engine b = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), CFG);
            MatchResult m = b.cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.devicePageCount() + m.hostPageCount()).isZero();
            L3Prefetch p = l3.prefetch(t, 0, t.length, m, 7);
            assertThat(p).isNotNull();
            assertThat(p.startPage()).isZero();
            b.settle(p::isDone);
            assertThat(p.publishedPages()).isEqualTo(8);
            assertThat(p.mayRun()).isTrue();

            m = b.cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.devicePageCount()).isZero();
            assertThat(m.hostPageCount()).isEqualTo(8);
            LoadHandle load = b.cache.loadBack(m, 7, Integer.MAX_VALUE, b.pool);
            assertThat(load).isNotNull();
            p.consume();
            b.cache.startLoading();
            b.settle(() -> load.state() == LoadHandle.State.LOADED || load.state() == LoadHandle.State.FAILED);
            assertThat(load.state()).isEqualTo(LoadHandle.State.LOADED);
            for (int i = 0; i < 8; i++) {
                assertThat(b.deviceHolds(load.devicePage(i), 5, i)).as("page %d", i).isTrue();
            }
            assertThat(l3.metrics().get(StorageMetric.PREFETCH_PAGES_PUBLISHED)).isEqualTo(8);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_SUBMITTED)).isZero(); // known stored: not rewritten
        }
    }

    @Test
    void writeThroughSelectiveWritesWhenTheCachesOwnMatchSeesTheHitThreshold() {
        int[] t = tokens(90, 5 * PAGE);
        StorageTierConfig selective = CFG.withWritePolicy(StorageWritePolicy.WRITE_THROUGH_SELECTIVE);
        try (Engine e = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(e.cache, store, namespace(), selective);
            e.forward(t, 1);
            e.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_SUBMITTED)).isZero(); // one hit: below 2
            int[] again = new int[5];
            assertThat(e.pool.allocate(5, again, 0)).isTrue();
            assertThat(e.cache.insert(t, 0, t.length, again, 0)).isEqualTo(t.length); // a second request: 2 hits
            e.pool.free(again, 0, 5);
            e.cache.match(t, 0, t.length, new MatchResult()); // the tier hears of it through the cache
            e.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(5);
        }
    }

    @Test
    void misuseIsRefusedWithAClearErrorAndChangesNothing() {
        try (Engine e = new Engine(null); Engine other = new Engine(null);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            assertThatThrownBy(() -> L3Tier.attach(e.cache, null, namespace(), CFG))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must not be null");
            KeyNamespace wrongPage = KeyNamespace.builder().modelId("toy-model").kvDtype("int8")
                    .pageSizeTokens(2 * PAGE).hostLayout(HostLayout.LAYER_FIRST).build();
            assertThatThrownBy(() -> L3Tier.attach(e.cache, store, wrongPage, CFG))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("page size 8");
            assertThatThrownBy(() -> L3Tier.attach(e.cache, store, namespace(), CFG, new io.hicache.core.cp
                    .InProcessRankAgreement(1))).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("prefetch agreement");

            L3Tier l3 = L3Tier.attach(e.cache, store, namespace(), CFG);
            assertThatThrownBy(() -> L3Tier.attach(e.cache, store, namespace(), CFG))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("already has an L3 tier");

            int[] t = tokens(0, 4 * PAGE);
            MatchResult foreign = other.cache.match(t, 0, t.length, new MatchResult());
            assertThatThrownBy(() -> l3.prefetch(t, 0, t.length, foreign, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not made by this cache");
            MatchResult m = e.cache.match(t, 0, t.length, new MatchResult());
            assertThatThrownBy(() -> l3.prefetch(t, 2, t.length, m, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside tokens");

            l3.close();
            l3.close(); // idempotent
            assertThat(l3.isClosed()).isTrue();
            assertThatThrownBy(() -> l3.prefetch(t, 0, t.length, m, 1))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            L3Tier again = L3Tier.attach(e.cache, store, namespace(), CFG); // a closed tier frees the slot
            e.cache.close(); // closes the tier first
            assertThat(again.isClosed()).isTrue();
            assertThatThrownBy(() -> again.prefetch(t, 0, t.length, m, 1))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThatThrownBy(() -> L3Tier.attach(e.cache, store, namespace(), CFG))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("HiCache is closed");
            assertThat(again.metrics().get(StorageMetric.PREFETCH_STARTED)).isZero(); // still answers
        }
    }

    @Test
    void aCancelledPrefetchAndOneCutShortByCloseReturnTheirHostReservation() {
        int[] t = tokens(50, 6 * PAGE);
        try (Engine a = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            a.forward(t, 2);
            a.settle(() -> l3.inFlight() == 0);
        }
        try (Engine b = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), CFG);
            MatchResult m = b.cache.match(t, 0, t.length, new MatchResult());
            L3Prefetch p = l3.prefetch(t, 0, t.length, m, 1);
            assertThat(p).isNotNull();
            assertThat(b.cache.hostPool().budgetUsedPages()).isEqualTo(6); // leased while it runs
            p.cancel();
            b.settle(p::isDone);
            assertThat(p.publishedPages()).isZero();
            assertThat(b.cache.match(t, 0, t.length, new MatchResult()).hostPageCount()).isZero();
            assertThat(b.cache.hostPool().budgetUsedPages()).isZero();
            assertThat(b.cache.hostPool().freePages()).isEqualTo(HOST_PAGES);
            assertThat(l3.metrics().get(StorageMetric.PREFETCH_CANCELLED)).isEqualTo(1);

            L3Prefetch q = l3.prefetch(t, 0, t.length, b.cache.match(t, 0, t.length, new MatchResult()), 2);
            assertThat(q).isNotNull();
            l3.close(); // waits for its reads, publishes nothing, releases the lease
            assertThat(q.isDone()).isTrue();
            assertThat(q.publishedPages()).isZero();
            assertThat(b.cache.hostPool().budgetUsedPages()).isZero();
            assertThat(b.cache.hostPool().freePages()).isEqualTo(HOST_PAGES);
            q.cancel(); // after close: a no-op
        }
    }

    @Test
    void aStoreThatIsGoneCountsFailuresWhileTheCacheKeepsServingFromHost() {
        int[] t = tokens(7, 4 * PAGE);
        try (Engine a = new Engine(null)) {
            PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults());
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            store.close();
            a.forward(t, 3);
            a.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isZero();
            assertThat(l3.metrics().get(StorageMetric.WRITE_FAILED_PAGES)
                    + l3.metrics().get(StorageMetric.WRITE_PAGES_SUBMITTED)).isPositive();
            assertThat(a.cache.tree().hostPagesCommitted()).isEqualTo(4);
            assertThat(a.cache.evictDevice(4, a.pool)).isEqualTo(4); // the host copy serves now
            MatchResult m = a.cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(4);
            LoadHandle load = a.cache.loadBack(m, 1, Integer.MAX_VALUE, a.pool);
            a.cache.startLoading();
            a.settle(() -> load.state() == LoadHandle.State.LOADED || load.state() == LoadHandle.State.FAILED);
            assertThat(load.state()).isEqualTo(LoadHandle.State.LOADED);
            assertThat(a.deviceHolds(load.devicePage(3), 3, 3)).isTrue();
        }
    }

    @Test
    void eachRankOfACpGroupAttachesItsLaneAndOnlyWhatEveryLaneStoredBecomesAHit() {
        int[] t = tokens(400, 8 * PAGE);
        try (Group a = new Group(); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            assertThatThrownBy(() -> L3Tier.attach(a.rank[0].cache, store, namespace(), CFG))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("prefetch agreement");
            InProcessRankAgreement prefetches = new InProcessRankAgreement(2);
            assertThatThrownBy(() -> L3Tier.attach(a.rank[0].cache, store, KeyNamespace.NONE, CFG, prefetches))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("CP lanes");
            assertThatThrownBy(() -> L3Tier.attach(a.rank[1].cache, store, a.lane(0), CFG, prefetches))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("rank 1 of 2");
            L3Tier[] l3 = a.attach(store, prefetches);
            a.forward(t, 4);
            Engine.settleAll(() -> l3[0].inFlight() + l3[1].inFlight() == 0, a.rank);
            for (L3Tier x : l3) {
                assertThat(x.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(4); // the lane's half
            }
        }
        try (Group b = new Group(); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier[] l3 = b.attach(store, new InProcessRankAgreement(2));
            L3Prefetch[] p = new L3Prefetch[2];
            LoadHandle[] loads = new LoadHandle[2];
            for (int r = 0; r < 2; r++) {
                p[r] = l3[r].prefetch(t, 0, t.length, b.rank[r].cache.match(t, 0, t.length, new MatchResult()), 9);
                assertThat(p[r]).isNotNull();
            }
            Engine.settleAll(() -> p[0].isDone() && p[1].isDone(), b.rank);
            for (int r = 0; r < 2; r++) {
                assertThat(p[r].publishedPages()).isEqualTo(8);
                Engine e = b.rank[r];
                MatchResult m = e.cache.match(t, 0, t.length, new MatchResult());
                assertThat(m.hostPageCount()).isEqualTo(8);
                LoadHandle load = e.cache.loadBack(m, 9, Integer.MAX_VALUE, e.pool);
                p[r].consume();
                e.cache.startLoading();
                loads[r] = load;
            }
            Engine.settleAll(() -> loads[0].state() == LoadHandle.State.LOADED
                    && loads[1].state() == LoadHandle.State.LOADED, b.rank);
            for (int r = 0; r < 2; r++) {
                for (int i = r; i < 8; i += 2) { // round-robin: the positions this lane owns
                    assertThat(b.rank[r].deviceHolds(loads[r].devicePage(i), 4, i)).as("rank %d page %d", r, i)
                            .isTrue();
                }
            }
        }
        try (Group c = new Group(); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            // lane 1 under another salt finds nothing: lane 0 has all its positions, but only the prefix every lane
            // has becomes a hit, on both ranks: position 0 (lane 0's), not position 1 (lane 1's) nor anything after it
            KeyNamespace[] lanes = {c.lane(0), c.lane(1, "other")};
            L3Tier[] l3 = c.attach(store, new InProcessRankAgreement(2), lanes);
            L3Prefetch[] p = new L3Prefetch[2];
            for (int r = 0; r < 2; r++) {
                p[r] = l3[r].prefetch(t, 0, t.length, c.rank[r].cache.match(t, 0, t.length, new MatchResult()), 3);
            }
            Engine.settleAll(() -> p[0].isDone() && p[1].isDone(), c.rank);
            for (int r = 0; r < 2; r++) {
                assertThat(p[r].publishedPages()).isEqualTo(1);
                assertThat(c.rank[r].cache.match(t, 0, t.length, new MatchResult()).hostPageCount()).isEqualTo(1);
                p[r].consume();
            }
        }
    }

    @Test
    void aStorageHitRestoresTheDraftKvWithTheTargetKvInsteadOfLeavingAnEarlierPagesBytes() {
        int[] t = tokens(3000, 6 * PAGE);
        StorageTierMetrics written;
        long pageBytes;
        try (Engine a = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            a.forward(t, 5);
            a.settle(() -> l3.inFlight() == 0);
            written = l3.metrics();
            pageBytes = a.cache.hostPool().bytesPerPage() + a.draftBytesPerPage();
        }
        try (Engine b = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            b.fillDraft(9); // the device draft pages hold an earlier request's KV
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), CFG);
            LoadHandle load = b.prefetchAndLoad(l3, t, 7, 6);
            for (int i = 0; i < 6; i++) {
                assertThat(b.deviceHolds(load.devicePage(i), 5, i)).as("target page %d", i).isTrue();
                assertThat(b.draftHolds(load.devicePage(i), 5, i)).as("draft page %d", i).isTrue();
            }
        }
        assertThat(written.get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(6);
        assertThat(written.get(StorageMetric.WRITE_BYTES)).isEqualTo(6 * pageBytes); // target and draft
    }

    @Test
    void aPageIsAStorageHitForADraftCacheOnlyWhenItsTargetAndDraftPartsAreBothStored() throws Exception {
        int[] t = tokens(4000, 6 * PAGE);
        try (Engine a = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            a.forward(t, 6);
            a.settle(() -> l3.inFlight() == 0);
            // page 3's draft part is lost (evicted, or never landed); its target part is still there
            PageKey[] target = namespace().chain(t);
            assertThat(store.remove(List.of(namespace().draftKey(target[3]))).await(5, TimeUnit.SECONDS).ok(0))
                    .isTrue();
        }
        try (Engine b = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            b.fillDraft(9);
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), CFG);
            LoadHandle load = b.prefetchAndLoad(l3, t, 8, 3); // the pages before it
            for (int i = 0; i < 3; i++) {
                assertThat(b.draftHolds(load.devicePage(i), 6, i)).as("draft page %d", i).isTrue();
            }
        }
        // a cache without draft layers reads the same target objects (SGLang's keys, the draft apart)
        try (Engine c = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(c.cache, store, namespace(), CFG);
            LoadHandle load = c.prefetchAndLoad(l3, t, 9, 6);
            for (int i = 0; i < 6; i++) {
                assertThat(c.deviceHolds(load.devicePage(i), 6, i)).as("target page %d", i).isTrue();
            }
        }
    }

    @Test
    void aDraftCacheDoesNotTakeTargetPagesWhoseDraftWasNeverStoredAndStoresItsOwn() {
        int[] t = tokens(5000, 5 * PAGE);
        try (Engine a = new Engine(null); PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(a.cache, store, namespace(), CFG);
            a.forward(t, 2); // target KV only
            a.settle(() -> l3.inFlight() == 0);
        }
        try (Engine b = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            L3Tier l3 = L3Tier.attach(b.cache, store, namespace(), CFG);
            MatchResult m = b.cache.match(t, 0, t.length, new MatchResult());
            L3Prefetch p = l3.prefetch(t, 0, t.length, m, 1);
            assertThat(p).isNotNull();
            b.settle(p::isDone);
            assertThat(p.publishedPages()).isZero(); // no draft part: not a hit
            b.forward(t, 3); // computed again, with its draft KV: the draft parts are stored now
            b.settle(() -> l3.inFlight() == 0);
            assertThat(l3.metrics().get(StorageMetric.WRITE_PAGES_STORED)).isEqualTo(5);
        }
        try (Engine c = new Engine(null, DRAFT_LAYERS);
             PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            c.fillDraft(9);
            L3Tier l3 = L3Tier.attach(c.cache, store, namespace(), CFG);
            LoadHandle load = c.prefetchAndLoad(l3, t, 2, 5);
            for (int i = 0; i < 5; i++) {
                assertThat(c.draftHolds(load.devicePage(i), 3, i)).as("draft page %d", i).isTrue();
            }
        }
    }

    /** A CP group of two ranks on one test thread (each rank's scheduler thread), with in-process agreements. */
    private static final class Group implements AutoCloseable {
        final Engine[] rank = new Engine[2];

        Group() {
            InProcessRankAgreement backups = new InProcessRankAgreement(2);
            InProcessRankAgreement loadAgreement = new InProcessRankAgreement(2);
            for (int r = 0; r < 2; r++) {
                rank[r] = new Engine(null, 2, r, backups, loadAgreement);
            }
        }

        KeyNamespace lane(int r) {
            return lane(r, "");
        }

        KeyNamespace lane(int r, String salt) {
            return KeyNamespace.builder().modelId("toy-model").kvDtype("int8").pageSizeTokens(PAGE)
                    .hostLayout(HostLayout.LAYER_FIRST).cp(2, r).salt(salt).build();
        }

        L3Tier[] attach(PageStore store, InProcessRankAgreement prefetches) {
            return attach(store, prefetches, new KeyNamespace[] {lane(0), lane(1)});
        }

        L3Tier[] attach(PageStore store, InProcessRankAgreement prefetches, KeyNamespace[] lanes) {
            L3Tier[] l3 = new L3Tier[2];
            for (int r = 0; r < 2; r++) {
                l3[r] = L3Tier.attach(rank[r].cache, store, lanes[r], CFG, prefetches);
            }
            return l3;
        }

        void forward(int[] t, int tag) {
            List<BackupHandle> b0 = rank[0].compute(t, tag);
            List<BackupHandle> b1 = rank[1].compute(t, tag);
            Engine.settleAll(() -> b0.getFirst().state().terminal() && b1.getFirst().state().terminal(), rank);
            assertThat(b0.getFirst().state()).isEqualTo(io.hicache.core.BackupState.COMMITTED);
        }

        @Override
        public void close() {
            for (Engine e : rank) {
                e.close();
            }
        }
    }

    /** A toy engine rank: a simulated GPU, its device KV, a device page pool and the cache. Test thread only. */
    static final class Engine implements AutoCloseable {
        final SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
        final DeviceKvLayout layout;
        final long kvBase;
        final DeviceKvLayout draftLayout;
        final long draftBase;
        final HiCache cache;
        final DevicePagePool pool = new DevicePagePool(DEVICE_PAGES);

        Engine(List<BackupHandle> heard) {
            this(heard, 0);
        }

        /** A single rank with {@code draftLayers} draft/MTP layers (0: none) in lockstep with the target layers. */
        Engine(List<BackupHandle> heard, int draftLayers) {
            this(heard, 1, 0, null, null, draftLayers);
        }

        /** Rank {@code rank} of a CP group of {@code cp} (1: no group) agreeing through {@code backups} and {@code loads}. */
        Engine(List<BackupHandle> heard, int cp, int rank, InProcessRankAgreement backups, InProcessRankAgreement loads) {
            this(heard, cp, rank, backups, loads, 0);
        }

        private Engine(List<BackupHandle> heard, int cp, int rank, InProcessRankAgreement backups,
                       InProcessRankAgreement loads, int draftLayers) {
            DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS)
                    .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
            kvBase = gpu.deviceMalloc(lb.packedBytes());
            layout = lb.packedFrom(kvBase).build();
            HiCache.Builder b = HiCache.builder().runtime(gpu).targetLayout(layout).hostPages(HOST_PAGES)
                    .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs);
            if (draftLayers > 0) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(draftLayers)
                        .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(8).pageCount(DEVICE_PAGES);
                draftBase = gpu.deviceMalloc(db.packedBytes());
                draftLayout = db.packedFrom(draftBase).build();
                b.draftLayout(draftLayout);
            } else {
                draftBase = 0;
                draftLayout = null;
            }
            if (cp > 1) {
                b.cpGroup(cp, rank, OwnerLanes.Standard.ROUND_ROBIN, backups, loads);
            }
            if (heard != null) {
                b.listener(new BackupListener() {
                    @Override
                    public void onCommitted(BackupHandle backup) {
                        heard.add(backup);
                    }
                });
            }
            cache = b.build();
        }

        /** Computes {@code t} (its device KV written with {@code tag}), backs it up in the forward and commits it. */
        void forward(int[] t, int tag) {
            List<BackupHandle> backups = compute(t, tag);
            settle(() -> backups.getFirst().state().terminal());
        }

        /** {@link #forward} up to the end of the forward: the backups, not yet committed. */
        List<BackupHandle> compute(int[] t, int tag) {
            return compute(t, tag, new int[0]);
        }

        /**
         * {@link #forward} of the pages of {@code t} after its first {@code prefix.length}, which the tree holds on
         * the device in pages {@code prefix} (a load just landed them): only the rest is computed and backed up.
         */
        void forwardRest(int[] t, int tag, int[] prefix) {
            List<BackupHandle> backups = compute(t, tag, prefix);
            settle(() -> backups.getFirst().state().terminal());
        }

        private List<BackupHandle> compute(int[] t, int tag, int[] prefix) {
            int pages = t.length / PAGE;
            int[] dev = java.util.Arrays.copyOf(prefix, pages);
            assertThat(pool.allocate(pages - prefix.length, dev, prefix.length)).isTrue();
            for (int i = prefix.length; i < pages; i++) {
                for (int l = 0; l < LAYERS; l++) {
                    MemorySegment s = gpu.deviceMemory(layout.pageAddress(l, 0, dev[i]), layout.pageBytes());
                    for (int x = 0; x < s.byteSize(); x++) {
                        s.set(ValueLayout.JAVA_BYTE, x, pattern(tag, i, l, x));
                    }
                }
                if (draftLayout != null) {
                    writeDraft(dev[i], tag, i);
                }
            }
            assertThat(cache.insert(t, 0, t.length, dev, 0)).isEqualTo(prefix.length * PAGE);
            List<BackupHandle> backups = new ArrayList<>();
            assertThat(cache.reserveByPolicy(cache.lastInsertNode(), draftLayout != null, backups)).isEqualTo(1);
            ForwardHooks hooks = cache.beginForward(backups);
            for (int l = 0; l < LAYERS; l++) {
                gpu.simulateKernel(cache.computeStream(), 10_000);
                hooks.targetLayerStored(l);
                if (draftLayout != null && l < draftLayout.layerCount()) {
                    hooks.draftLayerStored(l);
                }
            }
            hooks.endForward();
            return backups;
        }

        /** Bytes of one page of the draft KV, all draft layers. */
        long draftBytesPerPage() {
            return (long) draftLayout.layerCount() * draftLayout.bufferCount() * draftLayout.pageBytes();
        }

        /** Writes {@code tag}'s draft bytes into every device draft page, as an earlier request's KV would be. */
        void fillDraft(int tag) {
            for (int p = 0; p < DEVICE_PAGES; p++) {
                writeDraft(p, tag, p);
            }
        }

        /** Writes the draft KV (every layer and buffer) a forward with {@code tag} computes at {@code position}. */
        private void writeDraft(int page, int tag, int position) {
            for (int l = 0; l < draftLayout.layerCount(); l++) {
                for (int b = 0; b < draftLayout.bufferCount(); b++) {
                    MemorySegment s = gpu.deviceMemory(draftLayout.pageAddress(l, b, page), draftLayout.pageBytes());
                    for (int x = 0; x < s.byteSize(); x++) {
                        s.set(ValueLayout.JAVA_BYTE, x, draftPattern(tag, position, l + 7 * b, x));
                    }
                }
            }
        }

        /** True when device page {@code page}'s draft KV holds the bytes a forward with {@code tag} wrote there. */
        boolean draftHolds(int page, int tag, int position) {
            for (int l = 0; l < draftLayout.layerCount(); l++) {
                for (int b = 0; b < draftLayout.bufferCount(); b++) {
                    MemorySegment s = gpu.deviceMemory(draftLayout.pageAddress(l, b, page), draftLayout.pageBytes());
                    for (int x = 0; x < s.byteSize(); x++) {
                        if (s.get(ValueLayout.JAVA_BYTE, x) != draftPattern(tag, position, l + 7 * b, x)) {
                            return false;
                        }
                    }
                }
            }
            return true;
        }

        /**
         * On an empty cache: prefetches {@code t}, expects {@code pages} leading pages published, loads them back to
         * the device as an engine does and returns the finished load.
         */
        LoadHandle prefetchAndLoad(L3Tier l3, int[] t, long requestId, int pages) {
            MatchResult m = cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.devicePageCount() + m.hostPageCount()).isZero();
            L3Prefetch p = l3.prefetch(t, 0, t.length, m, requestId);
            assertThat(p).isNotNull();
            settle(p::isDone);
            assertThat(p.publishedPages()).isEqualTo(pages);
            m = cache.match(t, 0, t.length, new MatchResult());
            assertThat(m.hostPageCount()).isEqualTo(pages);
            LoadHandle load = cache.loadBack(m, requestId, Integer.MAX_VALUE, pool);
            assertThat(load).isNotNull();
            p.consume();
            cache.startLoading();
            settle(() -> load.state() == LoadHandle.State.LOADED || load.state() == LoadHandle.State.FAILED);
            assertThat(load.state()).isEqualTo(LoadHandle.State.LOADED);
            return load;
        }

        /** True when device page {@code page} holds the bytes a forward with {@code tag} wrote at {@code position}. */
        boolean deviceHolds(int page, int tag, int position) {
            for (int l = 0; l < LAYERS; l++) {
                MemorySegment s = gpu.deviceMemory(layout.pageAddress(l, 0, page), layout.pageBytes());
                for (int x = 0; x < s.byteSize(); x++) {
                    if (s.get(ValueLayout.JAVA_BYTE, x) != pattern(tag, position, l, x)) {
                        return false;
                    }
                }
            }
            return true;
        }

        /**
         * Runs scheduler steps (agents, simulated device, poll) until {@code done}; the store's I/O runs on its own
         * threads in wall-clock time, so the bound is a wall-clock deadline.
         */
        void settle(BooleanSupplier done) {
            settleAll(done, this);
        }

        /** {@link #settle} stepping every rank of a group, one after the other, as one scheduler thread. */
        static void settleAll(BooleanSupplier done, Engine... group) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!done.getAsBoolean()) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("did not settle within 60 s");
                }
                for (Engine e : group) {
                    e.cache.doAgentWork();
                    e.gpu.advanceToNextEvent();
                }
                for (Engine e : group) {
                    e.cache.poll();
                }
                Thread.onSpinWait();
            }
        }

        @Override
        public void close() {
            cache.close();
            gpu.deviceFree(kvBase);
            if (draftBase != 0) {
                gpu.deviceFree(draftBase);
            }
            gpu.close();
        }
    }
}
