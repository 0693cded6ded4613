/**
 * The paged radix tree of cached token prefixes with device and host tiers.
 *
 * <p>Exported: {@code io.hicache.radix} (the tree, its nodes as read-only handles, match results, eviction
 * policies). {@code io.hicache.radix.spi} (the values and listeners the cache plugs into the tree) is exported
 * only to the modules that implement them. {@code io.hicache.events} may read a node's token storage reflectively
 * (a qualified {@code opens}).
 */
// Qualified exports may name modules that are not part of every build.
@SuppressWarnings("module")
module io.hicache.radix {
    exports io.hicache.radix;
    exports io.hicache.radix.spi to io.hicache.core, io.hicache.sim, io.hicache.storage;
    // The KV-event publisher's thread reads a node's key tokens where the node keeps them (written once when the
    // node is created, shared by split fragments, never written again) instead of the scheduler copying each page.
    opens io.hicache.radix to io.hicache.events;
}
