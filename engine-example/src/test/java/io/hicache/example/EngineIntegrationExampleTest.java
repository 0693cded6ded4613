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
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runnable companion of docs/INTEGRATION.md: a toy serving engine with a scheduler thread (this test's
 * thread) and a forward thread, linking the cache the way a real engine would, through {@link HiCache} alone
 * (this module is compiled on the module path against the exported packages only). The GPU is the simulated
 * device; the cache's agents run on their own threads ({@link ThreadingMode#DEDICATED}).
 */
class EngineIntegrationExampleTest {
    static final int LAYERS = 4;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 64;

    /** What the scheduler hands the forward thread: the hooks and the load consumer token. */
    record ForwardJob(ForwardHooks hooks, long loadToken, boolean last) {
    }

    @Test
    void anEngineBacksUpPromptsLayerByLayerAndLoadsThemBack() throws Exception {
        SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(256).pageCount(DEVICE_PAGES);
        long kvBase = gpu.deviceMalloc(lb.packedBytes());
        DeviceKvLayout layout = lb.packedFrom(kvBase).build();
        DevicePagePool pool = new DevicePagePool(DEVICE_PAGES);

        // 1. Build the cache once, on the scheduler thread. The simulated device runs on a virtual clock: the cache
        //    measures leases and latencies on it, and the loop below advances it (nothing completes otherwise).
        HiCache cache = HiCache.builder().runtime(gpu).targetLayout(layout).hostPages(128).clock(gpu::nowNs)
            .writePolicy(WritePolicy.WRITE_THROUGH).threadingMode(ThreadingMode.DEDICATED).build();
        BlockingQueue<ForwardJob> toForward = new ArrayBlockingQueue<>(4);
        BlockingQueue<Boolean> forwardDone = new ArrayBlockingQueue<>(4);

        // 2. The forward thread: per layer, wait for loaded KV, run the layer, then report it stored.
        Thread forward = Thread.ofPlatform().name("forward").start(() -> {
            try {
                while (true) {
                    ForwardJob job = toForward.take();
                    for (int l = 0; l < LAYERS; l++) {
                        cache.waitLayer(job.loadToken(), l);                  // GPU-side wait; no-op if nothing loaded
                        gpu.simulateKernel(cache.computeStream(), 50_000);   // attention + MLP of layer l
                        job.hooks().targetLayerStored(l);                    // KV of layer l is in device memory
                    }
                    job.hooks().endForward();
                    forwardDone.put(job.last());
                    if (job.last()) {
                        return;
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });

        // 3. The scheduler loop (docs/INTEGRATION.md section 2): two requests sharing a 64-token prefix, the second
        //    after the first was evicted, and a third cancelled before its forward.
        int[] first = tokens(0, 96);
        int[] second = tokens(0, 64);
        List<BackupHandle> committed = new ArrayList<>();
        MatchResult match = new MatchResult();

        // request 1: nothing cached; pages for the tokens it computes, insert, reserve backups, run the forward
        CacheRequest r1 = cache.openRequest(1);
        r1.match(first, 0, first.length, match);
        int[] pages = pageList(match, first.length / PAGE, pool);
        r1.insert(first, 0, first.length, pages, 0, pool);            // the lock moves to the inserted node
        List<BackupHandle> backups = new ArrayList<>();
        r1.reserveByPolicy(false, backups);
        toForward.put(new ForwardJob(cache.beginForward(backups), -1, false));
        r1.markComputed(first.length);                                 // its forward is launched
        assertThat(forwardDone.poll(30, TimeUnit.SECONDS)).isFalse();
        runUntilCommitted(cache, gpu, backups);
        committed.addAll(backups);

        // request 1 is still decoding: its pages stay on the device though they are backed up
        assertThat(cache.evictDevice(pages.length, pool)).isZero();
        r1.finish();
        assertThat(r1.cachedTokens()).isZero();                        // it computed all of its prompt
        // the device needs room: evict its pages, whose host copy remains
        assertThat(cache.evictDevice(pages.length, pool)).isEqualTo(pages.length);

        // request 2: a host hit; load it back, then run the forward waiting per layer
        CacheRequest r2 = cache.openRequest(2);
        r2.match(second, 0, second.length, match);
        assertThat(match.devicePageCount()).isZero();
        assertThat(match.hostTokenCount()).isEqualTo(64);
        LoadHandle load = r2.loadBack(match, 1 << 20, pool);
        r2.match(second, 0, second.length, match);                      // the chain is a loading device prefix now
        assertThat(r2.joinLoad(match)).isSameAs(load);                 // its own load: no join counted
        long token = cache.startLoading();
        toForward.put(new ForwardJob(cache.beginForward(List.of()), token, true));
        assertThat(forwardDone.poll(30, TimeUnit.SECONDS)).isTrue();
        // the completion agent runs on its own thread: bound the wait by time, not by a spin count
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (load.state() != LoadHandle.State.LOADED && System.nanoTime() < deadlineNs) {
            gpu.advanceToNextEvent();
            cache.poll();
            Thread.onSpinWait();
        }
        assertThat(load.state()).isEqualTo(LoadHandle.State.LOADED);
        r2.match(second, 0, second.length, match);
        assertThat(match.deviceTokenCount()).isEqualTo(64);
        r2.finish();
        assertThat(r2.hostTokens()).isEqualTo(64);                     // its cached_tokens, served from host memory
        assertThat(r2.cachedTokens()).isEqualTo(64);
        assertThat(cache.metric(Metric.DEVICE_HIT_TOKENS)).isZero();   // counted once, on the tier it came from
        assertThat(cache.metric(Metric.HOST_HIT_TOKENS)).isEqualTo(64);
        assertThat(cache.metric(Metric.LOAD_JOINS)).isZero();

        // request 3 shares the prefix, inserts its own tail and is cancelled before its forward: the tail is withdrawn
        CacheRequest r3 = cache.openRequest(3);
        r3.match(first, 0, first.length, match);
        int[] pages3 = pageList(match, first.length / PAGE, pool);
        r3.insert(first, 0, first.length, pages3, 0, pool);
        assertThat(r3.cancel(AbortReason.REQUEST_CANCELLED, pool)).isEqualTo(2);
        assertThat(cache.match(first, 0, first.length, match).deviceTokenCount()).isEqualTo(64);
        cache.tree().checkInvariants();

        forward.join(TimeUnit.SECONDS.toMillis(30));
        cache.close();
        gpu.deviceFree(kvBase);
        assertThat(gpu.leakReport().liveStreams()).isZero();
        gpu.close();
        assertThat(committed).allMatch(b -> b.state() == BackupState.COMMITTED);
    }

    /** The request's page list: the match's device pages (the tree's own), then fresh pages for the rest. */
    private static int[] pageList(MatchResult match, int pages, DevicePagePool pool) {
        int[] list = new int[pages];
        int cached = match.devicePageCount();
        for (int i = 0; i < cached; i++) {
            list[i] = match.devicePage(i);
        }
        assertThat(pool.allocate(pages - cached, list, cached)).isTrue();
        return list;
    }

    /** The scheduler's duty cycle while the GPU makes progress: poll() commits what the group agreed on. */
    private static void runUntilCommitted(HiCache cache, SimulatedCudaRuntime gpu, List<BackupHandle> backups) {
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadlineNs) {
            cache.poll();
            if (backups.stream().allMatch(b -> b.state().terminal())) {
                return;
            }
            gpu.advanceToNextEvent(); // stands in for the GPU running; a real engine just keeps scheduling
            Thread.onSpinWait();
        }
        throw new AssertionError("backups did not finish: " + backups);
    }

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }
}
