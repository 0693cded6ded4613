/**
 * The HiCache simulator: replays request traces through the real controller on the simulated device and
 * reports hit rates, overlap and timelines. Its command line is {@code io.hicache.sim.cli.Main}.
 *
 * <p>Exported: what a program that runs simulations from Java needs, and nothing else:
 * {@code io.hicache.sim} (the configuration {@code SimConfig}, {@code ServingConfig} and {@code StorageOptions}, the
 * {@code SimulationEngine} interface, its factories and the cache-only engine), {@code io.hicache.sim.engine} (the
 * timed {@code ServingEngine}, also as the profiled engine, and {@code SimKvEvents}, which attaches a KV-event
 * publisher), {@code io.hicache.sim.model} (model and GPU presets, and the {@code EngineProfile} measured on a serving
 * engine), {@code io.hicache.sim.trace} (trace sources and readers, the {@code TokenExpander} and the {@code VocabRemap}
 * that turns its tokens into an engine's vocabulary for a client replaying a trace) and {@code io.hicache.sim.report}
 * (the results and their JSON and HTML reports). Not exported: {@code io.hicache.sim.cli} (the command line, opened
 * to picocli only; launched, never linked) and {@code io.hicache.sim.convert} (the {@code convert} command's log
 * converters and tokenizers).
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

    opens io.hicache.sim.cli to info.picocli;
    opens io.hicache.sim.report to com.fasterxml.jackson.databind;
}
