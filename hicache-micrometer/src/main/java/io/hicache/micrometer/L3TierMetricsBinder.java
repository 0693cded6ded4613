package io.hicache.micrometer;

import io.hicache.core.HiCache;
import io.hicache.storage.L3Tier;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierMetrics;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;

import java.lang.ref.WeakReference;
import java.util.Objects;

/**
 * Binds the metrics of an {@link L3Tier} (the L3 storage tier attached to a {@link HiCache}) to a Micrometer
 * {@link MeterRegistry}, beside the cache's own {@link HiCacheMetricsBinder}. Give both the same cache name and tags:
 * then {@code hicache.tokens.served} gains its {@code tier=storage} series next to {@code device} and {@code host}.
 *
 * <p>Like {@link HiCacheMetricsBinder}, it keeps only a {@link WeakReference} to the tier and registers function
 * meters that read the tier's live counters when the registry is scraped; nothing is added to the cache's paths.
 * Every meter carries the tags {@value HiCacheMetricsBinder#CACHE_TAG} and {@value HiCacheMetricsBinder#RANK_TAG}
 * plus the tags passed in.
 *
 * <p>Meters (function counters unless said otherwise):
 * <ul>
 *   <li>{@code hicache.tokens.served} with {@code tier=storage}: tokens prefetched from storage and published as
 *       host hits (the request's load of them to the device is not counted again under {@code tier=host}; a later
 *       load of the same pages, for another request, is);</li>
 *   <li>prefetch: {@code hicache.storage.prefetch.started}, {@code .requested} and {@code .published} (pages),
 *       {@code .terminated.early}, {@code .cancelled}, {@code .no.room}, {@code .not.contiguous},
 *       {@code .failed} (pages), {@code .refused}; {@code hicache.storage.read} (bytes) and
 *       {@code hicache.storage.read.time} (seconds of store reads, summed);</li>
 *   <li>write: {@code hicache.storage.write.submitted}, {@code .stored}, {@code .present}, {@code .failed} and
 *       {@code .dropped} (pages); {@code hicache.storage.written} (bytes) and {@code hicache.storage.write.time}
 *       (seconds of store writes, summed);</li>
 *   <li>bandwidth histograms, GB/s, on the buckets of the cache's own (SGLang's {@code prefetch_bandwidth} and
 *       {@code backup_bandwidth}): {@code hicache.storage.prefetch.bandwidth} (one sample per prefetch's store
 *       read) and {@code hicache.storage.backup.bandwidth} (one per write batch), each a counter per bucket (tag
 *       {@code le}, cumulative) with {@code .count} and {@code .sum};</li>
 *   <li>gauges: {@code hicache.storage.prefetch.in.flight} and {@code hicache.storage.write.in.flight} (queue
 *       depths), {@code hicache.storage.read.bandwidth} and {@code hicache.storage.write.bandwidth} (bytes per
 *       second of store time over the tier's life; per interval, divide the rates of the bytes and time
 *       counters, or read the histograms).</li>
 * </ul>
 *
 * <p>Thread-safety: construct and {@link #bindTo} from any thread (the tier's metrics are any-thread); the meters
 * may be read at any time, concurrently with the cache's threads.
 */
// L3Tier is in io.hicache.storage, an optional dependency (requires static): a caller that passes a tier reads it.
@SuppressWarnings("exports")
public final class L3TierMetricsBinder implements MeterBinder {
    private final WeakReference<L3Tier> tierRef;
    private final int pageSize;
    private final Tags tags;

    /**
     * A binder for {@code tier}, attached to {@code cache}.
     *
     * @param cache     the cache the tier is attached to (for its rank and page size; not retained)
     * @param tier      the tier whose metrics are bound (held weakly)
     * @param cacheName value of the {@value HiCacheMetricsBinder#CACHE_TAG} tag
     * @param tags      further tags on every meter
     * @throws NullPointerException if an argument is null
     */
    public L3TierMetricsBinder(HiCache cache, L3Tier tier, String cacheName, Iterable<Tag> tags) {
        Objects.requireNonNull(cache, "cache");
        Objects.requireNonNull(tier, "tier");
        Objects.requireNonNull(cacheName, "cacheName");
        Objects.requireNonNull(tags, "tags");
        this.tierRef = new WeakReference<>(tier);
        this.pageSize = cache.pageSize();
        this.tags = Tags.concat(tags, HiCacheMetricsBinder.CACHE_TAG, cacheName,
                HiCacheMetricsBinder.RANK_TAG, Integer.toString(cache.rank()));
    }

    /**
     * Binds {@code tier}'s metrics to {@code registry} and returns the tier.
     *
     * @param tags further tags as key/value pairs (an even number of strings)
     * @return {@code tier}
     */
    public static L3Tier monitor(MeterRegistry registry, HiCache cache, L3Tier tier, String cacheName, String... tags) {
        new L3TierMetricsBinder(cache, tier, cacheName, Tags.of(tags)).bindTo(registry);
        return tier;
    }

    /** Registers the meters; does nothing if the tier has already been garbage collected. */
    @Override
    public void bindTo(MeterRegistry registry) {
        L3Tier tier = tierRef.get();
        if (tier == null) {
            return;
        }
        StorageTierMetrics m = tier.metrics();
        long tokensPerPage = pageSize;
        FunctionCounter.builder("hicache.tokens.served", m,
                        x -> (double) x.get(StorageMetric.PREFETCH_PAGES_PUBLISHED) * tokensPerPage)
                .description("Prompt tokens served from a cache tier").tags(tags).tag("tier", "storage")
                .register(registry);
        for (StorageMetric metric : StorageMetric.values()) {
            Meter d = meter(metric);
            FunctionCounter.builder(d.name, m, x -> x.get(metric) * d.scale)
                    .description(d.description).baseUnit(d.unit).tags(tags).register(registry);
        }
        HiCacheMetricsBinder.bandwidthHistogram(registry, m, StorageTierMetrics::prefetchBandwidth,
                "hicache.storage.prefetch.bandwidth",
                "Store-read bandwidth per prefetch, GB/s (SGLang: prefetch_bandwidth)", tags);
        HiCacheMetricsBinder.bandwidthHistogram(registry, m, StorageTierMetrics::backupBandwidth,
                "hicache.storage.backup.bandwidth",
                "Store-write bandwidth per write batch, GB/s (SGLang: backup_bandwidth)", tags);
        Gauge.builder("hicache.storage.prefetch.in.flight", m, StorageTierMetrics::prefetchesInFlight)
                .description("Prefetches not yet ended").tags(tags).register(registry);
        Gauge.builder("hicache.storage.write.in.flight", m, StorageTierMetrics::writesInFlight)
                .description("Write batches not yet done").tags(tags).register(registry);
        Gauge.builder("hicache.storage.read.bandwidth", m, StorageTierMetrics::prefetchBytesPerSecond)
                .description("Bytes read per second of store read time, over the tier's life")
                .baseUnit("bytes.per.second").tags(tags).register(registry);
        Gauge.builder("hicache.storage.write.bandwidth", m, StorageTierMetrics::writeBytesPerSecond)
                .description("Bytes written per second of store write time, over the tier's life")
                .baseUnit("bytes.per.second").tags(tags).register(registry);
    }

    /** A counter's name, description, base unit and scale (nanosecond sums become seconds). */
    private record Meter(String name, String description, String unit, double scale) {
        Meter(String name, String description, String unit) {
            this(name, description, unit, 1);
        }
    }

    /** Every {@link StorageMetric} has its meter: a new metric does not compile until it is named here. */
    private static Meter meter(StorageMetric metric) {
        return switch (metric) {
            case PREFETCH_STARTED -> new Meter("hicache.storage.prefetch.started",
                    "Prefetches started (host pages leased)", null);
            case PREFETCH_PAGES_REQUESTED -> new Meter("hicache.storage.prefetch.requested",
                    "Pages prefetches asked for", "pages");
            case PREFETCH_PAGES_PUBLISHED -> new Meter("hicache.storage.prefetch.published",
                    "Prefetched pages published as host hits after every rank's part landed", "pages");
            case PREFETCH_BYTES -> new Meter("hicache.storage.read",
                    "Bytes read from storage into host pages", BaseUnits.BYTES);
            case PREFETCH_IO_NS -> new Meter("hicache.storage.read.time",
                    "Wall-clock time of store reads, submit to done, summed", "seconds", 1e-9);
            case PREFETCH_TERMINATED_EARLY -> new Meter("hicache.storage.prefetch.terminated.early",
                    "Prefetches whose request ran before every page landed", null);
            case PREFETCH_CANCELLED -> new Meter("hicache.storage.prefetch.cancelled",
                    "Prefetches cancelled by the engine", null);
            case PREFETCH_NO_ROOM -> new Meter("hicache.storage.prefetch.no.room",
                    "Prefetches not started: host share exhausted or no host room", null);
            case PREFETCH_NOT_CONTIGUOUS -> new Meter("hicache.storage.prefetch.not.contiguous",
                    "Prefetches not started: the match ends at a node without a committed host copy", null);
            case PREFETCH_FAILED_PAGES -> new Meter("hicache.storage.prefetch.failed",
                    "Prefetch pages whose read failed or was rejected", "pages");
            case PREFETCH_PUBLISH_REFUSED -> new Meter("hicache.storage.prefetch.refused",
                    "Prefetches the tree no longer accepted when they were published", null);
            case PREFETCH_PAGES_GONE -> new Meter("hicache.storage.prefetch.gone",
                    "Pages a prefetch's read found gone though the existence check had found them", "pages");
            case WRITE_PAGES_SUBMITTED -> new Meter("hicache.storage.write.submitted",
                    "Pages submitted for writing", "pages");
            case WRITE_PAGES_STORED -> new Meter("hicache.storage.write.stored",
                    "Pages the store committed", "pages");
            case WRITE_PAGES_PRESENT -> new Meter("hicache.storage.write.present",
                    "Pages not written because storage already had them", "pages");
            case WRITE_BYTES -> new Meter("hicache.storage.written",
                    "Bytes committed to storage", BaseUnits.BYTES);
            case WRITE_IO_NS -> new Meter("hicache.storage.write.time",
                    "Wall-clock time of store writes, submit to done, summed", "seconds", 1e-9);
            case WRITE_FAILED_PAGES -> new Meter("hicache.storage.write.failed",
                    "Pages whose write failed or was rejected", "pages");
            case WRITE_BACK_DROPPED_PAGES -> new Meter("hicache.storage.write.dropped",
                    "Write-back pages dropped because the staging area was full", "pages");
            case CORRUPT_PAGES -> new Meter("hicache.storage.corrupt",
                    "Pages a read found damaged in the store (rewritten by the next write of each)", "pages");
            case WRITE_PAGES_KNOWN -> new Meter("hicache.storage.write.known",
                    "Pages not written because the tier remembered them stored", "pages");
            case PREFETCH_CUT_BY_SHARE -> new Meter("hicache.storage.prefetch.cut",
                    "Prefetches cut short by the host share for prefetches", null);
            case KNOWN_KEYS_RESETS -> new Meter("hicache.storage.known.resets",
                    "Times the store reported a new epoch and remembered keys were dropped", null);
        };
    }
}
