/**
 * Shared test fixtures for HiCache's modules, used with test scope only (production code never depends on it):
 * {@link io.hicache.testkit.ProbeModule} (compiles a small engine module against the library's modules to test the
 * module boundary), {@link io.hicache.testkit.SimKv} (a KV area on a simulated device) and
 * {@link io.hicache.testkit.RankAgreementConformance} (the conformance kit every {@code RankAgreement} runs, with
 * {@link io.hicache.testkit.RankAgreementConformanceSuite} as its JUnit 5 face); the device page pool the tests use is
 * the library's own {@link io.hicache.core.DevicePagePool}. hicache-core's own tests cannot use the kit: it builds on
 * hicache-core.
 */
module io.hicache.testkit {
    requires transitive io.hicache.core;
    requires java.compiler;
    requires static transitive org.junit.jupiter.api;

    exports io.hicache.testkit;
}
