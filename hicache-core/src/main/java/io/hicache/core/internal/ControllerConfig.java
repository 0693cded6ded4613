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
 * The settings of one {@link HiCacheController}, validated and with every default resolved: concluded from a
 * {@link ControllerBuilder} (which the engine's {@link io.hicache.core.HiCacheSettings} fills) when it builds, so the
 * builder itself keeps only what the caller set and can build again. Each setting is read by its name; the resolved
 * ones: {@link #agreement()} (the group's, or one of the cache's own), {@link #hitThreshold()} (the policy's default
 * when none was set), {@link #sealedLimitNs()} (how long a sealed backup may wait for the group's agreement, 0: no
 * limit); {@link #loadAgreement()} is null when loads share the backups' rounds, {@link #hostMemoryKind()} null for
 * the pool's default, {@link #hookRingCapacity()} 0 for the default ({@link HookRing#capacityFor}) and
 * {@link #watchdogNs()} 0 when calls into the agreement are not watched. Immutable; any thread.
 */
public final class ControllerConfig {
    /** Most load batches that may be in flight ({@code loadBatchesInFlight}); the consumer token keeps 8 bits. */
    public static final int MAX_LOAD_BATCHES = 64;

    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final DeviceKvLayout targetLayout;
    private final DeviceKvLayout draftLayout;
    private final int hostPages;
    private final long hostBytes;
    private final double hostRatio;
    private final HostLayout hostLayout;
    private final HostMemoryKind hostMemoryKind;
    private final int cpSize;
    private final int cpRank;
    private final OwnerLanes lanes;
    private final RankAgreement agreement;
    private final RankAgreement loadAgreement;
    private final int loadThresholdTokens;
    private final LoadListener loadListener;
    private final LoadOverlap loadOverlap;
    private final String loadOverlapReason;
    private final BackupListener listener;
    private final WritePolicy writePolicy;
    private final int hitThreshold;
    private final BackupMode backupMode;
    private final EvictionPolicy deviceEviction;
    private final EvictionPolicy hostEviction;
    private final ThreadingMode threadingMode;
    private final Supplier<IdleStrategy> idleStrategySupplier;
    private final LongSupplier clock;
    private final long leaseNs;
    private final long sealedLimitNs;
    private final long watchdogNs;
    private final int maxForwardsInFlight;
    private final int loadBatchesInFlight;
    private final int hookRingCapacity;
    private final boolean coalesce;
    private final boolean batchedCopies;
    private final boolean checkThread;

    /** Copies {@code b}'s settings, with the three it resolved. */
    ControllerConfig(ControllerBuilder b, RankAgreement agreement, int hitThreshold, long sealedLimitNs) {
        this.runtime = b.runtime;
        this.computeStream = b.computeStream;
        this.targetLayout = b.targetLayout;
        this.draftLayout = b.draftLayout;
        this.hostPages = b.hostPages;
        this.hostBytes = b.hostBytes;
        this.hostRatio = b.hostRatio;
        this.hostLayout = b.hostLayout;
        this.hostMemoryKind = b.hostMemoryKind;
        this.cpSize = b.cpSize;
        this.cpRank = b.cpRank;
        this.lanes = b.lanes;
        this.agreement = agreement;
        this.loadAgreement = b.loadAgreement;
        this.loadThresholdTokens = b.loadThresholdTokens;
        this.loadListener = b.loadListener;
        this.loadOverlap = b.loadOverlap;
        this.loadOverlapReason = b.loadOverlapReason;
        this.listener = b.listener;
        this.writePolicy = b.writePolicy;
        this.hitThreshold = hitThreshold;
        this.backupMode = b.backupMode;
        this.deviceEviction = b.deviceEviction;
        this.hostEviction = b.hostEviction;
        this.threadingMode = b.threadingMode;
        this.idleStrategySupplier = b.idleStrategySupplier;
        this.clock = b.clock;
        this.leaseNs = b.leaseNs;
        this.sealedLimitNs = sealedLimitNs;
        this.watchdogNs = b.agreementWatchdogNs;
        this.maxForwardsInFlight = b.maxForwardsInFlight;
        this.loadBatchesInFlight = b.loadBatchesInFlight;
        this.hookRingCapacity = b.hookRingCapacity;
        this.coalesce = b.coalesce;
        this.batchedCopies = b.batchedCopies;
        this.checkThread = b.checkThread;
    }

    public CudaRuntime runtime() {
        return runtime;
    }

    public CudaStream computeStream() {
        return computeStream;
    }

    public DeviceKvLayout targetLayout() {
        return targetLayout;
    }

    public DeviceKvLayout draftLayout() {
        return draftLayout;
    }

    public int hostPages() {
        return hostPages;
    }

    public long hostBytes() {
        return hostBytes;
    }

    public double hostRatio() {
        return hostRatio;
    }

    public HostLayout hostLayout() {
        return hostLayout;
    }

    public HostMemoryKind hostMemoryKind() {
        return hostMemoryKind;
    }

    public int cpSize() {
        return cpSize;
    }

    public int cpRank() {
        return cpRank;
    }

    public OwnerLanes lanes() {
        return lanes;
    }

    public RankAgreement agreement() {
        return agreement;
    }

    public RankAgreement loadAgreement() {
        return loadAgreement;
    }

    public int loadThresholdTokens() {
        return loadThresholdTokens;
    }

    public LoadListener loadListener() {
        return loadListener;
    }

    public LoadOverlap loadOverlap() {
        return loadOverlap;
    }

    public String loadOverlapReason() {
        return loadOverlapReason;
    }

    public BackupListener listener() {
        return listener;
    }

    public WritePolicy writePolicy() {
        return writePolicy;
    }

    public int hitThreshold() {
        return hitThreshold;
    }

    public BackupMode backupMode() {
        return backupMode;
    }

    public EvictionPolicy deviceEviction() {
        return deviceEviction;
    }

    public EvictionPolicy hostEviction() {
        return hostEviction;
    }

    public ThreadingMode threadingMode() {
        return threadingMode;
    }

    public Supplier<IdleStrategy> idleStrategySupplier() {
        return idleStrategySupplier;
    }

    public LongSupplier clock() {
        return clock;
    }

    public long leaseNs() {
        return leaseNs;
    }

    public long sealedLimitNs() {
        return sealedLimitNs;
    }

    public long watchdogNs() {
        return watchdogNs;
    }

    public int maxForwardsInFlight() {
        return maxForwardsInFlight;
    }

    public int loadBatchesInFlight() {
        return loadBatchesInFlight;
    }

    public int hookRingCapacity() {
        return hookRingCapacity;
    }

    public boolean coalesce() {
        return coalesce;
    }

    public boolean batchedCopies() {
        return batchedCopies;
    }

    public boolean checkThread() {
        return checkThread;
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
