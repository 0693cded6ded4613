package io.hicache.core.internal;

import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.LoadListener;
import io.hicache.core.LoadOverlap;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.cp.LocalRankAgreement;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.EvictionPolicy;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * The settings of a {@link HiCacheController}, by name, with their defaults and their validation written once: the
 * engine's {@link io.hicache.core.HiCacheSettings} records what the engine sets here, and the project's own tests and
 * benchmarks set them directly. Setters only record what was set (their meaning is documented on
 * {@link io.hicache.core.HiCacheSettings}); {@link #conclude()} validates them and resolves the defaults into an
 * immutable {@link ControllerConfig}, leaving the builder as it was, so it can build again (each build gets, for
 * instance, its own default rank agreement). Cold path; not thread-safe.
 */
public final class ControllerBuilder {
    CudaRuntime runtime;
    CudaStream computeStream;
    DeviceKvLayout targetLayout;
    DeviceKvLayout draftLayout;
    int hostPages;
    long hostBytes;
    double hostRatio;
    HostLayout hostLayout = HostLayout.LAYER_FIRST;
    HostMemoryKind hostMemoryKind;
    int cpSize = 1;
    int cpRank;
    OwnerLanes lanes = OwnerLanes.Standard.ROUND_ROBIN;
    RankAgreement agreement;
    RankAgreement loadAgreement;
    int loadThresholdTokens = 10;
    LoadListener loadListener;
    LoadOverlap loadOverlap = LoadOverlap.SAME_FORWARD;
    String loadOverlapReason;
    BackupListener listener;
    WritePolicy writePolicy = WritePolicy.WRITE_THROUGH;
    int hitThreshold;
    BackupMode backupMode = BackupMode.LAYERED;
    EvictionPolicy deviceEviction = EvictionPolicy.LRU;
    EvictionPolicy hostEviction = EvictionPolicy.LRU;
    ThreadingMode threadingMode = ThreadingMode.DEDICATED;
    Supplier<IdleStrategy> idleStrategySupplier = () -> new BackoffIdleStrategy(100, 10, 1_000, 100_000);
    LongSupplier clock = System::nanoTime;
    long leaseNs = 30_000_000_000L;
    long sealedTimeLimitNs = -1;
    long agreementWatchdogNs = 1_000_000_000L;
    int maxForwardsInFlight = 8;
    int loadBatchesInFlight = 3;
    int hookRingCapacity;
    boolean coalesce = true;
    boolean batchedCopies = true;
    boolean checkThread = true;

    ControllerBuilder() {
    }

    /** See {@link io.hicache.core.HiCacheSettings#runtime}. */
    public ControllerBuilder runtime(CudaRuntime runtime) {
        this.runtime = runtime;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#computeStream}. */
    public ControllerBuilder computeStream(CudaStream stream) {
        this.computeStream = stream;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#targetLayout}. */
    public ControllerBuilder targetLayout(DeviceKvLayout layout) {
        this.targetLayout = layout;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#draftLayout}. */
    public ControllerBuilder draftLayout(DeviceKvLayout layout) {
        this.draftLayout = layout;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hostPages}. */
    public ControllerBuilder hostPages(int pages) {
        this.hostPages = pages;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hostBytes}. */
    public ControllerBuilder hostBytes(long bytes) {
        this.hostBytes = bytes;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hostRatioToDevice}. */
    public ControllerBuilder hostRatioToDevice(double ratio) {
        this.hostRatio = ratio;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hostLayout}. */
    public ControllerBuilder hostLayout(HostLayout layout) {
        this.hostLayout = layout;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hostMemoryKind}. */
    public ControllerBuilder hostMemoryKind(HostMemoryKind kind) {
        this.hostMemoryKind = kind;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#cpGroup}. */
    public ControllerBuilder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement) {
        this.cpSize = size;
        this.cpRank = rank;
        this.lanes = lanes;
        this.agreement = agreement;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#cpGroup}. */
    public ControllerBuilder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement, RankAgreement loadAgreement) {
        cpGroup(size, rank, lanes, agreement);
        this.loadAgreement = loadAgreement;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#loadThresholdTokens}. */
    public ControllerBuilder loadThresholdTokens(int tokens) {
        this.loadThresholdTokens = tokens;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#loadListener}. */
    public ControllerBuilder loadListener(LoadListener listener) {
        this.loadListener = listener;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#loadOverlap}. */
    public ControllerBuilder loadOverlap(LoadOverlap overlap, String reason) {
        this.loadOverlap = overlap;
        this.loadOverlapReason = reason;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#loadBatchesInFlight}. */
    public ControllerBuilder loadBatchesInFlight(int batches) {
        this.loadBatchesInFlight = batches;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#listener}. */
    public ControllerBuilder listener(BackupListener listener) {
        this.listener = listener;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#writePolicy}. */
    public ControllerBuilder writePolicy(WritePolicy policy) {
        this.writePolicy = policy;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#hitThreshold}. */
    public ControllerBuilder hitThreshold(int threshold) {
        this.hitThreshold = threshold;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#backupMode}. */
    public ControllerBuilder backupMode(BackupMode mode) {
        this.backupMode = mode;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#eviction}. */
    public ControllerBuilder eviction(EvictionPolicy device, EvictionPolicy host) {
        this.deviceEviction = device;
        this.hostEviction = host;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#threadingMode}. */
    public ControllerBuilder threadingMode(ThreadingMode mode) {
        this.threadingMode = mode;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#idleStrategy}. */
    public ControllerBuilder idleStrategy(Supplier<IdleStrategy> supplier) {
        this.idleStrategySupplier = supplier;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#clock}. */
    public ControllerBuilder clock(LongSupplier clockNs) {
        this.clock = clockNs;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#leaseNs}. */
    public ControllerBuilder leaseNs(long leaseNs) {
        this.leaseNs = leaseNs;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#sealedTimeLimitNs}. */
    public ControllerBuilder sealedTimeLimitNs(long limitNs) {
        this.sealedTimeLimitNs = limitNs;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#agreementWatchdogNs}. */
    public ControllerBuilder agreementWatchdogNs(long boundNs) {
        this.agreementWatchdogNs = boundNs;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#maxForwardsInFlight}. */
    public ControllerBuilder maxForwardsInFlight(int n) {
        this.maxForwardsInFlight = n;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#coalesce}. */
    public ControllerBuilder coalesce(boolean coalesce) {
        this.coalesce = coalesce;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#batchedCopies}. */
    public ControllerBuilder batchedCopies(boolean batched) {
        this.batchedCopies = batched;
        return this;
    }

    /** See {@link io.hicache.core.HiCacheSettings#checkThread}. */
    public ControllerBuilder checkThread(boolean check) {
        this.checkThread = check;
        return this;
    }

    /**
     * Entries of each slot's hook lane (a power of two; default: twice what a forward can publish, so it fills
     * only when the submitter falls behind). Package-private: tests shrink it to reach the ring-full
     * fallback.
     */
    ControllerBuilder hookRingCapacity(int entries) {
        this.hookRingCapacity = entries;
        return this;
    }

    /**
     * Validates the settings and resolves their defaults into an immutable configuration, leaving this builder
     * as it was (Aeron's {@code Context.conclude()} is the model).
     *
     * @throws IllegalArgumentException naming the bad setting
     */
    public ControllerConfig conclude() {
        if (runtime == null) {
            throw new IllegalArgumentException("runtime is required");
        }
        if (targetLayout == null) {
            throw new IllegalArgumentException("targetLayout is required");
        }
        if (draftLayout != null && draftLayout.pageSizeTokens() != targetLayout.pageSizeTokens()) {
            throw new IllegalArgumentException("draftLayout page size " + draftLayout.pageSizeTokens()
                + " differs from the target's " + targetLayout.pageSizeTokens());
        }
        int sizes = (hostPages > 0 ? 1 : 0) + (hostBytes > 0 ? 1 : 0) + (hostRatio > 0 ? 1 : 0);
        if (sizes != 1) {
            throw new IllegalArgumentException("set exactly one positive host pool size (hostPages, hostBytes or "
                + "hostRatioToDevice); got pages=" + hostPages + ", bytes=" + hostBytes + ", ratio=" + hostRatio);
        }
        if (cpSize < 1 || cpRank < 0 || cpRank >= cpSize) {
            throw new IllegalArgumentException("CP rank " + cpRank + " outside a group of size " + cpSize);
        }
        if (lanes == null) {
            throw new IllegalArgumentException("lanes must not be null");
        }
        if (agreement == null && cpSize != 1) {
            throw new IllegalArgumentException("a CP group of size " + cpSize + " needs a RankAgreement");
        }
        // resolved here, never written back: each cache built gets its own default agreement
        RankAgreement backups = agreement != null ? agreement : new LocalRankAgreement();
        RankAgreement loads = loadAgreement; // null: loads share the backups' rounds
        if (loads == backups) {
            throw new IllegalArgumentException("the load agreement is the backup agreement: pass it once (the "
                + "four-argument cpGroup runs backups and loads in one round) or pass a separate one");
        }
        if (backups.groupSize() != cpSize || loads != null && loads.groupSize() != cpSize) {
            throw new IllegalArgumentException("RankAgreement of size " + backups.groupSize()
                + (loads != null ? " (loads " + loads.groupSize() + ")" : "") + " for a CP group of size " + cpSize);
        }
        long detectNs = Math.max(backups.failureDetectionNs(), loads != null ? loads.failureDetectionNs() : 0);
        long sealedLimit = sealedTimeLimitNs;
        if (sealedLimit < 0) {
            // an agreement that cannot detect a silent rank waits for it: the limit is then the only bound
            sealedLimit = detectNs == Long.MAX_VALUE || detectNs < 30_000_000_000L ? 60_000_000_000L
                : detectNs > Long.MAX_VALUE / 2 ? 0 : 2 * detectNs;
        } else if (sealedLimit > 0 && detectNs != Long.MAX_VALUE && sealedLimit <= detectNs) {
            throw new IllegalArgumentException("sealedTimeLimitNs " + sealedLimit + " must exceed the agreement's "
                + "failure detection bound (" + detectNs + " ns), or a group that is slow but healthy half-commits");
        }
        if (hookRingCapacity != 0 && (hookRingCapacity < 1 || Integer.bitCount(hookRingCapacity) != 1)) {
            throw new IllegalArgumentException("hookRingCapacity " + hookRingCapacity + " must be a power of two");
        }
        if (agreementWatchdogNs < 0) {
            throw new IllegalArgumentException("agreementWatchdogNs " + agreementWatchdogNs + " must be >= 0");
        }
        if (loadThresholdTokens < 0) {
            throw new IllegalArgumentException("loadThresholdTokens " + loadThresholdTokens + " must be >= 0");
        }
        if (loadOverlap == null) {
            throw new IllegalArgumentException("loadOverlap must not be null");
        }
        if (loadOverlap == LoadOverlap.PREVIOUS_BATCH && (loadOverlapReason == null || loadOverlapReason.isBlank())) {
            throw new IllegalArgumentException("loadOverlap PREVIOUS_BATCH needs a reason (why the engine cannot"
                + " wait per layer); it is logged once");
        }
        if (writePolicy == null || backupMode == null || threadingMode == null || deviceEviction == null
            || hostEviction == null || clock == null || idleStrategySupplier == null || hostLayout == null) {
            throw new IllegalArgumentException("writePolicy, backupMode, threadingMode, eviction policies, clock, "
                + "idle strategy and hostLayout must not be null");
        }
        if (hitThreshold < 0) {
            throw new IllegalArgumentException("hitThreshold " + hitThreshold + " must be >= 1 (0 = policy default)");
        }
        if (leaseNs < 0) {
            throw new IllegalArgumentException("leaseNs " + leaseNs + " must be >= 0");
        }
        if (maxForwardsInFlight < 1 || maxForwardsInFlight > 1024) {
            throw new IllegalArgumentException("maxForwardsInFlight " + maxForwardsInFlight + " outside [1, 1024]");
        }
        int maxBatches = ControllerConfig.MAX_LOAD_BATCHES;
        if (loadBatchesInFlight < 1 || loadBatchesInFlight > maxBatches) {
            throw new IllegalArgumentException("loadBatchesInFlight " + loadBatchesInFlight + " outside [1, "
                + maxBatches + "]");
        }
        int threshold = hitThreshold > 0 ? hitThreshold : writePolicy == WritePolicy.WRITE_THROUGH_SELECTIVE ? 2 : 1;
        return new ControllerConfig(this, backups, threshold, sealedLimit);
    }

    /**
     * Validates and builds; allocates the host pool, streams and events (released again if any step fails).
     *
     * @throws IllegalArgumentException naming the bad setting
     * @throws io.hicache.core.memory.InsufficientHostMemoryException if the host pool does not fit
     * @throws io.hicache.cuda.CudaException if the runtime fails
     */
    public HiCacheController build() {
        return HiCacheController.create(conclude());
    }
}
