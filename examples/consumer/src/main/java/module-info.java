/**
 * An engine built against HiCache's exported API only: compiled on the module path, so naming an internal type
 * (anything under {@code io.hicache.core.internal}) fails to compile here.
 */
module io.hicache.examples.consumer {
    requires io.hicache.core;
    requires io.hicache.micrometer;
    requires micrometer.registry.prometheus;

    exports io.hicache.examples.consumer;
}
