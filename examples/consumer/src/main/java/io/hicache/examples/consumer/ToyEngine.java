package io.hicache.examples.consumer;

import io.hicache.core.BackupHandle;
import io.hicache.core.CacheRequest;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.micrometer.HiCacheMetricsBinder;
import io.hicache.radix.MatchResult;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The toy serving engine of docs/INTEGRATION.md, built against the installed HiCache artifacts: a scheduler thread
 * (the caller) and a forward thread on the simulated device, with the controller's metrics bound to a Prometheus
 * registry. Request 1 is prefilled and backed up layer by layer; its device pages are evicted; request 2 shares
 * its prefix, which is loaded back from host memory while the forward waits per layer.
 */
public final class ToyEngine {
    static final int LAYERS = 4;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 64;

    /**
     * What a run leaves behind: the backups of request 1, request 2's load, its cached tokens (what a client would be
     * told), and the Prometheus scrape.
     */
    public record Result(List<BackupHandle> backups, LoadHandle load, int deviceHitTokensAfterLoad,
                         int cachedTokensOfRequest2, String scrape) {
    }

    /** What the scheduler hands the forward thread: the hooks and the load consumer token. */
    record ForwardJob(ForwardHooks hooks, long loadToken, boolean last) {
    }

    private ToyEngine() {
    }

    /** Runs the two requests and prints the HiCache lines of the Prometheus scrape. */
    public static void main(String[] args) throws Exception {
        Result r = run();
        r.scrape().lines().filter(l -> l.startsWith("hicache_backup_committed_total")
            || l.startsWith("hicache_tokens_served_total")).forEach(System.out::println);
    }

    /** Runs the two requests on the calling (scheduler) thread and a forward thread. */
    public static Result run() throws InterruptedException {
        SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(256).pageCount(DEVICE_PAGES);
        long kvBase = gpu.deviceMalloc(lb.packedBytes());
        DevicePagePool pool = new DevicePagePool(DEVICE_PAGES); // the engine's device pages (scheduler thread)

        // 1. Build the controller once, on the scheduler thread, and bind its metrics.
        HiCache cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build())
            .hostPages(128).clock(gpu::nowNs).writePolicy(WritePolicy.WRITE_THROUGH)
            .threadingMode(ThreadingMode.DEDICATED).build();
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        HiCacheMetricsBinder.monitor(registry, cache, "toy-engine");
        BlockingQueue<ForwardJob> toForward = new ArrayBlockingQueue<>(4);
        BlockingQueue<Boolean> forwardDone = new ArrayBlockingQueue<>(4);

        // 2. The forward thread: per layer, wait for loaded KV, run the layer, then report it stored.
        Thread forward = Thread.ofPlatform().name("forward").start(() -> {
            try {
                while (true) {
                    ForwardJob job = toForward.take();
                    for (int l = 0; l < LAYERS; l++) {
                        cache.waitLayer(job.loadToken(), l);
                        gpu.simulateKernel(cache.computeStream(), 50_000);
                        job.hooks().targetLayerStored(l);
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

        try {
            // 3. Request 1: nothing cached; pages, insert, reserve backups, run the forward (docs/INTEGRATION.md 2).
            int[] first = tokens(0, 96);
            int[] second = tokens(0, 64);
            MatchResult match = new MatchResult();
            CacheRequest r1 = cache.openRequest(1);
            r1.match(first, 0, first.length, match);
            int[] pages = new int[first.length / PAGE];
            if (!pool.allocate(pages.length, pages, 0)) {
                throw new IllegalStateException("device pool exhausted");
            }
            r1.insert(first, 0, first.length, pages, 0, pool);
            List<BackupHandle> backups = new ArrayList<>();
            r1.reserveByPolicy(false, backups);
            toForward.put(new ForwardJob(cache.beginForward(backups), -1, false));
            r1.markComputed(first.length);
            await(forwardDone);
            long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!backups.stream().allMatch(b -> b.state().terminal()) && System.nanoTime() < deadlineNs) {
                cache.poll();
                gpu.advanceToNextEvent(); // the simulated device's clock only moves when it is advanced
                Thread.onSpinWait();
            }
            r1.finish();

            // The device needs room: evict request 1's pages; its host copy remains.
            cache.evictDevice(pages.length, pool);

            // 4. Request 2: a host hit; load it back, then run the forward waiting per layer.
            CacheRequest r2 = cache.openRequest(2);
            r2.match(second, 0, second.length, match);
            LoadHandle load = r2.loadBack(match, 1 << 20, pool);
            long token = cache.startLoading();
            toForward.put(new ForwardJob(cache.beginForward(List.of()), token, true));
            await(forwardDone);
            deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (load != null && load.state() != LoadHandle.State.LOADED && load.state() != LoadHandle.State.FAILED
                && System.nanoTime() < deadlineNs) {
                gpu.advanceToNextEvent();
                cache.poll();
                Thread.onSpinWait();
            }
            int deviceHit = r2.match(second, 0, second.length, match).deviceTokenCount();
            r2.finish();
            return new Result(List.copyOf(backups), load, deviceHit, r2.cachedTokens(), registry.scrape());
        } finally {
            forward.join(TimeUnit.SECONDS.toMillis(30));
            cache.close();
            gpu.deviceFree(kvBase);
            gpu.close();
        }
    }

    private static void await(BlockingQueue<Boolean> done) throws InterruptedException {
        if (done.poll(30, TimeUnit.SECONDS) == null) {
            throw new IllegalStateException("the forward thread did not finish within 30 s");
        }
    }

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }
}
