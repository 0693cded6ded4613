/**
 * The engine-facing API of HiCache. An engine uses {@link io.hicache.core.HiCache} and nothing else of the
 * library's internals; everything it needs is in the packages exported by the module {@code io.hicache.core}:
 *
 * <ul>
 *   <li>{@link io.hicache.core.HiCache} — the cache of one rank: match/insert, lock/unlock of prefixes,
 *       reserve, beginForward, poll, abort, load-back, withdrawal of uncomputed pages, device eviction, metrics,
 *       read-only views
 *       ({@link io.hicache.core.TreeView}, {@link io.hicache.core.HostPoolView}) and close;
 *       configured through {@link io.hicache.core.HiCache.Builder}. For observing it (profilers, the simulator):
 *       live counters ({@code metric}), the backup and load streams, the tree's invariant check and the names of
 *       its Flight Recorder events.</li>
 *   <li>{@link io.hicache.core.CacheRequest} — one request's use of the cache ({@code HiCache.openRequest}): its
 *       matches, loads, inserts and backups, its served tokens by tier (counted once per request), its device lock,
 *       and its end ({@code finish}, or {@code cancel}, which withdraws what it never computed).</li>
 *   <li>Handles: {@link io.hicache.core.BackupHandle} (one node's backup), {@link io.hicache.core.ForwardHooks}
 *       (the per-layer hooks of one forward), {@link io.hicache.core.LoadHandle} (one request's load-back).</li>
 *   <li>Values: {@link io.hicache.core.BackupState}, {@link io.hicache.core.AbortReason},
 *       {@link io.hicache.core.BackupMode}, {@link io.hicache.core.WritePolicy},
 *       {@link io.hicache.core.ThreadingMode}.</li>
 *   <li>What the engine implements: {@link io.hicache.core.DevicePageAllocator} (its device page pool) and
 *       {@link io.hicache.core.DevicePageSink} ({@link io.hicache.core.DevicePagePool} is one, ready to use);
 *       optionally {@link io.hicache.core.BackupListener} and {@link io.hicache.core.LoadListener}.</li>
 *   <li>{@link io.hicache.core.memory}: the device KV layout ({@link io.hicache.core.memory.DeviceKvLayout},
 *       {@link io.hicache.core.memory.AttentionKind}, {@link io.hicache.core.memory.KvPageShape}) and host
 *       pool settings ({@link io.hicache.core.memory.HostLayout}, {@link io.hicache.core.memory.HostMemoryKind},
 *       {@link io.hicache.core.memory.InsufficientHostMemoryException}).</li>
 *   <li>{@link io.hicache.core.cp}: context-parallel groups ({@link io.hicache.core.cp.OwnerLanes},
 *       {@link io.hicache.core.cp.RankAgreement}, {@link io.hicache.core.cp.InProcessRankAgreement},
 *       {@link io.hicache.core.cp.GroupState}).</li>
 *   <li>{@link io.hicache.core.metrics}: {@link io.hicache.core.metrics.MetricsSnapshot} with
 *       {@link io.hicache.core.metrics.Metric} and {@link io.hicache.core.metrics.FallbackReason}.</li>
 *   <li>From {@code io.hicache.radix}: {@link io.hicache.radix.RadixNode} (read-only node handles),
 *       {@link io.hicache.radix.MatchResult}, {@link io.hicache.radix.EvictionPolicy}; from
 *       {@code io.hicache.cuda}: {@link io.hicache.cuda.CudaRuntime} and the simulated device.</li>
 * </ul>
 *
 * <p><b>Threads.</b> One scheduler thread owns a {@code HiCache}; the forward thread calls the
 * {@link io.hicache.core.ForwardHooks} hooks and {@code waitLayer}; the cache's own agents run on threads of
 * their own or are stepped by the caller ({@link io.hicache.core.ThreadingMode}). Each method's javadoc names
 * its thread and its failures.
 */
package io.hicache.core;
