package io.hicache.core.internal;

import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.LoadListener;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import java.util.function.LongSupplier;

/**
 * The configuration and builder of a {@link HiCacheController} (the engine-facing builder is {@code HiCache.Builder}). Required: {@link #runtime}, {@link #targetLayout} and a host
 * pool size ({@link #hostPages}, {@link #hostBytes} or {@link #hostRatioToDevice}). {@link #build()} validates
 * everything, naming the bad setting. Cold path; not thread-safe.
 */
public final class ControllerBuilder {
    CudaRuntime runtime;
    CudaStream computeStream;
    DeviceKvLayout targetLayout;
    DeviceKvLayout draftLayout;
    int hostPages;
    long hostBytes;
    double hostRatio;
    io.hicache.core.memory.HostLayout hostLayout = io.hicache.core.memory.HostLayout.LAYER_FIRST;
    io.hicache.core.memory.HostMemoryKind hostMemoryKind;
    int cpSize = 1;
    int cpRank;
    OwnerLanes lanes = OwnerLanes.ROUND_ROBIN;
    RankAgreement agreement;
    RankAgreement loadAgreement;
    int loadThresholdTokens = 10;
    LoadListener loadListener;
    io.hicache.core.LoadOverlap loadOverlap = io.hicache.core.LoadOverlap.SAME_FORWARD;
    String loadOverlapReason;
    WritePolicy writePolicy = WritePolicy.WRITE_THROUGH;
    int hitThreshold;
    BackupMode backupMode = BackupMode.LAYERED;
    io.hicache.radix.EvictionPolicy deviceEviction = io.hicache.radix.EvictionPolicy.LRU;
    io.hicache.radix.EvictionPolicy hostEviction = io.hicache.radix.EvictionPolicy.LRU;
    ThreadingMode threadingMode = ThreadingMode.DEDICATED;
    java.util.function.Supplier<org.agrona.concurrent.IdleStrategy> idleStrategySupplier =
        () -> new org.agrona.concurrent.BackoffIdleStrategy(100, 10, 1_000, 100_000);
    LongSupplier clock = System::nanoTime;
    long leaseNs = 30_000_000_000L;
    int maxForwardsInFlight = 8;
    int hookRingCapacity;
    boolean coalesce = true;
    boolean batchedCopies = true;
    boolean checkThread = true;
    BackupListener listener;

    ControllerBuilder() {
    }

    /** The CUDA runtime (native or simulated). Required. */
    public ControllerBuilder runtime(CudaRuntime runtime) {
        this.runtime = runtime;
        return this;
    }

    /** The engine's compute stream the hooks record on; default: a stream the controller creates. */
    public ControllerBuilder computeStream(CudaStream stream) {
        this.computeStream = stream;
        return this;
    }

    /** The target model's device KV layout. Required; its page size is the tree's. */
    public ControllerBuilder targetLayout(DeviceKvLayout layout) {
        this.targetLayout = layout;
        return this;
    }

    /** The draft/MTP model's device KV layout (same page size and device page ids); none by default. */
    public ControllerBuilder draftLayout(DeviceKvLayout layout) {
        this.draftLayout = layout;
        return this;
    }

    /** Host pool size in pages. */
    public ControllerBuilder hostPages(int pages) {
        this.hostPages = pages;
        return this;
    }

    /** Host pool size in bytes (rounded down to whole pages). */
    public ControllerBuilder hostBytes(long bytes) {
        this.hostBytes = bytes;
        return this;
    }

    /** Host pool size as a ratio of the device pool ({@code > 0}). */
    public ControllerBuilder hostRatioToDevice(double ratio) {
        this.hostRatio = ratio;
        return this;
    }

    /** Host byte order (default {@code LAYER_FIRST}). */
    public ControllerBuilder hostLayout(io.hicache.core.memory.HostLayout layout) {
        this.hostLayout = layout;
        return this;
    }

    /** Where host memory comes from (default: the pool's default, {@code cudaHostAlloc}). */
    public ControllerBuilder hostMemoryKind(io.hicache.core.memory.HostMemoryKind kind) {
        this.hostMemoryKind = kind;
        return this;
    }

    /** The CP group: size, this rank, the owner-lane strategy and the agreement among ranks. */
    public ControllerBuilder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement) {
        this.cpSize = size;
        this.cpRank = rank;
        this.lanes = lanes;
        this.agreement = agreement;
        return this;
    }

    /**
     * The CP group with a separate agreement for loads (an engine's collective may serve both; in-process
     * groups need two {@link io.hicache.core.cp.InProcessRankAgreement}s).
     */
    public ControllerBuilder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement, RankAgreement loadAgreement) {
        cpGroup(size, rank, lanes, agreement);
        this.loadAgreement = loadAgreement;
        return this;
    }

    /** Host hits shorter than this many tokens are not loaded back (default 10, as SGLang). */
    public ControllerBuilder loadThresholdTokens(int tokens) {
        this.loadThresholdTokens = tokens;
        return this;
    }

    /** Listener for finished and failed loads (default none). */
    public ControllerBuilder loadListener(LoadListener listener) {
        this.loadListener = listener;
        return this;
    }

    /**
     * When a load's pages may be used (default {@link io.hicache.core.LoadOverlap#SAME_FORWARD});
     * {@code reason} is required for {@link io.hicache.core.LoadOverlap#PREVIOUS_BATCH} and logged once.
     */
    public ControllerBuilder loadOverlap(io.hicache.core.LoadOverlap overlap, String reason) {
        this.loadOverlap = overlap;
        this.loadOverlapReason = reason;
        return this;
    }

    /** Write policy (default write-through). */
    public ControllerBuilder writePolicy(WritePolicy policy) {
        this.writePolicy = policy;
        return this;
    }

    /** Hit threshold of write-through-selective (default 2; write-through uses 1). */
    public ControllerBuilder hitThreshold(int threshold) {
        this.hitThreshold = threshold;
        return this;
    }

    /** Backup mode (default {@link BackupMode#LAYERED}). */
    public ControllerBuilder backupMode(BackupMode mode) {
        this.backupMode = mode;
        return this;
    }

    /** Eviction policies of the device and host tiers (default LRU for both). */
    public ControllerBuilder eviction(io.hicache.radix.EvictionPolicy device, io.hicache.radix.EvictionPolicy host) {
        this.deviceEviction = device;
        this.hostEviction = host;
        return this;
    }

    /** Threading of the agents (default {@link ThreadingMode#DEDICATED}). */
    public ControllerBuilder threadingMode(ThreadingMode mode) {
        this.threadingMode = mode;
        return this;
    }

    /** Idle strategy of the agent threads (a new one per agent). */
    public ControllerBuilder idleStrategy(java.util.function.Supplier<org.agrona.concurrent.IdleStrategy> supplier) {
        this.idleStrategySupplier = supplier;
        return this;
    }

    /** Clock in nanoseconds for leases and latencies (default {@code System::nanoTime}; the simulated device's clock in simulation). */
    public ControllerBuilder clock(LongSupplier clockNs) {
        this.clock = clockNs;
        return this;
    }

    /** Lease of a reservation: not sealed within it, the backup is aborted (default 30 s; 0 disables). */
    public ControllerBuilder leaseNs(long leaseNs) {
        this.leaseNs = leaseNs;
        return this;
    }

    /** Forwards with backups that may be in flight at once (default 8). */
    public ControllerBuilder maxForwardsInFlight(int n) {
        this.maxForwardsInFlight = n;
        return this;
    }

    /**
     * Entries of the hook ring (a power of two; default: twice what every slot's forward can publish, so it
     * fills only when the submitter falls behind). Package-private: tests shrink it to reach the ring-full
     * fallback.
     */
    ControllerBuilder hookRingCapacity(int entries) {
        this.hookRingCapacity = entries;
        return this;
    }

    /** Whether pages contiguous on both sides are copied in one call (default true). */
    public ControllerBuilder coalesce(boolean coalesce) {
        this.coalesce = coalesce;
        return this;
    }

    /** Whether a layer's copies go in one batched call where the runtime supports it (default true). */
    public ControllerBuilder batchedCopies(boolean batched) {
        this.batchedCopies = batched;
        return this;
    }

    /** Whether scheduler-thread calls are checked to come from one thread (default true). */
    public ControllerBuilder checkThread(boolean check) {
        this.checkThread = check;
        return this;
    }

    /** Listener for commits and aborts (default none). */
    public ControllerBuilder listener(BackupListener listener) {
        this.listener = listener;
        return this;
    }

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

    /**
     * Validates and builds; allocates the host pool, streams and events (released again if any step fails).
     *
     * @throws IllegalArgumentException naming the bad setting
     * @throws io.hicache.cuda.CudaException if the runtime fails
     */
    public HiCacheController build() {
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
        if (agreement == null) {
            if (cpSize != 1) {
                throw new IllegalArgumentException("a CP group of size " + cpSize + " needs a RankAgreement");
            }
            agreement = new io.hicache.core.internal.cp.LocalRankAgreement();
        }
        if (loadAgreement == null) {
            loadAgreement = agreement.loadChannel();
        }
        if (loadAgreement == agreement && cpSize > 1) {
            throw new IllegalArgumentException("backups and loads need separate RankAgreement instances");
        }
        if (loadThresholdTokens < 0) {
            throw new IllegalArgumentException("loadThresholdTokens " + loadThresholdTokens + " must be >= 0");
        }
        if (loadOverlap == null) {
            throw new IllegalArgumentException("loadOverlap must not be null");
        }
        if (loadOverlap == io.hicache.core.LoadOverlap.PREVIOUS_BATCH
            && (loadOverlapReason == null || loadOverlapReason.isBlank())) {
            throw new IllegalArgumentException("loadOverlap PREVIOUS_BATCH needs a reason (why the engine cannot"
                + " wait per layer); it is logged once");
        }
        if (agreement.groupSize() != cpSize) {
            throw new IllegalArgumentException("RankAgreement of size " + agreement.groupSize()
                + " for a CP group of size " + cpSize);
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
        if (hookRingCapacity != 0 && (hookRingCapacity < 1 || Integer.bitCount(hookRingCapacity) != 1)) {
            throw new IllegalArgumentException("hookRingCapacity " + hookRingCapacity + " must be a power of two");
        }
        if (maxForwardsInFlight < 1 || maxForwardsInFlight > 1024) {
            throw new IllegalArgumentException("maxForwardsInFlight " + maxForwardsInFlight + " outside [1, 1024]");
        }
        return new HiCacheController(this);
    }
}
