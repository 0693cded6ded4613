/**
 * The paged radix tree of cached token prefixes with device and host tiers.
 *
 * <p>Exported: {@code io.hicache.radix} (the tree, its nodes as read-only handles, match results, eviction
 * policies). {@code io.hicache.radix.spi} (the values and listeners the cache plugs into the tree) is exported
 * only to the modules that implement or read them; {@code io.hicache.events} reads a node's token storage through
 * {@code RadixNode.readKeyTokens} and the SPI's {@code KeyTokensReader}. The module opens nothing.
 */
// Qualified exports may name modules that are not part of every build.
@SuppressWarnings("module")
module io.hicache.radix {
    exports io.hicache.radix;
    // io.hicache.events: the KV-event publisher's thread reads a node's key tokens where the node keeps them
    // (KeyTokensReader) instead of the scheduler copying each page.
    exports io.hicache.radix.spi to io.hicache.core, io.hicache.sim, io.hicache.storage, io.hicache.events;
}
