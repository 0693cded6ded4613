/**
 * The HiCache simulator: replays request traces through the real controller on the simulated device and
 * reports hit rates, overlap and timelines. Its command line is {@code io.hicache.sim.cli.Main}.
 */
@SuppressWarnings("requires-automatic")
module io.hicache.sim {
    requires transitive io.hicache.core;
    // StorageOptions, in an exported package, names the storage policies
    requires transitive io.hicache.storage;
    // SimKvEvents, in an exported package, takes the events module's publisher
    requires transitive io.hicache.events;
    requires jdk.jfr;
    requires org.agrona;
    requires info.picocli;
    requires com.fasterxml.jackson.databind;
    requires me.tongfei.progressbar;

    exports io.hicache.sim;
    exports io.hicache.sim.engine;
    exports io.hicache.sim.model;
    exports io.hicache.sim.report;
    exports io.hicache.sim.trace;
    exports io.hicache.sim.cli;
    exports io.hicache.sim.convert;

    opens io.hicache.sim.cli to info.picocli;
    opens io.hicache.sim.report to com.fasterxml.jackson.databind;
}
