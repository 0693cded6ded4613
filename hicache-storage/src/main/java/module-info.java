/**
 * The L3 storage tier of HiCache: SGLang-compatible page keys ({@link io.hicache.storage.PageKeys},
 * {@link io.hicache.storage.KeyNamespace}), the batch zero-copy store SPI ({@link io.hicache.storage.PageStore})
 * and its backends, opened by location through {@link io.hicache.storage.PageStores}: {@code file:DIR} and
 * {@code redis://} / {@code rediss://} (Jedis).
 *
 * <p>An engine attaches the tier to its {@link io.hicache.core.HiCache} with
 * {@link io.hicache.storage.L3Tier#attach}: the cache's own calls then drive it (its {@code poll} advances writes
 * and prefetches, its {@code close} closes the tier first), and the engine calls only
 * {@link io.hicache.storage.L3Tier#prefetch} and the {@link io.hicache.storage.L3Prefetch} it returns. The tier's
 * configuration ({@link io.hicache.storage.StorageTierConfig}, {@link io.hicache.storage.StorageWritePolicy},
 * {@link io.hicache.storage.PrefetchPolicy}) and counters ({@link io.hicache.storage.StorageTierMetrics}) are here too.
 *
 * <p>Exported: {@code io.hicache.storage}; {@code io.hicache.storage.tier} (the {@code StorageTier} behind
 * {@code L3Tier}, constructed on the cache's storage port, and the in-memory {@code MemoryPageStore}) only to
 * the simulator, which attaches {@code L3Tier} like an engine and uses the tier package for its modelled store. Not exported: the backends ({@code io.hicache.storage.file}, {@code io.hicache.storage.redis}) and the
 * shared machinery ({@code io.hicache.storage.internal}).
 */
// "module": io.hicache.sim, the target of the qualified export below, is built after this module
@SuppressWarnings("module")
module io.hicache.storage {
    requires transitive io.hicache.core;
    requires redis.clients.jedis;
    requires org.apache.commons.pool2;
    requires org.slf4j;
    // ExtendedOpenOption.DIRECT (O_DIRECT) of the file backend
    requires jdk.unsupported;

    exports io.hicache.storage;
    // the simulator's modelled store (MemoryPageStore) lives here; engines get the tier only through L3Tier
    exports io.hicache.storage.tier to io.hicache.sim;
}
