package io.hicache.micrometer;

import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.storage.L3Tier;
import io.hicache.storage.PageStore;
import io.hicache.storage.PageStores;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StoreConfig;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Grafana dashboard under dashboards/ queries only meters the binder registers: every {@code hicache_*}
 * name in every panel's PromQL is in a Prometheus scrape of a bound cache and its bound L3 tier.
 */
class DashboardTest {
    private static final Pattern EXPR = Pattern.compile("\"expr\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");
    private static final Pattern METRIC = Pattern.compile("\\bhicache_[a-zA-Z0-9_:]*");
    private static final Pattern PANEL_TITLE = Pattern.compile("\"title\"\\s*:");

    private static Path dashboard() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath()
            .resolve("dashboards/hicache.json");
    }

    @TempDir
    Path dir;

    /** Metric names of a scrape of a bound cache and its bound L3 tier, histogram and summary series included. */
    private Set<String> scrapedNames() {
        SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(2).pageSizeTokens(16)
            .bytesPerTokenPerBuffer(16).pageCount(8);
        long base = gpu.deviceMalloc(lb.packedBytes());
        // the store outlives the cache, whose close detaches the tier
        try (PageStore store = PageStores.open("file:" + dir, StoreConfig.defaults());
             HiCache cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(base).build()).hostPages(16)
                 .writePolicy(WritePolicy.WRITE_THROUGH).threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs)
                 .leaseNs(0).build()) {
            PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
            HiCacheMetricsBinder.monitor(registry, cache, "engine");
            L3TierMetricsBinder.monitor(registry, cache, L3Tier.attach(cache, store,
                L3TierMetricsBinderTest.namespace(cache), StorageTierConfig.DEFAULT), "engine");
            Set<String> names = new HashSet<>();
            for (String line : registry.scrape().split("\n")) {
                if (!line.isEmpty() && !line.startsWith("#")) {
                    int end = line.indexOf('{');
                    names.add(line.substring(0, end >= 0 ? end : line.indexOf(' ')));
                }
            }
            return names;
        } finally {
            gpu.deviceFree(base);
            gpu.close();
        }
    }

    @Test
    void everyPanelQueriesOnlyMetersTheBinderRegisters() throws IOException {
        String json = Files.readString(dashboard());
        List<String> exprs = new ArrayList<>();
        Matcher e = EXPR.matcher(json);
        while (e.find()) {
            exprs.add(e.group(1).replace("\\\"", "\""));
        }
        long panels = PANEL_TITLE.matcher(json).results().count() - 1; // less the dashboard's own title
        assertThat(panels).isGreaterThanOrEqualTo(6);
        assertThat(exprs).hasSizeGreaterThanOrEqualTo((int) panels);

        Set<String> scraped = scrapedNames();
        assertThat(scraped).contains("hicache_host_used_tokens", "hicache_cached_tokens_total",
            "hicache_storage_prefetch_bandwidth_total");
        for (String expr : exprs) {
            Matcher m = METRIC.matcher(expr);
            assertThat(m.find()).as("a panel query names no hicache meter: " + expr).isTrue();
            do {
                assertThat(scraped).as("dashboard query '" + expr + "' names " + m.group()).contains(m.group());
            } while (m.find());
        }
    }
}
