/**
 * HiCache: a hierarchical KV cache with layer-wise, commit-on-ack host backup for JVM LLM serving engines.
 *
 * <p>Exported (the engine-facing API; see {@link io.hicache.core.HiCache}):
 * {@code io.hicache.core}, {@code io.hicache.core.memory} (KV layouts), {@code io.hicache.core.cp}
 * (context-parallel groups) and {@code io.hicache.core.metrics} (counters and their snapshot).
 *
 * <p>Everything under {@code io.hicache.core.internal} (the controller, its agents, host pools, copy planning,
 * the mutable metrics, the JDK Flight Recorder events) is internal and exported to no module. The storage tier alone
 * gets the storage SPI ({@code io.hicache.core.spi}): the port it attaches through, a bandwidth histogram and the
 * distinct-error log. The Flight Recorder events are named
 * {@code io.hicache.*}; a recording enables them by name ({@link io.hicache.core.HiCache#flightRecorderEventNames()}).
 */
// Qualified exports may name modules that are not part of every build; Agrona is an automatic module with
// a stable name, re-exported because HiCache.Builder takes an IdleStrategy.
@SuppressWarnings({"module", "requires-automatic", "requires-transitive-automatic"})
module io.hicache.core {
    requires transitive io.hicache.cuda;
    requires transitive io.hicache.radix;
    requires transitive org.agrona;
    requires org.jctools.core;
    // JCTools' queues and Agrona use sun.misc.Unsafe; JCTools' descriptor asks for jdk.unsupported only with
    // "requires static", which does not resolve it, so an engine on the module path needs this to be enough
    requires jdk.unsupported;
    requires org.slf4j;
    requires java.management;
    requires jdk.management;
    requires jdk.jfr;

    exports io.hicache.core;
    exports io.hicache.core.cp;
    exports io.hicache.core.memory;
    exports io.hicache.core.metrics;

    // No internal package is exported. The storage SPI goes only to the module that implements a storage tier; the
    // simulator, the Micrometer binder and the KV-event publisher use the exported API (HiCache.metricsView(),
    // HiCache.tierListener(...)), as an engine does.
    exports io.hicache.core.spi to io.hicache.storage;
}
