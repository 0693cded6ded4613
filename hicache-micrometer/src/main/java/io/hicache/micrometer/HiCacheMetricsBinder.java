package io.hicache.micrometer;

import io.hicache.core.AbortReason;
import io.hicache.core.HiCache;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

import java.lang.ref.WeakReference;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;
import java.util.function.ToLongFunction;

/**
 * Binds one {@link HiCache}'s metrics to a Micrometer {@link MeterRegistry}.
 *
 * <p>Shaped like Micrometer's own cache binders: the binder keeps only a {@link WeakReference} to the cache,
 * and every meter is a function meter ({@link FunctionCounter}, {@link FunctionTimer}, {@link Gauge},
 * {@link TimeGauge}) that reads the cache's live lock-free counters through its public read-only view
 * ({@link HiCache#metricsView()}) when the registry is scraped (no snapshot is allocated), so binding adds nothing to
 * the cache's hot paths and a closed, unreachable cache is not kept alive (its meters then report {@code NaN}; a
 * closed cache still reachable reports its final values). Every meter carries the tags {@value #CACHE_TAG} (the name given here) and
 * {@value #RANK_TAG} (the cache's CP rank), plus the tags passed in.
 *
 * <p>Meters, named dot-separated in lower case, in base units (a Prometheus registry renders
 * {@code hicache.backup.committed} as {@code hicache_backup_committed_total}):
 * <ul>
 *   <li>{@code hicache.backup.reserved}, {@code hicache.backup.committed}, {@code hicache.backup.aborted}
 *       (tag {@code reason}: every {@link AbortReason}), {@code hicache.backup.no.room} (reservations refused
 *       for want of host pages), {@code hicache.backup.fallback} (tag {@code reason}: every
 *       {@link FallbackReason}), {@code hicache.backup.exposed} (seconds of copy time not hidden behind the
 *       forward), {@code hicache.forwards.sealed}, {@code hicache.cuda.errors} — function counters;</li>
 *   <li>{@code hicache.d2h.copied} (bytes, tag {@code kv}: {@code target}, {@code draft}) and
 *       {@code hicache.h2d.copied} (bytes); {@code hicache.copies.issued} (tag {@code direction}:
 *       {@code d2h}, {@code h2d}) — function counters;</li>
 *   <li>{@code hicache.load.started}, {@code hicache.load.completed}, {@code hicache.load.failed},
 *       {@code hicache.load.refused} — function counters;</li>
 *   <li>{@code hicache.tokens.served} (tag {@code tier}: {@code device} for prompt tokens found on the device,
 *       {@link io.hicache.core.metrics.Metric#DEVICE_HIT_TOKENS}, once per request through a
 *       {@link io.hicache.core.CacheRequest}; {@code host} for tokens a request's load brought back from host memory,
 *       {@link io.hicache.core.metrics.Metric#HOST_HIT_TOKENS}) — function counters; an attached L3 storage tier adds
 *       {@code tier=storage} and its own meters through {@link L3TierMetricsBinder}, and a token is counted on one
 *       tier only (the first load of a prefetched page is the storage tier's);</li>
 *   <li>{@code hicache.backup.commit.latency} (the last layer stored to the commit) and
 *       {@code hicache.load.latency} (a load's issue to its copies' completion) — function timers from the
 *       cache's latency histograms, each with a {@code .max} time gauge and {@code .percentile} time
 *       gauges tagged {@code phi} (0.5, 0.99), as Micrometer names its own percentile gauges;</li>
 *   <li>{@code hicache.host.used} and {@code hicache.host.capacity} (pages of the host budget) — gauges;</li>
 *   <li>{@code hicache.cp.group.degraded} (1 once the CP group is degraded, see {@link HiCache#groupState()}) and
 *       {@code hicache.cp.failed.ranks} — gauges; {@code hicache.cp.divergences} (the ranks' fingerprints or commit
 *       digests differed), {@code hicache.cp.agreement.blocked} ({@code poll()} calls the watchdog found blocked inside
 *       the agreement) and {@code hicache.cp.host.revoked} (host values withdrawn because another rank did not commit
 *       them) — function counters;</li>
 *   <li>{@code hicache.backup.bandwidth} (device to host, one sample per forward with backups) and
 *       {@code hicache.load.bandwidth} (host to device, one sample per load batch) — transfer bandwidth histograms
 *       in GB/s with SGLang's buckets, as a set of function counters: one per bucket, tagged {@code le} with the
 *       bucket's upper bound as Prometheus writes it ({@code 0.1}, {@code 0.5}, {@code 1.0}, {@code 5.0},
 *       {@code 10.0}, {@code 50.0}, {@code 100.0}, {@code +Inf}) and counting the samples at or below it
 *       (cumulative, as a histogram's {@code _bucket} series), plus {@code .count} and {@code .sum} (GB/s summed).
 *       A Prometheus registry renders them {@code hicache_backup_bandwidth_total{le="..."}}: {@code
 *       histogram_quantile(0.5, sum by (le) (rate(hicache_backup_bandwidth_total[5m])))} is the median.</li>
 * </ul>
 *
 * <p>Thread-safety: {@link #bindTo} may be called from any thread, once per registry; the meters may be read
 * from any thread at any time (the registry's), concurrently with the cache's threads: each reads a value that one
 * cache thread writes, racily but safely (see {@link MetricsSnapshot.View}).
 */
public final class HiCacheMetricsBinder implements MeterBinder {
    /** Tag naming the cache, as in Micrometer's cache binders. */
    public static final String CACHE_TAG = "cache";
    /** Tag carrying the cache's rank in its CP group. */
    public static final String RANK_TAG = "rank";

    private static final double[] PERCENTILES = {0.5, 0.99};
    /** Prometheus' name of the bucket label of a histogram. */
    private static final String LE_TAG = "le";

    private final WeakReference<HiCache> cacheRef;
    private final Tags tags;

    /**
     * A binder for {@code cache}.
     *
     * @param cache     the cache whose metrics are bound (held weakly)
     * @param cacheName value of the {@value #CACHE_TAG} tag
     * @param tags      further tags on every meter
     * @throws NullPointerException if an argument is null
     */
    public HiCacheMetricsBinder(HiCache cache, String cacheName, Iterable<Tag> tags) {
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(cacheName, "cacheName");
        Objects.requireNonNull(tags, "tags");
        this.cacheRef = new WeakReference<>(cache);
        this.tags = Tags.concat(tags, CACHE_TAG, cacheName, RANK_TAG, Integer.toString(cache.rank()));
    }

    /**
     * Binds {@code cache}'s metrics to {@code registry} and returns the cache, like Micrometer's
     * {@code CaffeineCacheMetrics.monitor}.
     *
     * @param registry  where the meters are registered
     * @param cache     the cache to monitor (held weakly)
     * @param cacheName value of the {@value #CACHE_TAG} tag
     * @param tags      further tags as key/value pairs (an even number of strings)
     * @return {@code cache}
     */
    public static HiCache monitor(MeterRegistry registry, HiCache cache, String cacheName, String... tags) {
        new HiCacheMetricsBinder(cache, cacheName, Tags.of(tags)).bindTo(registry);
        return cache;
    }

    /**
     * Registers the meters; does nothing if the cache has already been garbage collected.
     *
     * @param registry where the meters are registered
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        HiCache cache = cacheRef.get();
        if (cache == null) {
            return;
        }
        // The meters hold the live view weakly, as Micrometer's function meters do; the cache owns it (one object for
        // its life), so it lives as long as the cache.
        MetricsSnapshot.View m = cache.metricsView();

        counter(registry, m, "hicache.backup.reserved", "Backups reserved", Metric.BACKUPS_RESERVED);
        counter(registry, m, "hicache.backup.committed", "Backups committed: published as host hits on every rank",
            Metric.BACKUPS_COMMITTED);
        for (AbortReason reason : AbortReason.values()) {
            FunctionCounter.builder("hicache.backup.aborted", m, x -> x.abortedBy(reason))
                .description("Backups aborted, never published")
                .tags(tags).tag("reason", tagValue(reason))
                .register(registry);
        }
        counter(registry, m, "hicache.backup.no.room",
            "Reservations refused: no host room after one host eviction", Metric.RESERVE_NO_ROOM);
        for (FallbackReason reason : FallbackReason.values()) {
            FunctionCounter.builder("hicache.backup.fallback", m, x -> x.fallbacksBy(reason))
                .description("Forwards whose backups copied all layers after the forward")
                .tags(tags).tag("reason", tagValue(reason))
                .register(registry);
        }
        FunctionCounter.builder("hicache.backup.exposed", m, x -> x.get(Metric.EXPOSED_BACKUP_NS) / 1e9)
            .description("Backup copy time not hidden behind the forward")
            .baseUnit("seconds").tags(tags).register(registry);
        counter(registry, m, "hicache.forwards.sealed", "Forwards whose backup copies were all submitted",
            Metric.FORWARDS_SEALED);
        counter(registry, m, "hicache.cuda.errors", "CUDA errors seen by the cache", Metric.CUDA_ERRORS);
        FunctionCounter.builder("hicache.host.evicted", m, x -> x.get(Metric.HOST_PAGES_EVICTED))
            .description("Host pages freed by host eviction")
            .baseUnit("pages").tags(tags).register(registry);

        bytes(registry, m, "hicache.d2h.copied", "KV bytes copied device to host", Metric.D2H_TARGET_BYTES,
            Tags.of("kv", "target"));
        bytes(registry, m, "hicache.d2h.copied", "KV bytes copied device to host", Metric.D2H_DRAFT_BYTES,
            Tags.of("kv", "draft"));
        bytes(registry, m, "hicache.h2d.copied", "KV bytes copied host to device (loads)", Metric.H2D_BYTES,
            Tags.empty());
        FunctionCounter.builder("hicache.copies.issued", m, x -> x.get(Metric.D2H_COPIES))
            .description("Copy calls issued after coalescing").tags(tags).tag("direction", "d2h")
            .register(registry);
        FunctionCounter.builder("hicache.copies.issued", m, x -> x.get(Metric.H2D_COPIES))
            .description("Copy calls issued after coalescing").tags(tags).tag("direction", "h2d")
            .register(registry);

        counter(registry, m, "hicache.load.started", "Loads issued host to device", Metric.LOADS_STARTED);
        counter(registry, m, "hicache.load.completed", "Loads whose pages became device hits",
            Metric.LOADS_COMPLETED);
        counter(registry, m, "hicache.load.failed", "Loads that failed and were rolled back", Metric.LOADS_FAILED);
        counter(registry, m, "hicache.load.refused", "Loads refused for want of device pages",
            Metric.LOADS_REFUSED);

        FunctionCounter.builder("hicache.tokens.served", m, x -> x.get(Metric.DEVICE_HIT_TOKENS))
            .description("Prompt tokens served from a cache tier").tags(tags).tag("tier", "device")
            .register(registry);
        FunctionCounter.builder("hicache.tokens.served", m, x -> x.get(Metric.HOST_HIT_TOKENS))
            .description("Prompt tokens served from a cache tier").tags(tags).tag("tier", "host")
            .register(registry);

        latency(registry, m, "hicache.backup.commit.latency", "From the last layer stored to the commit",
            MetricsSnapshot.View::commitLatency);
        latency(registry, m, "hicache.load.latency", "From a load's issue to its copies' completion",
            MetricsSnapshot.View::loadLatency);
        bandwidth(registry, m, "hicache.backup.bandwidth",
            "Device-to-host bandwidth per forward with backups, GB/s (SGLang: backup_bandwidth)",
            MetricsSnapshot.View::backupBandwidth);
        bandwidth(registry, m, "hicache.load.bandwidth",
            "Host-to-device bandwidth per load batch, GB/s (SGLang: prefetch_bandwidth, for its storage tier)",
            MetricsSnapshot.View::loadBandwidth);

        Gauge.builder("hicache.host.used", m, x -> x.get(Metric.HOST_PAGES_USED))
            .description("Host pages held by reserved and committed backups")
            .baseUnit("pages").tags(tags).register(registry);
        Gauge.builder("hicache.host.capacity", m, x -> x.get(Metric.HOST_PAGES_CAPACITY))
            .description("Host pages the host budget allows")
            .baseUnit("pages").tags(tags).register(registry);
        Gauge.builder("hicache.cp.group.degraded", m, x -> x.get(Metric.CP_GROUP_DEGRADED))
            .description("1 once the CP group is degraded (a rank failed, the ranks diverged, the agreement timed out)")
            .tags(tags).register(registry);
        Gauge.builder("hicache.cp.failed.ranks", m, x -> x.get(Metric.CP_FAILED_RANKS))
            .description("Ranks of the CP group declared failed or gone").tags(tags).register(registry);
        counter(registry, m, "hicache.cp.divergences", "CP groups found diverged: fingerprints or commit digests differed",
            Metric.CP_DIVERGENCES);
        counter(registry, m, "hicache.cp.agreement.blocked",
            "poll() calls blocked inside the RankAgreement past the watchdog's bound", Metric.CP_AGREEMENT_BLOCKED);
        counter(registry, m, "hicache.cp.host.revoked",
            "Host values withdrawn after commit: another rank of the group did not commit them", Metric.CP_HOST_REVOKED);
        bindSglangAligned(registry, m, cache.pageSize());
    }

    /**
     * The same quantities in tokens under SGLang's HiCache names (Prometheus {@code hicache_host_used_tokens} for
     * SGLang's {@code sglang:hicache_host_used_tokens}, and so on; see docs/DASHBOARD.md), so dashboards and alerts
     * written for SGLang carry over by changing the prefix.
     */
    private void bindSglangAligned(MeterRegistry registry, MetricsSnapshot.View m, int pageSize) {
        Gauge.builder("hicache.host.used.tokens", m, x -> (double) x.get(Metric.HOST_PAGES_USED) * pageSize)
            .description("Host KV tokens held by reserved and committed backups (SGLang: hicache_host_used_tokens)")
            .tags(tags).register(registry);
        Gauge.builder("hicache.host.total.tokens", m, x -> (double) x.get(Metric.HOST_PAGES_CAPACITY) * pageSize)
            .description("Host KV tokens the host budget allows (SGLang: hicache_host_total_tokens)")
            .tags(tags).register(registry);
        FunctionCounter.builder("hicache.load.back.tokens", m, x -> x.get(Metric.LOAD_TOKENS))
            .description("Tokens loaded host to device (SGLang: load_back_tokens_total)").tags(tags).register(registry);
        FunctionCounter.builder("hicache.cached.tokens", m, x -> x.get(Metric.DEVICE_HIT_TOKENS))
            .description("Prompt tokens served from the cache, by tier (SGLang: cached_tokens_total)")
            .tags(tags).tag("cache_source", "device").register(registry);
        FunctionCounter.builder("hicache.cached.tokens", m, x -> x.get(Metric.HOST_HIT_TOKENS))
            .description("Prompt tokens served from the cache, by tier (SGLang: cached_tokens_total)")
            .tags(tags).tag("cache_source", "host").register(registry);
    }

    private void counter(MeterRegistry registry, MetricsSnapshot.View m, String name, String description, Metric metric) {
        FunctionCounter.builder(name, m, x -> x.get(metric)).description(description).tags(tags).register(registry);
    }

    private void bytes(MeterRegistry registry, MetricsSnapshot.View m, String name, String description, Metric metric,
                       Tags extra) {
        FunctionCounter.builder(name, m, x -> x.get(metric)).description(description).baseUnit(BaseUnits.BYTES)
            .tags(tags).tags(extra).register(registry);
    }

    private void latency(MeterRegistry registry, MetricsSnapshot.View m, String name, String description,
                         Function<MetricsSnapshot.View, MetricsSnapshot.LatencyView> histogram) {
        ToLongFunction<MetricsSnapshot.View> count = x -> histogram.apply(x).count();
        ToDoubleFunction<MetricsSnapshot.View> sum = x -> histogram.apply(x).sumNs();
        FunctionTimer.builder(name, m, count, sum, TimeUnit.NANOSECONDS)
            .description(description).tags(tags).register(registry);
        TimeGauge.builder(name + ".max", m, TimeUnit.NANOSECONDS, x -> histogram.apply(x).maxNs())
            .description(description + ": the largest").tags(tags).register(registry);
        for (double phi : PERCENTILES) {
            TimeGauge.builder(name + ".percentile", m, TimeUnit.NANOSECONDS, x -> histogram.apply(x).quantileNs(phi))
                .description(description + ": percentile").tags(tags).tag("phi", Double.toString(phi))
                .register(registry);
        }
    }

    private void bandwidth(MeterRegistry registry, MetricsSnapshot.View m, String name, String description,
                           Function<MetricsSnapshot.View, MetricsSnapshot.BandwidthView> histogram) {
        bandwidthHistogram(registry, m, histogram, name, description, tags);
    }

    /**
     * A bandwidth histogram as function counters: one per bucket (tag {@value #LE_TAG}, cumulative), its count and
     * its sum, each read from the live histogram of {@code source} on a scrape. Shared with
     * {@link L3TierMetricsBinder}, so every transfer histogram has the same shape.
     */
    static <T> void bandwidthHistogram(MeterRegistry registry, T source,
                                       Function<T, MetricsSnapshot.BandwidthView> histogram, String name,
                                       String description, Tags tags) {
        MetricsSnapshot.BandwidthView h = histogram.apply(source);
        for (int i = 0; i < h.buckets(); i++) {
            int bucket = i;
            double bound = h.upperBound(i);
            FunctionCounter.builder(name, source, x -> histogram.apply(x).cumulativeCount(bucket))
                .description(description + ": samples at or below the bound")
                .tags(tags).tag(LE_TAG, Double.isInfinite(bound) ? "+Inf" : Double.toString(bound))
                .register(registry);
        }
        FunctionCounter.builder(name + ".count", source, x -> histogram.apply(x).count())
            .description(description + ": samples").tags(tags).register(registry);
        FunctionCounter.builder(name + ".sum", source, x -> histogram.apply(x).sumGbps())
            .description(description + ": samples summed (GB/s)").tags(tags).register(registry);
    }

    private static String tagValue(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}
