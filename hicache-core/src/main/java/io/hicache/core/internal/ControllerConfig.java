package io.hicache.core.internal;

import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.LoadListener;
import io.hicache.core.LoadOverlap;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.EvictionPolicy;
import org.agrona.concurrent.IdleStrategy;

import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The settings of one {@link HiCacheController}, validated and with every default resolved: concluded from a {@link
 * io.hicache.core.HiCache.Settings} when a builder builds, so the builder itself keeps only what the caller set and can
 * build again (each build gets, for instance, its own default rank agreement). Immutable; any thread.
 *
 * @param hitThreshold the resolved hit threshold (the policy's default when none was set)
 * @param hookRingCapacity entries of each slot's hook lane, or 0 for the default ({@link HookRing#capacityFor})
 * @param loadBatchesInFlight load batches that may be unacknowledged at once
 * @param hostMemoryKind where host memory comes from, or null for the pool's default
 * @param loadAgreement the agreement for loads, or null when loads share the backups' rounds
 * @param sealedLimitNs how long a sealed backup may wait for the group's agreement (0: no limit)
 * @param watchdogNs how long a call into the agreement may block {@code poll()} before it is logged (0: not watched)
 */
public record ControllerConfig(CudaRuntime runtime, CudaStream computeStream, DeviceKvLayout targetLayout,
                               DeviceKvLayout draftLayout, int hostPages, long hostBytes, double hostRatio,
                               HostLayout hostLayout, HostMemoryKind hostMemoryKind, int cpSize, int cpRank,
                               OwnerLanes lanes, RankAgreement agreement, RankAgreement loadAgreement,
                               int loadThresholdTokens, LoadListener loadListener, LoadOverlap loadOverlap,
                               String loadOverlapReason, WritePolicy writePolicy, int hitThreshold,
                               BackupMode backupMode, EvictionPolicy deviceEviction, EvictionPolicy hostEviction,
                               ThreadingMode threadingMode, Supplier<IdleStrategy> idleStrategySupplier,
                               LongSupplier clock, long leaseNs, long sealedLimitNs, long watchdogNs,
                               int maxForwardsInFlight, int loadBatchesInFlight,
                               int hookRingCapacity, boolean coalesce, boolean batchedCopies, boolean checkThread,
                               BackupListener listener) {

    /** Most load batches that may be in flight ({@code loadBatchesInFlight}); the consumer token keeps 8 bits. */
    public static final int MAX_LOAD_BATCHES = 64;

    /** A copy with another hook ring size (tests shrink the ring to reach its full fallback). */
    ControllerConfig withHookRingCapacity(int entries) {
        if (entries < 1 || Integer.bitCount(entries) != 1) {
            throw new IllegalArgumentException("hookRingCapacity " + entries + " must be a power of two");
        }
        return new ControllerConfig(runtime, computeStream, targetLayout, draftLayout, hostPages, hostBytes, hostRatio,
            hostLayout, hostMemoryKind, cpSize, cpRank, lanes, agreement, loadAgreement, loadThresholdTokens,
            loadListener, loadOverlap, loadOverlapReason, writePolicy, hitThreshold, backupMode, deviceEviction,
            hostEviction, threadingMode, idleStrategySupplier, clock, leaseNs, sealedLimitNs, watchdogNs,
            maxForwardsInFlight, loadBatchesInFlight, entries, coalesce, batchedCopies, checkThread, listener);
    }

    /** The host pool these settings ask for, on {@code rt} for {@code layout}. */
    HostKvPool.Builder hostPoolBuilder(CudaRuntime rt, DeviceKvLayout layout) {
        HostKvPool.Builder pb = HostKvPool.builder(rt, layout.shape()).layout(hostLayout);
        if (hostMemoryKind != null) {
            pb.memoryKind(hostMemoryKind);
        }
        if (hostPages > 0) {
            pb.pageCount(hostPages);
        } else if (hostBytes > 0) {
            pb.bytes(hostBytes);
        } else {
            pb.ratioToDevice(layout, hostRatio);
        }
        return pb;
    }
}
