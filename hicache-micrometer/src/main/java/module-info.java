/**
 * Micrometer meters for HiCache: {@link io.hicache.micrometer.HiCacheMetricsBinder} binds a
 * {@link io.hicache.core.HiCache}'s counters, latencies and host pool levels to a {@code MeterRegistry}, and
 * {@link io.hicache.micrometer.L3TierMetricsBinder} those of its L3 storage tier (needs {@code io.hicache.storage},
 * an optional dependency). Optional: the core library does not depend on Micrometer.
 */
module io.hicache.micrometer {
    requires transitive io.hicache.core;
    requires transitive micrometer.core;
    requires static io.hicache.storage;

    exports io.hicache.micrometer;
}
