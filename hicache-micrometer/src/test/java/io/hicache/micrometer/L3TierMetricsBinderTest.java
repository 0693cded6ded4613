package io.hicache.micrometer;

import io.hicache.core.BackupHandle;
import io.hicache.core.CacheRequest;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.LoadHandle;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.storage.KeyNamespace;
import io.hicache.storage.L3Prefetch;
import io.hicache.storage.L3Tier;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static io.hicache.micrometer.HiCacheMetricsBinderTest.parse;
import static io.hicache.micrometer.HiCacheMetricsBinderTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * One cache writes a prefill through to a file store, a fresh cache prefetches it back; both are bound with
 * {@link HiCacheMetricsBinder} and {@link L3TierMetricsBinder} to one Prometheus registry, whose scrape must show
 * every tier counter, and {@code hicache.tokens.served} with {@code tier=storage} beside device and host.
 */
class L3TierMetricsBinderTest {
    static final int LAYERS = 4;
    static final int PAGE = 16;

    @TempDir
    Path dir;
    final SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
    final List<Long> kv = new ArrayList<>();
    final List<HiCache> caches = new ArrayList<>();

    @AfterEach
    void close() {
        caches.forEach(HiCache::close);
        kv.forEach(gpu::deviceFree);
        gpu.close();
    }

    HiCache cache() {
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
                .bytesPerTokenPerBuffer(64).pageCount(HiCacheMetricsBinderTest.DEVICE_PAGES);
        long base = gpu.deviceMalloc(lb.packedBytes());
        kv.add(base);
        HiCache c = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(base).build()).hostPages(64)
                .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs).build();
        caches.add(c);
        return c;
    }

    static KeyNamespace namespace(HiCache c) {
        return KeyNamespace.builder().modelId("toy").kvDtype("bf16").pageSizeTokens(PAGE)
                .hostLayout(c.hostPool().layout()).build();
    }

    @Test
    void writeThroughAndPrefetchShowInTheScrapeWithTierStorageBesideDeviceAndHost() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StorageTierConfig config = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE);
        int[] t = tokens(500, 6 * PAGE);
        try (PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            HiCache a = HiCacheMetricsBinder.monitor(registry, cache(), "engine", "model", "toy");
            L3Tier writer = L3TierMetricsBinder.monitor(registry, a,
                    L3Tier.attach(a, store, namespace(a), config), "engine", "model", "toy");
            prefill(a, t);
            settle(() -> writer.inFlight() == 0, a);

            HiCache b = HiCacheMetricsBinder.monitor(registry, cache(), "fresh", "model", "toy");
            L3Tier reader = L3TierMetricsBinder.monitor(registry, b,
                    L3Tier.attach(b, store, namespace(b), config), "fresh", "model", "toy");
            L3Prefetch p = reader.prefetch(t, 0, t.length, b.match(t, 0, t.length, new MatchResult()), 7);
            assertThat(p).isNotNull();
            settle(p::isDone, b);
            assertThat(p.publishedPages()).isEqualTo(6);
            p.consume();

            long pageBytes = a.hostPool().bytesPerPage();
            Map<String, Double> scrape = parse(registry.scrape());
            assertThat(scrape).containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"storage\""), 96.0)
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"host\""), 0.0)
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"device\""), 0.0)
                    .containsEntry(key("hicache_tokens_served_total", "engine", "tier=\"storage\""), 0.0)
                    .containsEntry(key("hicache_storage_written_bytes_total", "engine"), 6.0 * pageBytes)
                    .containsEntry(key("hicache_storage_write_stored_pages_total", "engine"), 6.0)
                    .containsEntry(key("hicache_storage_read_bytes_total", "fresh"), 6.0 * pageBytes)
                    .containsEntry(key("hicache_storage_prefetch_published_pages_total", "fresh"), 6.0)
                    .containsEntry(key("hicache_storage_prefetch_started_total", "fresh"), 1.0)
                    .containsEntry(key("hicache_storage_write_in_flight", "engine"), 0.0)
                    .containsEntry(key("hicache_storage_prefetch_in_flight", "fresh"), 0.0);
            assertThat(scrape.get(key("hicache_storage_write_time_seconds_total", "engine"))).isPositive();
            assertThat(scrape.get(key("hicache_storage_read_bandwidth_bytes_per_second", "fresh"))).isPositive();
            assertThat(scrape.get(key("hicache_storage_write_bandwidth_bytes_per_second", "engine"))).isPositive();

            // one histogram sample per store operation that moved bytes, in the +Inf bucket at least; the reader wrote
            // nothing and the writer read nothing
            assertThat(scrape.get(key("hicache_storage_prefetch_bandwidth_count_total", "fresh"))).isEqualTo(1.0);
            assertThat(scrape.get(key("hicache_storage_prefetch_bandwidth_total", "fresh", "le=\"+Inf\""))).isEqualTo(1.0);
            assertThat(scrape.get(key("hicache_storage_prefetch_bandwidth_sum_total", "fresh"))).isPositive();
            assertThat(scrape.get(key("hicache_storage_prefetch_bandwidth_count_total", "engine"))).isZero();
            double writes = writer.metrics().backupBandwidth().count();
            assertThat(writes).isPositive();
            assertThat(scrape.get(key("hicache_storage_backup_bandwidth_count_total", "engine"))).isEqualTo(writes);
            assertThat(scrape.get(key("hicache_storage_backup_bandwidth_total", "engine", "le=\"+Inf\""))).isEqualTo(writes);
            assertThat(scrape.get(key("hicache_storage_backup_bandwidth_count_total", "fresh"))).isZero();
            assertThat(scrape.get(key("hicache_storage_backup_bandwidth_sum_total", "engine"))).isPositive();

            // every counter of the tier has its meter, equal to the tier's own figure
            for (L3Tier tier : List.of(writer, reader)) {
                String name = tier == writer ? "engine" : "fresh";
                for (StorageMetric metric : StorageMetric.values()) {
                    double expected = tier.metrics().get(metric) * (metric.name().endsWith("_NS") ? 1e-9 : 1);
                    double bound = registry.find(meterName(metric)).tag("cache", name).functionCounter().count();
                    assertThat(bound).as("%s of %s", metric, name).isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-9));
                }
            }
        }
    }

    /**
     * A token the L3 tier served is counted once: under {@code tier=storage} when a prefetch publishes it, and not again
     * under {@code tier=host} when its request loads it to the device; the request reads it as a storage token. A later
     * load of the same pages (for another request, from host memory now) counts under {@code tier=host}.
     */
    @Test
    void aTokenAPrefetchServedIsNotCountedAgainWhenItsRequestLoadsIt() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        StorageTierConfig config = StorageTierConfig.DEFAULT.withPrefetchThresholdTokens(PAGE);
        int[] t = tokens(700, 4 * PAGE);
        try (PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults())) {
            HiCache a = cache();
            L3Tier writer = L3Tier.attach(a, store, namespace(a), config);
            prefill(a, t);
            settle(() -> writer.inFlight() == 0, a);

            HiCache b = HiCacheMetricsBinder.monitor(registry, cache(), "fresh", "model", "toy");
            L3Tier reader = L3TierMetricsBinder.monitor(registry, b, L3Tier.attach(b, store, namespace(b), config),
                    "fresh", "model", "toy");
            CacheRequest req = b.openRequest(7);
            MatchResult m = req.match(t, 0, t.length, new MatchResult());
            L3Prefetch p = reader.prefetch(t, 0, t.length, m, 7);
            assertThat(p).isNotNull();
            settle(p::isDone, b);
            req.match(t, 0, t.length, m);
            assertThat(m.hostTokenCount()).isEqualTo(t.length);
            LoadHandle load = req.loadBack(m, 1 << 20, pool(b));
            p.consume();
            assertThat(load.storagePageCount()).isEqualTo(4);
            b.startLoading();
            settle(() -> load.state() == LoadHandle.State.LOADED, b);
            req.finish();
            assertThat(req.storageTokens()).isEqualTo(t.length);
            assertThat(req.hostTokens()).isZero();
            assertThat(req.cachedTokens()).isEqualTo(t.length);
            Map<String, Double> scrape = parse(registry.scrape());
            assertThat(scrape).containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"storage\""), 64.0)
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"host\""), 0.0)
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"device\""), 0.0);

            // the pages leave the device; another request loads them from host memory
            assertThat(b.evictDevice(4, pool(b))).isEqualTo(4);
            CacheRequest again = b.openRequest(8);
            LoadHandle second = again.loadBack(again.match(t, 0, t.length, new MatchResult()), 1 << 20, pool(b));
            assertThat(second.storagePageCount()).isZero();
            b.startLoading();
            settle(() -> second.state() == LoadHandle.State.LOADED, b);
            again.finish();
            assertThat(again.hostTokens()).isEqualTo(t.length);
            assertThat(parse(registry.scrape()))
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"host\""), 64.0)
                    .containsEntry(key("hicache_tokens_served_total", "fresh", "tier=\"storage\""), 64.0);
        }
    }

    /** One device page pool per cache, for its loads. */
    private DevicePageAllocator pool(HiCache c) {
        return pools.computeIfAbsent(c, x -> new io.hicache.core.DevicePagePool(HiCacheMetricsBinderTest.DEVICE_PAGES));
    }

    private final Map<HiCache, DevicePageAllocator> pools = new java.util.IdentityHashMap<>();

    /** The Micrometer name the binder gives {@code metric}'s meter, spelled out here so that a rename is noticed. */
    private static String meterName(StorageMetric metric) {
        return switch (metric) {
            case PREFETCH_STARTED -> "hicache.storage.prefetch.started";
            case PREFETCH_PAGES_REQUESTED -> "hicache.storage.prefetch.requested";
            case PREFETCH_PAGES_PUBLISHED -> "hicache.storage.prefetch.published";
            case PREFETCH_BYTES -> "hicache.storage.read";
            case PREFETCH_IO_NS -> "hicache.storage.read.time";
            case PREFETCH_TERMINATED_EARLY -> "hicache.storage.prefetch.terminated.early";
            case PREFETCH_CANCELLED -> "hicache.storage.prefetch.cancelled";
            case PREFETCH_NO_ROOM -> "hicache.storage.prefetch.no.room";
            case PREFETCH_NOT_CONTIGUOUS -> "hicache.storage.prefetch.not.contiguous";
            case PREFETCH_FAILED_PAGES -> "hicache.storage.prefetch.failed";
            case PREFETCH_PUBLISH_REFUSED -> "hicache.storage.prefetch.refused";
            case PREFETCH_PAGES_GONE -> "hicache.storage.prefetch.gone";
            case WRITE_PAGES_SUBMITTED -> "hicache.storage.write.submitted";
            case WRITE_PAGES_STORED -> "hicache.storage.write.stored";
            case WRITE_PAGES_PRESENT -> "hicache.storage.write.present";
            case WRITE_BYTES -> "hicache.storage.written";
            case WRITE_IO_NS -> "hicache.storage.write.time";
            case WRITE_FAILED_PAGES -> "hicache.storage.write.failed";
            case WRITE_BACK_DROPPED_PAGES -> "hicache.storage.write.dropped";
            case CORRUPT_PAGES -> "hicache.storage.corrupt";
            case WRITE_PAGES_KNOWN -> "hicache.storage.write.known";
            case PREFETCH_CUT_BY_SHARE -> "hicache.storage.prefetch.cut";
            case KNOWN_KEYS_RESETS -> "hicache.storage.known.resets";
        };
    }

    private static String key(String name, String cache, String... extra) {
        List<String> labels = new ArrayList<>(List.of("cache=\"" + cache + "\"", "model=\"toy\"", "rank=\"0\""));
        labels.addAll(List.of(extra));
        return name + "{" + String.join(",", labels.stream().sorted().toList()) + "}";
    }

    /** Insert, reserve, a forward with per-layer hooks; committed later by {@link #settle}. */
    private void prefill(HiCache c, int[] t) {
        int[] pages = new int[t.length / PAGE];
        for (int i = 0; i < pages.length; i++) {
            pages[i] = i;
        }
        c.insert(t, 0, t.length, pages, 0);
        List<BackupHandle> backups = new ArrayList<>();
        c.reserveByPolicy(c.lastInsertNode(), false, backups);
        ForwardHooks hooks = c.beginForward(backups);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(c.computeStream(), 10_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        settle(() -> backups.stream().allMatch(x -> x.state().terminal()), c);
    }

    /** Scheduler steps until {@code done}; the store's I/O runs on its own threads, so the bound is wall-clock. */
    private void settle(BooleanSupplier done, HiCache c) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean()) {
            assertThat(System.nanoTime()).as("settled within 20 s").isLessThan(deadline);
            c.doAgentWork();
            gpu.advanceToNextEvent();
            c.poll();
            Thread.onSpinWait();
        }
    }
}
