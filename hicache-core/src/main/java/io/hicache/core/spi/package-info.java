/**
 * The storage SPI: what a lower storage tier may do with one cache, for the modules that implement such a tier
 * (today {@code io.hicache.storage}; this package is exported to it alone, not to engines).
 *
 * <ul>
 *   <li>{@link io.hicache.core.spi.StoragePort}: the port a tier attaches through ({@link
 *       io.hicache.core.HiCache#storagePort()}): the cache's geometry, its host pages' bytes, the committed path's
 *       pages and hashes, host protection, prefetch leases and what they insert, host commits and evictions, the
 *       tier listener the tier reports its L3 transitions to, and the attachment the cache's own calls drive.
 *       Core implements it and checks every call; the tree is never handed out, so its invariants stay core's.</li>
 *   <li>{@link io.hicache.core.spi.TierBandwidth}: a transfer-bandwidth histogram on the cache's own buckets, so a
 *       tier's store reads and writes line up with the cache's backups and loads.</li>
 *   <li>{@link io.hicache.core.spi.DistinctErrorLog}: the project's distinct-error log, so a tier's failures log
 *       like the cache's own (once, then at 10, 100, ... occurrences).</li>
 * </ul>
 *
 * <p>Each type's javadoc states its threads and failures. Nothing here is engine-facing API: an engine attaches the
 * L3 tier with {@code io.hicache.storage.L3Tier#attach} and never names these types.
 */
package io.hicache.core.spi;
