/**
 * The L3 storage tier of HiCache: SGLang-compatible page keys ({@link io.hicache.storage.PageKeys},
 * {@link io.hicache.storage.KeyNamespace}), the batch zero-copy store SPI ({@link io.hicache.storage.PageStore})
 * and its backends, opened by location through {@link io.hicache.storage.PageStores}: {@code file:DIR} and
 * {@code redis://} / {@code rediss://} (Jedis).
 *
 * <p>Exported: {@code io.hicache.storage}; {@code io.hicache.storage.tier} (the {@code StorageTier} that sits on the
 * core-internal controller: write policies, prefetch, group agreement) only to the simulator. Not exported: the backends ({@code io.hicache.storage.file},
 * {@code io.hicache.storage.redis}) and the shared machinery ({@code io.hicache.storage.internal}).
 */
module io.hicache.storage {
    requires transitive io.hicache.core;
    requires redis.clients.jedis;
    requires org.apache.commons.pool2;
    requires org.slf4j;
    // ExtendedOpenOption.DIRECT (O_DIRECT) of the file backend
    requires jdk.unsupported;

    exports io.hicache.storage;
    // the tier sits on the core-internal controller: exported, like core's internals, to the project's modules
    exports io.hicache.storage.tier to io.hicache.sim;
}
