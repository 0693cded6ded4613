/**
 * Shared test fixtures for HiCache's modules, used with test scope only (production code never depends on it):
 * {@link io.hicache.testkit.ProbeModule} (compiles a small engine module against the library's modules to test the
 * module boundary) and {@link io.hicache.testkit.SimKv} (a KV area on a simulated device); the device page pool the
 * tests use is the library's own {@link io.hicache.core.DevicePagePool}. hicache-core's own tests cannot use the kit: it
 * builds on hicache-core.
 */
module io.hicache.testkit {
    requires transitive io.hicache.core;
    requires java.compiler;

    exports io.hicache.testkit;
}
