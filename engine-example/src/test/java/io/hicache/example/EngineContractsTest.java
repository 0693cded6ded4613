package io.hicache.example;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupState;
import io.hicache.core.CacheRequest;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What an engine relies on when it follows docs/INTEGRATION.md, through the exported API only: served tokens counted
 * once per request on the tier they came from, joins counted for other requests only, a cancelled backup taking the
 * backups reserved below it along (host copies stay contiguous, the evictable count stays exact), the withdrawal of
 * pages a cancelled request never computed, and the page and lock rules of {@code insert}.
 */
class EngineContractsTest {
    static final int LAYERS = 2;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 64;

    SimulatedCudaRuntime gpu;
    long kvBase;
    HiCache cache;
    DevicePagePool pool;

    @BeforeEach
    void build() {
        gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(64).pageCount(DEVICE_PAGES);
        kvBase = gpu.deviceMalloc(lb.packedBytes());
        pool = new DevicePagePool(DEVICE_PAGES);
        cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build()).hostPages(64)
            .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs).build();
    }

    @AfterEach
    void close() {
        cache.close();
        gpu.deviceFree(kvBase);
        gpu.close();
    }

    // ------------------------------------------------------------------ 1, 2: served tokens, joins

    @Test
    void aRequestsPromptTokensCountOnceOnTheTierTheyCameFrom() {
        int[] prompt = tokens(0, 8 * PAGE);
        // request 1: a chunked prefill of 8 pages, each chunk re-matched from the root
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, 4 * PAGE);
        runChunk(a, prompt, 8 * PAGE);
        a.finish();
        runUntil(() -> cache.backupsInFlight() == 0);
        assertThat(a.cachedTokens()).as("request 1 computed all of its prompt").isZero();
        assertThat(cache.metric(Metric.DEVICE_HIT_TOKENS)).isZero();

        // request 2 reuses the 8 pages from the device, matching twice
        CacheRequest b = cache.openRequest(2);
        int[] second = tokens(0, 10 * PAGE);
        MatchResult m = b.match(second, 0, second.length, new MatchResult());
        assertThat(m.deviceTokenCount()).isEqualTo(8 * PAGE);
        b.match(second, 0, second.length, m);
        int[] pages = pageList(m, 10);
        b.insert(second, 0, second.length, pages, 0, pool);
        b.markComputed(second.length);
        b.finish();
        assertThat(b.deviceTokens()).isEqualTo(8 * PAGE);
        assertThat(b.cachedTokens()).isEqualTo(8 * PAGE);

        // everything leaves the device; request 3 loads the 8-page prefix back, request 4 joins that load
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).isEqualTo(10);
        CacheRequest c = cache.openRequest(3);
        MatchResult mc = c.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(mc.hostTokenCount()).isEqualTo(8 * PAGE);
        LoadHandle load = c.loadBack(mc, 1 << 20, pool);
        assertThat(load).isNotNull();
        assertThat(load.firstPage()).isZero();
        c.match(prompt, 0, prompt.length, mc);  // the chain is now a loading device prefix: not counted again
        assertThat(mc.deviceTokenCount()).isEqualTo(8 * PAGE);
        assertThat(c.joinLoad(mc)).as("its own load, for the consumer token").isSameAs(load);
        assertThat(cache.metric(Metric.LOAD_JOINS)).as("a request's own load is no join").isZero();

        CacheRequest d = cache.openRequest(4);
        MatchResult md = d.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(d.joinLoad(md)).isSameAs(load);
        assertThat(cache.metric(Metric.LOAD_JOINS)).isEqualTo(1);

        long token = cache.startLoading();
        ForwardHooks hooks = cache.beginForward(List.of());
        for (int l = 0; l < LAYERS; l++) {
            cache.waitLayer(token, l);
            gpu.simulateKernel(cache.computeStream(), 10_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        runUntil(() -> load.state() == LoadHandle.State.LOADED);
        c.match(prompt, 0, prompt.length, mc);
        c.finish();
        d.finish();

        assertThat(c.hostTokens()).isEqualTo(8 * PAGE);
        assertThat(c.deviceTokens()).isZero();
        assertThat(d.deviceTokens()).as("joined another request's load").isEqualTo(8 * PAGE);
        assertThat(cache.metric(Metric.DEVICE_HIT_TOKENS)).as("requests 2 and 4").isEqualTo(16 * PAGE);
        assertThat(cache.metric(Metric.HOST_HIT_TOKENS)).as("request 3's load").isEqualTo(8 * PAGE);
        assertThat(cache.metric(Metric.LOAD_TOKENS)).isEqualTo(8 * PAGE);
    }

    @Test
    void aJoinOfTheRequestsOwnLoadIsNotCounted() {
        int[] prompt = tokens(0, 4 * PAGE);
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, prompt.length);
        a.finish();
        runUntil(() -> cache.backupsInFlight() == 0);
        cache.evictDevice(DEVICE_PAGES, pool);

        MatchResult m = cache.match(prompt, 0, prompt.length, new MatchResult());
        LoadHandle load = cache.loadBack(m, 7, 1 << 20, pool);
        cache.match(prompt, 0, prompt.length, m);
        assertThat(cache.joinLoad(m, 7)).isSameAs(load);
        assertThat(cache.metric(Metric.LOAD_JOINS)).isZero();
        assertThat(cache.joinLoad(m, 8)).isSameAs(load);
        assertThat(cache.metric(Metric.LOAD_JOINS)).isEqualTo(1);
        cache.startLoading();
        runUntil(() -> load.state() == LoadHandle.State.LOADED);
    }

    @Test
    void aFailedLoadNoLongerCountsInTheRequestsCachedTokens() {
        int[] prompt = tokens(0, 4 * PAGE);
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, prompt.length);
        a.finish();
        runUntil(() -> cache.backupsInFlight() == 0);
        cache.evictDevice(DEVICE_PAGES, pool);

        CacheRequest b = cache.openRequest(2);
        MatchResult m = b.match(prompt, 0, prompt.length, new MatchResult());
        LoadHandle load = b.loadBack(m, 1 << 20, pool);
        assertThat(b.hostTokens()).isEqualTo(4 * PAGE);
        gpu.failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.HOST_TO_DEVICE,
            CudaError.LAUNCH_OUT_OF_RESOURCES);
        cache.startLoading();
        runUntil(() -> load.state() == LoadHandle.State.FAILED);
        gpu.failCopiesMatching(null, null);
        assertThat(b.hostTokens()).as("the engine recomputes them").isZero();
        assertThat(b.cachedTokens()).isZero();
        // the request recomputes the prefix: its pages are its own now, and a later match counts nothing
        MatchResult again = b.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(again.hostTokenCount()).isEqualTo(4 * PAGE);
        b.insert(prompt, 0, prompt.length, pageList(again, 4), 0, pool);
        b.markComputed(prompt.length);
        b.finish();
        assertThat(b.cachedTokens()).isZero();
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES - 4);
    }

    // ------------------------------------------------------------------ 3: a cancelled parent

    @Test
    void aCancelledParentTakesTheBackupReservedBelowItAlong() {
        int[] tokens = tokens(0, 3 * PAGE);
        CacheRequest a = cache.openRequest(1);
        MatchResult m = a.match(tokens, 0, 2 * PAGE, new MatchResult());
        a.insert(tokens, 0, 2 * PAGE, pageList(m, 2), 0, pool);
        List<BackupHandle> parent = new ArrayList<>();
        assertThat(a.reserveByPolicy(false, parent)).isEqualTo(1);
        forward(parent);
        a.markComputed(2 * PAGE);

        // request B continues A's prefix while A's backup is still copying: a pending parent counts as backed up
        CacheRequest b = cache.openRequest(2);
        MatchResult mb = b.match(tokens, 0, tokens.length, new MatchResult());
        b.insert(tokens, 0, tokens.length, pageList(mb, 3), 0, pool);
        List<BackupHandle> child = new ArrayList<>();
        assertThat(b.reserveByPolicy(false, child)).isEqualTo(1);
        forward(child);
        b.markComputed(tokens.length);

        assertThat(cache.abort(parent.getFirst(), AbortReason.REQUEST_CANCELLED)).isTrue();
        runUntil(() -> child.getFirst().state().terminal() && parent.getFirst().state().terminal());
        assertThat(parent.getFirst().abortReason()).isEqualTo(AbortReason.REQUEST_CANCELLED);
        assertThat(child.getFirst().state()).as("no host copy under a node without one").isEqualTo(BackupState.ABORTED);
        assertThat(child.getFirst().abortReason()).isEqualTo(AbortReason.PARENT_ABORTED);
        assertThat(cache.metrics().abortedBy(AbortReason.PARENT_ABORTED)).isEqualTo(1);
        cache.tree().checkInvariants();

        a.finish();
        b.finish();
        long evictable = cache.tree().devicePagesEvictable();
        assertThat(evictable).isEqualTo(3);
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).as("what devicePagesEvictable promised").isEqualTo(evictable);
        assertThat(cache.tree().nodeCount()).isZero();
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES);
    }

    @Test
    void aCancelledParentTakesAChildThatFinishedCopyingAlong() {
        int[] tokens = tokens(0, 3 * PAGE);
        int[] pages = new int[3];
        pool.allocate(3, pages, 0);
        cache.insert(tokens, 0, 2 * PAGE, pages, 0);
        BackupHandle parent = cache.reserve(cache.lastInsertNode(), false);
        cache.insert(tokens, 0, tokens.length, pages, 0);
        BackupHandle child = cache.reserve(cache.lastInsertNode(), false);
        forward(List.of(parent, child));
        // copies done and sealed on the device, not yet agreed: then the parent's request is cancelled
        for (int i = 0; i < 100 && gpu.advanceToNextEvent(); i++) {
            cache.doAgentWork();
        }
        cache.abort(parent, AbortReason.PREEMPTED);
        runUntil(() -> child.state().terminal());
        assertThat(child.state()).isEqualTo(BackupState.ABORTED);
        assertThat(child.abortReason()).isEqualTo(AbortReason.PARENT_ABORTED);
        cache.tree().checkInvariants();
        assertThat(cache.tree().devicePagesEvictable()).isEqualTo(3);
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).isEqualTo(3);
        assertThat(cache.tree().nodeCount()).isZero();
    }

    // ------------------------------------------------------------------ 4: withdrawing what was never computed

    @Test
    void aCancelledRequestWithdrawsWhatItNeverComputedAndKeepsWhatItDid() {
        int[] prompt = tokens(0, 8 * PAGE);
        CacheRequest r = cache.openRequest(1);
        runChunk(r, prompt, 4 * PAGE);                 // chunk 1: computed
        MatchResult m = r.match(prompt, 0, prompt.length, new MatchResult());
        int[] pages = pageList(m, 8);
        r.insert(prompt, 0, prompt.length, pages, 0, pool); // chunk 2: inserted and reserved, never computed
        List<BackupHandle> chunk2 = new ArrayList<>();
        assertThat(r.reserveByPolicy(false, chunk2)).isEqualTo(1);
        int freeBefore = pool.freePages();

        assertThat(r.cancel(AbortReason.REQUEST_CANCELLED, pool)).isEqualTo(4);
        assertThat(r.isOpen()).isFalse();
        MatchResult after = cache.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(after.deviceTokenCount()).as("chunk 1 stays cached").isEqualTo(4 * PAGE);
        assertThat(after.hostTokenCount()).isZero();
        runUntil(() -> chunk2.getFirst().state().terminal() && cache.backupsInFlight() == 0);
        assertThat(chunk2.getFirst().abortReason()).isEqualTo(AbortReason.REQUEST_CANCELLED);
        assertThat(pool.freePages()).as("chunk 2's pages come back once its backup is released")
            .isEqualTo(freeBefore + 4);
        assertThat(cache.metric(Metric.WITHDRAWN_PAGES)).isEqualTo(4);
        assertThat(cache.metrics().commitCount()).as("chunk 1's backup commits").isEqualTo(1);
        cache.tree().checkInvariants();
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).isEqualTo(4);
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES);
    }

    @Test
    void aWithdrawalKeepsTheHostCopyOfANodeThatAdoptedUncomputedPages() {
        int[] prompt = tokens(0, 4 * PAGE);
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, prompt.length);
        a.finish();
        runUntil(() -> cache.backupsInFlight() == 0);
        cache.evictDevice(DEVICE_PAGES, pool);

        // request 2 recomputes the prefix instead of loading it: its insert adopts the host-only nodes
        CacheRequest b = cache.openRequest(2);
        int[] pages = new int[4];
        pool.allocate(4, pages, 0);
        assertThat(b.insert(prompt, 0, prompt.length, pages, 0, pool)).isZero();
        assertThat(b.cancel(AbortReason.PREEMPTED, pool)).isEqualTo(4);
        MatchResult m = cache.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(m.deviceTokenCount()).isZero();
        assertThat(m.hostTokenCount()).as("the host copy was computed and stays").isEqualTo(4 * PAGE);
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES);
        cache.tree().checkInvariants();
    }

    @Test
    void aWithdrawalRefusesPagesAnotherRequestUses() {
        int[] prompt = tokens(0, 4 * PAGE);
        CacheRequest a = cache.openRequest(1);
        MatchResult m = a.match(prompt, 0, prompt.length, new MatchResult());
        a.insert(prompt, 0, prompt.length, pageList(m, 4), 0, pool);
        // the engine let request 2 match pages request 1 never computed (what insert's javadoc forbids)
        CacheRequest b = cache.openRequest(2);
        b.match(prompt, 0, prompt.length, new MatchResult());
        assertThatThrownBy(() -> a.cancel(AbortReason.REQUEST_CANCELLED, pool))
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("lock");
        assertThat(cache.match(prompt, 0, prompt.length, new MatchResult()).deviceTokenCount()).isEqualTo(4 * PAGE);
        assertThat(a.isOpen()).isFalse();
        b.finish();
        assertThat(cache.withdrawUncomputed(prompt, 0, prompt.length, 0, AbortReason.REQUEST_CANCELLED, pool))
            .isEqualTo(4);
        assertThat(cache.match(prompt, 0, prompt.length, new MatchResult()).deviceTokenCount()).isZero();
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES);
    }

    @Test
    void aPageComputedOnlyInPartIsWithdrawnAndTheComputedOnesStay() {
        int[] prompt = tokens(0, 4 * PAGE);
        int[] pages = new int[4];
        pool.allocate(4, pages, 0);
        cache.insert(prompt, 0, prompt.length, pages, 0);
        // 2.5 pages computed: the half page is not
        assertThat(cache.withdrawUncomputed(prompt, 0, prompt.length, 2 * PAGE + PAGE / 2, AbortReason.ENGINE, pool))
            .isEqualTo(2);
        assertThat(cache.match(prompt, 0, prompt.length, new MatchResult()).deviceTokenCount()).isEqualTo(2 * PAGE);
        assertThat(cache.withdrawUncomputed(prompt, 0, prompt.length, 4 * PAGE, AbortReason.ENGINE, pool)).isZero();
        cache.tree().checkInvariants();
    }

    // ------------------------------------------------------------------ 6: the page and lock rules of insert

    @Test
    void insertHandsBackOnlyTheCallersDuplicatesNeverTheTreesOwnPages() {
        int[] prompt = tokens(0, 6 * PAGE);
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, 4 * PAGE);
        a.finish();

        // request 2 builds its page list from its match (the tree's 4 pages) and 2 fresh pages; meanwhile request 3
        // inserts the same 2 pages after the prefix
        CacheRequest b = cache.openRequest(2);
        MatchResult m = b.match(prompt, 0, prompt.length, new MatchResult());
        int[] pages = pageList(m, 6);
        int[] other = pageList(cache.match(prompt, 0, prompt.length, new MatchResult()), 6);
        cache.insert(prompt, 0, prompt.length, other, 0);
        List<Integer> freed = new ArrayList<>();
        assertThat(b.insert(prompt, 0, prompt.length, pages, 0, (arr, off, n) -> {
            for (int i = 0; i < n; i++) {
                freed.add(arr[off + i]);
                pool.free(arr, off + i, 1);
            }
        })).isEqualTo(6 * PAGE);
        assertThat(freed).containsExactlyInAnyOrder(pages[4], pages[5]);
        b.finish();
    }

    @Test
    void aRunningRequestsOwnNewPagesStayOnTheDeviceOnceBackedUp() {
        int[] prompt = tokens(0, 4 * PAGE);
        CacheRequest r = cache.openRequest(1);
        runChunk(r, prompt, 2 * PAGE);
        runUntil(() -> cache.backupsInFlight() == 0);
        // decoding: the request's answer pages are inserted below its prompt and backed up
        runChunk(r, prompt, 4 * PAGE);
        runUntil(() -> cache.backupsInFlight() == 0);
        assertThat(r.lockedNode()).isSameAs(cache.lastInsertNode());
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).as("all its pages are locked while it runs").isZero();
        r.finish();
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).isEqualTo(4);
    }

    @Test
    void aLoadSaysWhereItsPagesStartInTheSequence() {
        int[] prompt = tokens(0, 6 * PAGE);
        CacheRequest a = cache.openRequest(1);
        runChunk(a, prompt, 4 * PAGE);
        runChunk(a, prompt, 6 * PAGE);
        a.finish();
        runUntil(() -> cache.backupsInFlight() == 0);
        assertThat(cache.evictDevice(2, pool)).isEqualTo(2); // the last node: pages 4 and 5 are host-only now

        CacheRequest b = cache.openRequest(2);
        MatchResult m = b.match(prompt, 0, prompt.length, new MatchResult());
        assertThat(m.devicePageCount()).isEqualTo(4);
        LoadHandle load = b.loadBack(m, 1 << 20, pool);
        assertThat(load.firstPage()).isEqualTo(4);
        assertThat(load.pageCount()).isEqualTo(2);
        b.match(prompt, 0, prompt.length, m);
        assertThat(m.devicePage(load.firstPage())).isEqualTo(load.devicePage(0));
        assertThat(b.deviceTokens()).isEqualTo(4 * PAGE);
        assertThat(b.hostTokens()).isEqualTo(2 * PAGE);
        cache.startLoading();
        runUntil(() -> load.state() == LoadHandle.State.LOADED);
        b.finish();
    }

    // ------------------------------------------------------------------ helpers

    /** Matches, inserts {@code tokens[0, upTo)}, reserves by policy and runs its forward: one prefill chunk. */
    private void runChunk(CacheRequest r, int[] tokens, int upTo) {
        MatchResult m = r.match(tokens, 0, upTo, new MatchResult());
        int[] pages = pageList(m, upTo / PAGE);
        r.insert(tokens, 0, upTo, pages, 0, pool);
        List<BackupHandle> backups = new ArrayList<>();
        r.reserveByPolicy(false, backups);
        forward(backups);
        r.markComputed(upTo);
    }

    /** The match's device pages, then fresh pages up to {@code pages}. */
    private int[] pageList(MatchResult m, int pages) {
        int[] list = new int[pages];
        int have = Math.min(m.devicePageCount(), pages);
        for (int i = 0; i < have; i++) {
            list[i] = m.devicePage(i);
        }
        assertThat(pool.allocate(pages - have, list, have)).isTrue();
        return list;
    }

    private void forward(List<BackupHandle> backups) {
        ForwardHooks hooks = cache.beginForward(backups);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(cache.computeStream(), 10_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
    }

    private void runUntil(BooleanSupplier done) {
        for (int i = 0; i < 10_000 && !done.getAsBoolean(); i++) {
            cache.doAgentWork();
            if (!gpu.advanceToNextEvent()) {
                gpu.advanceTo(gpu.nowNs() + 1_000);
            }
            cache.poll();
        }
        assertThat(done.getAsBoolean()).as("the cache got there").isTrue();
    }

    private static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }
}
