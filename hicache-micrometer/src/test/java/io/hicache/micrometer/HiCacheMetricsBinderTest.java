package io.hicache.micrometer;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupState;
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
import io.hicache.core.DevicePagePool;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A scripted run on the simulated device (two committed backups, one aborted, one all-layer fallback, a device
 * eviction and a load back from host), then a Prometheus scrape: names, tags and values.
 */
class HiCacheMetricsBinderTest {
    static final int LAYERS = 4;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 64;
    static final int HOST_PAGES = 128;
    static final int BYTES_PER_TOKEN = 256;

    SimulatedCudaRuntime gpu;
    long kvBase;
    HiCache cache;
    /** The engine's device pages (scheduler thread). */
    final DevicePagePool pool = new DevicePagePool(DEVICE_PAGES);

    @BeforeEach
    void build() {
        gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(DEVICE_PAGES);
        kvBase = gpu.deviceMalloc(lb.packedBytes());
        cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build())
            .hostPages(HOST_PAGES).writePolicy(WritePolicy.WRITE_THROUGH).threadingMode(ThreadingMode.INVOKER)
            .clock(gpu::nowNs).leaseNs(0).build();
    }

    @AfterEach
    void close() {
        cache.close();
        gpu.deviceFree(kvBase);
        gpu.close();
    }

    @Test
    void prometheusScrapeShowsTheScriptedRun() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        HiCacheMetricsBinder.monitor(registry, cache, "engine", "model", "toy");

        List<BackupHandle> first = prefill(tokens(0, 96));               // 6 pages, committed
        List<BackupHandle> cancelled = reserve(tokens(1000, 32));         // 2 pages, aborted before its forward
        assertThat(cache.abort(cancelled.getFirst(), AbortReason.ENGINE)).isTrue();
        cache.declareHooksUnavailable("cuda graph");
        List<BackupHandle> graphed = prefill(tokens(2000, 32));          // 2 pages, copied after the forward
        assertThat(first).hasSize(1).allMatch(b -> b.state() == BackupState.COMMITTED);
        assertThat(graphed).hasSize(1).allMatch(b -> b.state() == BackupState.COMMITTED);
        assertThat(cancelled.getFirst().state()).isEqualTo(BackupState.ABORTED);

        // the device needs room: all 10 pages are evicted (the aborted request's 2 without a host copy), the host
        // copies remain; a prefix comes back from host
        assertThat(cache.evictDevice(DEVICE_PAGES, pool)).isEqualTo(10);
        MatchResult match = cache.match(tokens(0, 64), 0, 64, new MatchResult());
        assertThat(match.deviceTokenCount()).isZero();
        assertThat(match.hostTokenCount()).isEqualTo(64);
        LoadHandle load = cache.loadBack(match, 7, 1 << 20, pool);
        cache.startLoading();
        run(() -> load.state() == LoadHandle.State.LOADED);
        assertThat(cache.match(tokens(0, 64), 0, 64, match).deviceTokenCount()).isEqualTo(64);

        Map<String, Double> scrape = parse(registry.scrape());
        long pageBytes = (long) PAGE * BYTES_PER_TOKEN * 2; // K and V
        assertThat(scrape)
            .containsEntry(k("hicache_backup_reserved_total"), 3.0)
            .containsEntry(k("hicache_backup_committed_total"), 2.0)
            .containsEntry(k("hicache_backup_aborted_total", "reason=\"engine\""), 1.0)
            .containsEntry(k("hicache_backup_aborted_total", "reason=\"cuda_error\""), 0.0)
            .containsEntry(k("hicache_backup_no_room_total"), 0.0)
            .containsEntry(k("hicache_backup_fallback_total", "reason=\"hooks_unavailable\""), 1.0)
            .containsEntry(k("hicache_backup_fallback_total", "reason=\"configured\""), 0.0)
            .containsEntry(k("hicache_tokens_served_total", "tier=\"device\""), 64.0)
            .containsEntry(k("hicache_tokens_served_total", "tier=\"host\""), 64.0)
            .containsEntry(k("hicache_d2h_copied_bytes_total", "kv=\"target\""), (double) 8 * LAYERS * pageBytes)
            .containsEntry(k("hicache_d2h_copied_bytes_total", "kv=\"draft\""), 0.0)
            .containsEntry(k("hicache_h2d_copied_bytes_total"), (double) 4 * LAYERS * pageBytes)
            .containsEntry(k("hicache_load_started_total"), 1.0)
            .containsEntry(k("hicache_load_completed_total"), 1.0)
            .containsEntry(k("hicache_load_failed_total"), 0.0)
            .containsEntry(k("hicache_host_capacity_pages"), (double) HOST_PAGES)
            .containsEntry(k("hicache_cp_group_degraded"), 0.0)
            .containsEntry(k("hicache_cp_failed_ranks"), 0.0)
            .containsEntry(k("hicache_cp_divergences_total"), 0.0)
            .containsEntry(k("hicache_cp_agreement_blocked_total"), 0.0)
            .containsEntry(k("hicache_cp_host_revoked_total"), 0.0)
            .containsEntry(k("hicache_host_used_pages"), (double) cache.hostPool().budgetUsedPages())
            .containsEntry(k("hicache_backup_commit_latency_seconds_count"), 2.0)
            .containsEntry(k("hicache_load_latency_seconds_count"), 1.0)
            .containsEntry(k("hicache_copies_issued_total", "direction=\"d2h\""),
                (double) cache.metrics().get(Metric.D2H_COPIES))
            .containsKeys(k("hicache_backup_exposed_seconds_total"),
                k("hicache_backup_commit_latency_max_seconds"),
                k("hicache_backup_commit_latency_percentile_seconds", "phi=\"0.99\""),
                k("hicache_copies_issued_total", "direction=\"h2d\""));
        assertThat(cache.hostPool().budgetUsedPages()).isEqualTo(8);
        assertThat(scrape.get(k("hicache_copies_issued_total", "direction=\"d2h\""))).isPositive();
        double p99 = scrape.get(k("hicache_backup_commit_latency_percentile_seconds", "phi=\"0.99\""));
        assertThat(p99).isPositive()
            .isEqualTo(cache.metrics().commitP99Ns() / 1e9)
            .isLessThanOrEqualTo(scrape.get(k("hicache_backup_commit_latency_max_seconds")));
        double max = scrape.get(k("hicache_backup_commit_latency_max_seconds"));
        assertThat(scrape.get(k("hicache_backup_commit_latency_seconds_sum"))).as("two commits: max <= sum <= 2 max")
            .isBetween(max, 2 * max);

        // bandwidth histograms: one sample per forward with backups (the aborted backup had no forward), one per load
        assertBandwidth(scrape, "hicache_backup_bandwidth", 2, cache.metricsView().backupBandwidth().sumGbps());
        assertBandwidth(scrape, "hicache_load_bandwidth", 1, cache.metricsView().loadBandwidth().sumGbps());
    }

    /** A bucket set with SGLang's bounds, cumulative, its +Inf bucket and count equal to {@code samples}. */
    private static void assertBandwidth(Map<String, Double> scrape, String name, int samples, double sumGbps) {
        List<String> bounds = List.of("0.1", "0.5", "1.0", "5.0", "10.0", "50.0", "100.0", "+Inf");
        double previous = 0;
        for (String le : bounds) {
            Double bucket = scrape.get(k(name + "_total", "le=\"" + le + "\""));
            assertThat(bucket).as(name + " le=" + le).isNotNull().isGreaterThanOrEqualTo(previous);
            previous = bucket;
        }
        assertThat(previous).as(name + " le=+Inf").isEqualTo(samples);
        assertThat(scrape).containsEntry(k(name + "_count_total"), (double) samples);
        assertThat(sumGbps).isPositive();
        assertThat(scrape.get(k(name + "_sum_total"))).isCloseTo(sumGbps, org.assertj.core.api.Assertions.within(1e-9));
    }

    @Test
    void theBinderDoesNotKeepTheControllerAlive() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        HiCache other = HiCache.builder().runtime(gpu)
            .targetLayout(DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
                .bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(DEVICE_PAGES).packedFrom(kvBase).build())
            .hostPages(8).threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs).leaseNs(0).build();
        HiCacheMetricsBinder.monitor(registry, other, "gone");
        assertThat(registry.get("hicache.host.capacity").tag("cache", "gone").gauge().value()).isEqualTo(8.0);
        other.close();
        WeakReference<HiCache> ref = new WeakReference<>(other);
        other = null;
        long deadlineNs = System.nanoTime() + 10_000_000_000L;
        while (ref.get() != null && System.nanoTime() < deadlineNs) {
            System.gc();
            Thread.onSpinWait();
        }
        assertThat(ref.get()).as("controller collected while its meters are registered").isNull();
        assertThat(registry.get("hicache.host.capacity").tag("cache", "gone").gauge().value()).isNaN();
    }

    private List<BackupHandle> reserve(int[] tokens) {
        int[] pages = new int[tokens.length / PAGE];
        assertThat(pool.allocate(pages.length, pages, 0)).isTrue();
        cache.insert(tokens, 0, tokens.length, pages, 0);
        List<BackupHandle> backups = new ArrayList<>();
        cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
        return backups;
    }

    /** One request's prefill: insert, reserve, a forward with per-layer hooks, then run until committed. */
    private List<BackupHandle> prefill(int[] tokens) {
        List<BackupHandle> backups = reserve(tokens);
        ForwardHooks hooks = cache.beginForward(backups);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(cache.computeStream(), 50_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        run(() -> backups.stream().allMatch(b -> b.state().terminal()));
        return backups;
    }

    /** The scheduler's duty cycle with the agents stepped in place, the device advanced between cycles. */
    private void run(BooleanSupplier done) {
        for (int i = 0; i < 10_000; i++) {
            cache.doAgentWork();
            cache.poll();
            if (done.getAsBoolean()) {
                return;
            }
            gpu.advanceToNextEvent();
        }
        throw new AssertionError("the scripted run did not finish");
    }

    /** The scrape key of a sample of this test's controller: its tags plus {@code extra}, sorted like {@link #parse}. */
    static String k(String name, String... extra) {
        List<String> labels = new ArrayList<>(List.of("cache=\"engine\"", "model=\"toy\"", "rank=\"0\""));
        labels.addAll(List.of(extra));
        return name + "{" + String.join(",", labels.stream().sorted().toList()) + "}";
    }

    private static final Pattern SAMPLE = Pattern.compile("^(\\w+)(?:\\{(.*)})? (\\S+)$");

    /** Prometheus text format to "name{sorted labels}" → value; comment lines skipped. */
    static Map<String, Double> parse(String text) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String line : text.split("\n")) {
            Matcher m = SAMPLE.matcher(line);
            if (line.startsWith("#") || !m.matches()) {
                continue;
            }
            String labels = m.group(2) == null ? "" : String.join(",",
                java.util.Arrays.stream(m.group(2).split(",(?=\\w+=\")")).sorted().toList());
            out.put(m.group(1) + (labels.isEmpty() ? "" : "{" + labels + "}"), Double.parseDouble(m.group(3)));
        }
        return out;
    }

    static int[] tokens(int start, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = start + i;
        }
        return t;
    }
}
