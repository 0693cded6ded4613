package io.hicache.examples.jlama;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.hicache.core.BackupHandle;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.simulated.HostThreadCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A serving loop over Jlama with HiCache linked in: the engine side of the integration, written the way
 * docs/INTEGRATION.md describes for a GPU engine.
 *
 * <p><b>Memory.</b> The "device" is a {@link HostThreadCudaRuntime}: a paged KV pool ({@link DeviceKvLayout}, MHA,
 * K and V per layer, {@value #PAGE_TOKENS}-token pages) in its device memory is the engine's KV pool the radix
 * tree indexes and the cache backs up from and loads into. Jlama computes attention over its own per-request
 * {@code KvBuffer}, so the adapter mirrors the two: after block {@code l} wrote a chunk's KV, the chunk's new
 * positions are copied into their device pages and {@code targetLayerStored(l)} is called; before block
 * {@code l} of a request with a cached prefix, the prefix's pages of layer {@code l} are copied into the
 * request's buffer. Only whole pages of the prompt are cached; generated tokens are not.
 *
 * <p><b>Flow of {@link #generate}</b> (the scheduler and the forward are one thread here, as in Jlama's own
 * {@code generate}): {@code poll}; {@code match}; a host hit is loaded back ({@code loadBack},
 * {@code startLoading}); pages for the rest; {@code insert}; lock the path; {@code reserveByPolicy};
 * {@code beginForward}; the prefill of the uncached positions with the per-layer hooks (in the prompt's last
 * chunk, when a layer's KV for the whole prompt is on the device); {@code endForward}; greedy decoding.
 * Backups commit asynchronously; {@link #awaitBackups()} polls until they have.
 *
 * <p><b>Loads.</b> Without overlap the engine waits for the load, then inserts and runs the forward with its
 * hooks. With overlap the prefill starts at once, in the forward that loads the prefix: the request inserts its
 * new pages below the chain being loaded, reserves their backups and runs its hooks per layer as any forward
 * does; before block {@code l} it calls {@code waitLayer(token, l)} (the compute stream waits for layer
 * {@code l}'s load) and then, being a CPU engine, waits on the compute stream itself. The cache publishes those
 * backups only once the load is agreed; if the load fails they abort ({@code LOAD_FAILED}), the inserted nodes
 * are dropped with their pages, and the request is served again without the host hit.
 *
 * <p>Not thread-safe: one thread calls everything (the cache's scheduler thread).
 */
public final class JlamaHiCacheEngine implements AutoCloseable {
    /** Tokens per KV page. */
    public static final int PAGE_TOKENS = 16;

    private final HookedLlamaModel model;
    private final HostThreadCudaRuntime gpu;
    private final long kvBase;
    private final MemorySegment deviceKv;
    private final DeviceKvLayout layout;
    private final DevicePagePool pool;
    private final HiCache cache;
    private final long tokenBytes;
    private final MatchResult match = new MatchResult();
    private final List<BackupHandle> backups = new ArrayList<>();
    private final Mirror mirror = new Mirror();
    private final boolean overlapLoads;
    private final CudaEvent layerReady;
    private long nextRequestId = 1;
    private boolean closed;

    /**
     * @param model               the Jlama model this engine serves (it owns no other state)
     * @param gpu                 the device; the KV pool is allocated from it and freed by {@link #close()}
     * @param devicePages         pages in the device KV pool
     * @param hostPages           pages in the host tier
     * @param maxForwardsInFlight forwards whose backups may be in flight at once
     * @param overlapLoads        true: the prefill starts while a load-back runs, each layer waiting for its own
     *                            load ({@code waitLayer}); false: the load finishes before the prefill starts
     */
    public JlamaHiCacheEngine(HookedLlamaModel model, HostThreadCudaRuntime gpu, int devicePages, int hostPages,
                              int maxForwardsInFlight, boolean overlapLoads) {
        this.model = model;
        this.overlapLoads = overlapLoads;
        this.gpu = gpu;
        var c = model.getConfig();
        this.tokenBytes = (long) c.kvLength * Float.BYTES;
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(c.numberOfLayers)
            .pageSizeTokens(PAGE_TOKENS).bytesPerTokenPerBuffer(tokenBytes).pageCount(devicePages);
        this.kvBase = gpu.deviceMalloc(lb.packedBytes());
        this.deviceKv = gpu.deviceMemory(kvBase, lb.packedBytes());
        this.layout = lb.packedFrom(kvBase).build();
        this.pool = new DevicePagePool(devicePages);
        this.cache = HiCache.builder().runtime(gpu).targetLayout(layout).hostPages(hostPages)
            .writePolicy(WritePolicy.WRITE_THROUGH).threadingMode(ThreadingMode.DEDICATED)
            .maxForwardsInFlight(maxForwardsInFlight).build();
        this.layerReady = gpu.createEvent(true);
    }

    /** The cache (scheduler thread only). */
    public HiCache cache() {
        return cache;
    }

    /** Backups committed so far. */
    public long backupsCommitted() {
        return cache.metrics().get(Metric.BACKUPS_COMMITTED);
    }

    /**
     * Serves one request: prompt {@code prompt}, {@code newTokens} greedy tokens, reusing whatever prefix of the
     * prompt the cache holds on the device or the host. A load-back that fails is retried as a computation of
     * the prompt without the host tier.
     *
     * @throws IllegalStateException when the device pool has no room even after eviction, or a load-back does
     *                               not finish within 60 s
     */
    public Generation generate(int[] prompt, int newTokens) {
        if (prompt.length < 1 || newTokens < 1) {
            throw new IllegalArgumentException("need a prompt of >= 1 token and newTokens >= 1");
        }
        long t0 = System.nanoTime();
        Generation g = serve(prompt, newTokens, true, t0);
        return g != null ? g : serve(prompt, newTokens, false, t0);
    }

    /** @return the generation, or null when the load-back failed (nothing is left held) */
    private Generation serve(int[] prompt, int newTokens, boolean useHost, long t0) {
        long requestId = nextRequestId++;
        cache.poll();
        int cacheable = prompt.length / PAGE_TOKENS * PAGE_TOKENS;
        cache.match(prompt, 0, cacheable, match);
        LoadHandle load = null;
        long loadToken = -1;
        if (useHost && match.hostTokenCount() > 0) {
            load = cache.loadBack(match, requestId, Integer.MAX_VALUE, pool);
            if (load != null) {
                loadToken = cache.startLoading();
                if (!overlapLoads) {
                    awaitLoad(load); // failed: its pages went back and the match below finds only the device part
                    load = null;
                    loadToken = -1;
                    cache.match(prompt, 0, cacheable, match);
                }
            }
        }
        int onDevice = match.deviceTokenCount();
        int prefixTokens = onDevice + (load == null ? 0 : load.pageCount() * PAGE_TOKENS);
        // the last prompt token is always computed: its output gives the first token's logits
        int restored = Math.min(prefixTokens, (prompt.length - 1) / PAGE_TOKENS * PAGE_TOKENS);
        int prefixPages = prefixTokens / PAGE_TOKENS;
        int[] pages = new int[cacheable / PAGE_TOKENS];
        for (int i = 0; i < onDevice / PAGE_TOKENS; i++) {
            pages[i] = match.devicePage(i); // the tree's own pages: insert reports them present; not ours to free
        }
        for (int j = 0; load != null && j < load.pageCount(); j++) {
            pages[onDevice / PAGE_TOKENS + j] = load.devicePage(j); // the load's pages, filled layer by layer
        }
        RadixNode prefix = match.lastDeviceNode();
        cache.lock(prefix); // neither an eviction to make room nor a later one may take the matched prefix
        RadixNode node = null;
        KvBufferCache.KvBuffer kv = null;
        try {
            allocate(pages, prefixPages);
            // with a load in flight the new pages go below the chain being loaded and are backed up in this forward
            node = insertAndLock(prompt, cacheable, pages, prefixTokens);
            ForwardHooks hooks = beginForward(node);
            kv = model.newKvBuffer();
            mirror.start(hooks, pages, restored, prefixTokens, cacheable, prompt.length, loadToken);
            AbstractTensor last;
            try {
                last = model.prefill(prompt, restored, kv, mirror);
            } finally {
                hooks.endForward(); // a layer never reported stored aborts its backups rather than publishing
                mirror.clear();
            }
            if (load != null) {
                awaitLoad(load);
                if (load.state() != LoadHandle.State.LOADED) {
                    // the cache dropped what was inserted below the chain (its pages went back to the pool) and
                    // aborts the backups computed over it; compute the request again without the host hit
                    last.close();
                    return null;
                }
            }
            return Generation.decodeFrom(model, last, prompt.length, kv, newTokens, t0, restored,
                prompt.length - restored);
        } finally {
            if (kv != null) {
                kv.close();
            }
            if (node != null) {
                cache.unlock(node);
            } else {
                pool.free(pages, prefixPages, pages.length - prefixPages); // never inserted: still ours
            }
            cache.unlock(prefix);
        }
    }

    private RadixNode insertAndLock(int[] prompt, int cacheable, int[] pages, int expectPresent) {
        int present = cache.insert(prompt, 0, cacheable, pages, 0);
        if (present != expectPresent) {
            throw new IllegalStateException("insert found " + present + " tokens on device, expected " + expectPresent);
        }
        RadixNode node = cache.lastInsertNode();
        cache.lock(node);
        return node;
    }

    private ForwardHooks beginForward(RadixNode node) {
        backups.clear();
        cache.reserveByPolicy(node, false, backups);
        return cache.beginForward(backups);
    }

    /** Polls the cache until no backup is in flight. @throws IllegalStateException after 60 s */
    public void awaitBackups() {
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (cache.backupsInFlight() > 0) {
            if (System.nanoTime() > deadlineNs) {
                throw new IllegalStateException("backups still in flight after 60 s: " + cache.backupsInFlight());
            }
            cache.poll();
            Thread.onSpinWait();
        }
        cache.poll();
    }

    /** Evicts up to {@code pages} device pages (backed-up ones keep their host copy). @return pages evicted */
    public int evictDevice(int pages) {
        return cache.evictDevice(pages, pool);
    }

    /** Free pages in the device pool. */
    public int freeDevicePages() {
        return pool.freePages();
    }

    private void allocate(int[] pages, int from) {
        int need = pages.length - from;
        if (need == 0) {
            return;
        }
        if (!pool.allocate(need, pages, from)) {
            cache.evictDevice(need - freeDevicePages(), pool);
            if (!pool.allocate(need, pages, from)) {
                throw new IllegalStateException("device KV pool has " + freeDevicePages() + " free pages, need " + need);
            }
        }
    }

    private void awaitLoad(LoadHandle load) {
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (load.state() == LoadHandle.State.QUEUED || load.state() == LoadHandle.State.ISSUED) {
            if (System.nanoTime() > deadlineNs) {
                throw new IllegalStateException("load-back " + load + " did not finish within 60 s");
            }
            cache.poll();
            Thread.onSpinWait();
        }
        // FAILED: the pages went back to the pool and the match below finds only what is on the device
    }

    /** Closes the cache (its host memory is freed) and frees the device KV pool. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        gpu.destroyEvent(layerReady);
        cache.close();
        gpu.deviceFree(kvBase);
    }

    /**
     * The per-layer bridge between Jlama's KV buffer and the device pool, with the hooks. One instance, reused
     * per request; forward thread.
     */
    private final class Mirror implements HookedLlamaModel.LayerListener {
        private ForwardHooks hooks;
        private int[] pages;
        private int restored;
        private int onDevice;
        private int cacheable;
        private int promptEnd;
        private long loadToken;

        void start(ForwardHooks hooks, int[] pages, int restored, int onDevice, int cacheable, int promptEnd,
                   long loadToken) {
            this.loadToken = loadToken;
            this.hooks = hooks;
            this.pages = pages;
            this.restored = restored;
            this.onDevice = onDevice;
            this.cacheable = cacheable;
            this.promptEnd = promptEnd;
        }

        void clear() {
            hooks = null;
            pages = null;
        }

        @Override
        public void beforeLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv) {
            if (startPos == restored && restored > 0) { // the first chunk: bring the cached prefix in
                if (loadToken >= 0) {
                    // the compute stream waits for layer's load; a CPU engine then waits for the compute stream
                    cache.waitLayer(loadToken, layer);
                    gpu.recordEvent(layerReady, cache.computeStream());
                    gpu.synchronizeEvent(layerReady);
                }
                copy(kv, layer, 0, restored, false);
            }
        }

        @Override
        public void afterLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv) {
            int from = Math.max(startPos, onDevice);
            int to = Math.min(startPos + tokens, cacheable);
            if (from < to) {
                copy(kv, layer, from, to, true);
            }
            if (hooks != null && startPos + tokens == promptEnd) {
                hooks.targetLayerStored(layer); // layer's KV for the whole prompt is in device memory now
            }
        }

        /** Copies K and V of positions {@code [from, to)} of {@code layer} between the buffer and the pages. */
        private void copy(KvBufferCache.KvBuffer kv, int layer, int from, int to, boolean toDevice) {
            for (int p = from; p < to; p++) {
                long inPage = (long) (p % PAGE_TOKENS) * tokenBytes;
                int page = pages[p / PAGE_TOKENS];
                long k = layout.pageAddress(layer, 0, page) - kvBase + inPage;
                long v = layout.pageAddress(layer, 1, page) - kvBase + inPage;
                MemorySegment key = kv.getKeyTensorForPosition(layer, p).getMemorySegment();
                MemorySegment val = kv.getValTensorForPosition(layer, p).getMemorySegment();
                if (toDevice) {
                    MemorySegment.copy(key, 0, deviceKv, k, tokenBytes);
                    MemorySegment.copy(val, 0, deviceKv, v, tokenBytes);
                } else {
                    MemorySegment.copy(deviceKv, k, key, 0, tokenBytes);
                    MemorySegment.copy(deviceKv, v, val, 0, tokenBytes);
                }
            }
        }
    }
}
