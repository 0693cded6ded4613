/**
 * HiCache's CP agreement across processes: a {@link io.hicache.core.cp.RankAgreement} over Aeron (IPC on a host,
 * UDP across hosts on a trusted network) with epoch-numbered rounds, timeouts and elections, and the
 * {@code cp-cluster} tool. Exports {@code io.hicache.aeron}; {@code io.hicache.aeron.cluster} holds the tool.
 */
module io.hicache.aeron {
    requires transitive io.hicache.core;
    requires transitive io.aeron.client;
    // EmbeddedDriver.launch returns the driver's MediaDriver
    requires transitive io.aeron.driver;
    requires com.fasterxml.jackson.databind;

    exports io.hicache.aeron;
    exports io.hicache.aeron.cluster;
}
