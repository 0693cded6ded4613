package io.hicache.serve.engine;

import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadListener;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.simulated.HostThreadCudaRuntime;
import io.hicache.events.KvEventPublisher;
import io.hicache.events.KvEventsConfig;
import io.hicache.micrometer.HiCacheMetricsBinder;
import io.hicache.micrometer.L3TierMetricsBinder;
import io.hicache.serve.model.ModelSpec;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.L3Tier;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;

/**
 * The engine's KV tiers: the device KV pool (memory of a {@link HostThreadCudaRuntime}, the "device" of a CPU engine),
 * the {@link HiCache} that indexes it and backs it up to its host tier, the optional L3 tier on a store, the optional
 * KV event publisher, and the library's own meters (bound with the project's Micrometer binders). A <em>generation</em>
 * is one cache with its tier, publisher and meters: {@link #flush()} ends one and starts the next, which is how
 * {@code /flush_cache} empties device and host (the L3 store is shared and persistent: it is left as it is).
 *
 * <p>Engine thread only, like the cache (it is the cache's scheduler thread), except {@link #scrape()}.
 */
final class CacheTiers implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CacheTiers.class);

    final EngineConfig cfg;
    final int pageSize;
    final long tokenBytes;
    final HostThreadCudaRuntime gpu;
    final long kvBase;
    final MemorySegment deviceKv;
    final DeviceKvLayout layout;
    final DevicePool pool;
    private final PageStore store;
    /** Requests whose load failed since the engine last looked (the cache tells its listener from poll). */
    final Set<Long> failedLoads = new HashSet<>();
    HiCache cache;
    L3Tier l3;
    CudaEvent layerReady;
    private KvEventPublisher events;
    private volatile PrometheusMeterRegistry libraryMeters;
    private boolean closed;

    CacheTiers(EngineConfig cfg) {
        this.cfg = cfg;
        this.pageSize = cfg.pageSize();
        ModelSpec m = cfg.model();
        this.tokenBytes = m.kvBytesPerTokenPerBuffer();
        this.gpu = new HostThreadCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(m.layers())
            .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(tokenBytes).pageCount(cfg.devicePages());
        this.kvBase = gpu.deviceMalloc(lb.packedBytes());
        this.deviceKv = gpu.deviceMemory(kvBase, lb.packedBytes());
        this.layout = lb.packedFrom(kvBase).build();
        this.pool = new DevicePool(cfg.devicePages());
        PageStore s = null;
        if (cfg.storage() != null) {
            s = PageStores.open(cfg.storage(), StoreConfig.defaults()); // credentials are never printed
        }
        this.store = s;
    }

    /** Longest park of an idle cache agent. */
    static final long IDLE_PARK_MAX_NS = 1_000_000;

    /** Builds a generation: the cache, its L3 tier, the event publisher and the library meters. Engine thread. */
    void open() {
        HiCache.Builder b = HiCache.builder().runtime(gpu).targetLayout(layout)
            // no host tier: the cache still needs a pool, of one page, that the engine never reserves or loads
            .hostPages(cfg.hostTier() ? cfg.hostTokens() / pageSize : 1)
            .writePolicy(cfg.writePolicy()).threadingMode(ThreadingMode.DEDICATED)
            // the agents share the CPU with the model's forward here (no GPU to wait on): idle, they park up to 1 ms
            // rather than the library's 100 us, which costs a copy at most that much latency and gives the forward
            // back the tenth of a core two agents spent polling
            .idleStrategy(() -> new org.agrona.concurrent.BackoffIdleStrategy(10, 10, 10_000, IDLE_PARK_MAX_NS))
            .maxForwardsInFlight(64)
            .loadBatchesInFlight(16).loadThresholdTokens(0)
            .loadListener(new LoadListener() {
                @Override
                public void onLoadFailed(LoadHandle op) {
                    failedLoads.add(op.requestId());
                }
            });
        if (cfg.loadOverlap() != io.hicache.core.LoadOverlap.SAME_FORWARD) {
            b.loadOverlap(cfg.loadOverlap(), "--load-overlap " + cfg.loadOverlap().name().toLowerCase(java.util.Locale.ROOT));
        }
        cache = b.build();
        layerReady = gpu.createEvent(true);
        PrometheusMeterRegistry reg = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        HiCacheMetricsBinder.monitor(reg, cache, "serve");
        if (store != null) {
            KeyNamespace ns = KeyNamespace.builder().modelId(cfg.model().id()).kvDtype("float32")
                .pageSizeTokens(pageSize).hostLayout(cache.hostPool().layout()).build();
            StorageTierConfig tc = StorageTierConfig.DEFAULT.withWritePolicy(cfg.storageWritePolicy())
                .withPrefetchPolicy(cfg.prefetchPolicy()).withPrefetchThresholdTokens(cfg.prefetchThresholdTokens());
            l3 = L3Tier.attach(cache, store, ns, tc);
            L3TierMetricsBinder.monitor(reg, cache, l3, "serve");
        }
        if (cfg.kvEvents() != null) {
            events = KvEventPublisher.attach(cache, KvEventsConfig.builder(cfg.kvEvents()).build());
        }
        libraryMeters = reg;
    }

    boolean hostTier() {
        return cfg.hostTier();
    }

    /** The cache's duty cycle (commits, loads, the L3 tier). */
    void poll() {
        cache.poll();
    }

    /**
     * Ends this generation and starts the next: every device page is free again and the host tier is empty. Call
     * only when no request holds anything. Engine thread.
     */
    void flush() {
        closeGeneration();
        pool.reset();
        open();
    }

    /** The library's meters in Prometheus text (any thread). */
    String scrape() {
        PrometheusMeterRegistry r = libraryMeters;
        return r == null ? "" : r.scrape();
    }

    /** Work the tiers still have in flight (backups, loads, L3 operations): the engine keeps polling while it is not 0. */
    int inFlight() {
        return cache.backupsInFlight() + cache.loadsInFlight() + (l3 == null ? 0 : l3.inFlight());
    }

    private void closeGeneration() {
        if (events != null) {
            events.close();
            events = null;
        }
        if (layerReady != null) {
            gpu.destroyEvent(layerReady);
            layerReady = null;
        }
        cache.close(); // closes the L3 tier first
        l3 = null;
        PrometheusMeterRegistry r = libraryMeters;
        if (r != null) {
            r.close();
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (cache != null) {
                closeGeneration();
            }
        } finally {
            if (store != null) {
                try {
                    store.close();
                } catch (RuntimeException e) {
                    LOG.warn("closing the L3 store: {}", e.toString());
                }
            }
            gpu.deviceFree(kvBase);
            gpu.close();
        }
    }

    /** The store's location as logs may show it. */
    String storageShown() {
        return cfg.storage() == null ? "none" : PageStores.redact(cfg.storage());
    }
}
