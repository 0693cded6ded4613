/**
 * Micrometer meters for HiCache: {@link io.hicache.micrometer.HiCacheMetricsBinder} binds a
 * {@link io.hicache.core.HiCache}'s counters, latencies and host pool levels to a {@code MeterRegistry}.
 * Optional: the core library does not depend on Micrometer.
 */
module io.hicache.micrometer {
    requires transitive io.hicache.core;
    requires transitive micrometer.core;

    exports io.hicache.micrometer;
}
