package io.hicache.sim;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.model.ComputeModel;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;

/**
 * One simulator configuration: everything but the trace. Capacities are in <em>simulated</em>
 * tokens, i.e. after {@link io.hicache.sim.trace.TokenExpander expansion} with {@link #blockTokens}
 * tokens per trace block. Immutable and thread-safe. The compact constructor checks each value on
 * its own and the rules that tie values together; the command line additionally refuses options
 * that only contradict when given explicitly (see {@code io.hicache.sim.cli.Main}).
 *
 * @param model                the model preset
 * @param gpu                  the GPU preset
 * @param blockTokens          simulated tokens per trace block (>= 1; the format's block size by default)
 * @param pageSize             tokens per radix/KV page (a power of two that divides {@code blockTokens})
 * @param deviceCapacityTokens device (GPU) KV capacity in simulated tokens (>= pageSize)
 * @param hostCapacityTokens   host KV capacity in simulated tokens: {@link #HOST_NONE} for no host
 *                             tier, {@link #HOST_UNLIMITED} for unlimited
 * @param writePolicy          when nodes are backed up to the host tier
 * @param backupMode           how backup copies are issued (layered, all-layers, none)
 * @param eviction             eviction order of the radix tree
 * @param cp                   context-parallel group size in ranks (>= 1)
 * @param lanes                page ownership across the CP group
 * @param draftLayers          draft/MTP layers backed up with the target (>= 0)
 * @param cacheOnly            ignore timing: each request runs to completion before the next
 * @param seed                 seed of every random choice (agent stepping order, ties)
 * @param timeScale            arrival times are divided by this (> 0; 2 = twice as fast)
 */
public record SimConfig(ModelPreset model, GpuPreset gpu, int blockTokens, int pageSize, long deviceCapacityTokens,
                        long hostCapacityTokens, WritePolicy writePolicy, BackupMode backupMode, EvictionPolicy eviction,
                        int cp, OwnerLanes lanes, int draftLayers, boolean cacheOnly, long seed, double timeScale,
                        LoadOverlap loadOverlap) {

    /** {@link #hostCapacityTokens} meaning "no host tier". */
    public static final long HOST_NONE = 0;
    /** {@link #hostCapacityTokens} meaning "unlimited host tier". */
    public static final long HOST_UNLIMITED = Long.MAX_VALUE;
    /**
     * Default device capacity in prompt tokens: 5859 Mooncake blocks of 512 = 2,999,808 tokens, about
     * the KV space 8 x H200 (141 GB) leave after llama3-70b's bf16 weights at 320 KiB per token,
     * rounded down to the reference point of {@code traces/conversation_lru_baseline.csv}.
     */
    public static final long DEFAULT_DEVICE_CAPACITY_PROMPT_TOKENS = 5859L * 512;
    /** Default host capacity as a multiple of the device capacity (SGLang's {@code --hicache-ratio 2}). */
    public static final int DEFAULT_HOST_RATIO = 2;

    /** Checks every value and the rules between them. */
    public SimConfig {
        requireNonNull(model, "model");
        requireNonNull(gpu, "gpu");
        requireNonNull(writePolicy, "writePolicy");
        requireNonNull(backupMode, "backupMode");
        requireNonNull(eviction, "eviction");
        requireNonNull(lanes, "lanes");
        requireNonNull(loadOverlap, "loadOverlap");
        if (eviction == EvictionPolicy.PRIORITY) {
            throw new IllegalArgumentException("eviction PRIORITY needs request priorities, which traces do not carry");
        }
        if (blockTokens < 1) {
            throw new IllegalArgumentException("block tokens must be >= 1, got " + blockTokens);
        }
        if (pageSize < 1 || Integer.bitCount(pageSize) != 1 || blockTokens % pageSize != 0) {
            throw new IllegalArgumentException("page size must be a power of two that divides block tokens "
                    + blockTokens + " (a page may not span two trace blocks), got " + pageSize);
        }
        if (deviceCapacityTokens < pageSize) {
            throw new IllegalArgumentException("device capacity must be at least one page (" + pageSize
                    + " tokens), got " + deviceCapacityTokens);
        }
        if (hostCapacityTokens < 0) {
            throw new IllegalArgumentException("host capacity must be >= 0 tokens (0 = no host tier), got "
                    + hostCapacityTokens);
        }
        if (cp < 1) {
            throw new IllegalArgumentException("cp must be >= 1 rank, got " + cp);
        }
        if (draftLayers < 0) {
            throw new IllegalArgumentException("draft layers must be >= 0, got " + draftLayers);
        }
        if (!(timeScale > 0) || Double.isInfinite(timeScale)) {
            throw new IllegalArgumentException("time scale must be a finite number > 0, got " + timeScale);
        }
    }

    /** The defaults for a trace whose blocks hold {@code formatBlockSize} tokens. */
    public static SimConfig defaults(int formatBlockSize) {
        int pageSize = defaultPageSize(formatBlockSize);
        long device = defaultDeviceCapacityTokens(formatBlockSize, formatBlockSize);
        ModelPreset model = ModelPreset.DEFAULT;
        return new SimConfig(model, GpuPreset.DEFAULT, formatBlockSize, pageSize, device,
                device * DEFAULT_HOST_RATIO, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1,
                OwnerLanes.Standard.ROUND_ROBIN, model.defaultDraftLayers(), false, 0, 1.0);
    }

    /** Default page size: the largest power of two up to 64 that divides {@code blockTokens} (64 for 512, 1 for 1). */
    public static int defaultPageSize(int blockTokens) {
        int p = 64;
        while (p > 1 && blockTokens % p != 0) {
            p >>= 1;
        }
        return p;
    }

    /**
     * {@link #DEFAULT_DEVICE_CAPACITY_PROMPT_TOKENS} converted to simulated tokens: scaled by
     * {@code blockTokens / formatBlockSize} (5859 with one token per 512-token block).
     */
    public static long defaultDeviceCapacityTokens(int blockTokens, int formatBlockSize) {
        return Math.max(1, DEFAULT_DEVICE_CAPACITY_PROMPT_TOKENS * blockTokens / formatBlockSize);
    }

    /** Whether there is a host tier at all. */
    public boolean hasHostTier() {
        return hostCapacityTokens != HOST_NONE;
    }

    /** Whether the host tier is unlimited. */
    public boolean hostUnlimited() {
        return hostCapacityTokens == HOST_UNLIMITED;
    }

    /** A configuration whose loads overlap with the forward that uses them ({@link LoadOverlap#SAME_FORWARD}). */
    public SimConfig(ModelPreset model, GpuPreset gpu, int blockTokens, int pageSize, long deviceCapacityTokens,
                     long hostCapacityTokens, WritePolicy writePolicy, BackupMode backupMode, EvictionPolicy eviction,
                     int cp, OwnerLanes lanes, int draftLayers, boolean cacheOnly, long seed, double timeScale) {
        this(model, gpu, blockTokens, pageSize, deviceCapacityTokens, hostCapacityTokens, writePolicy, backupMode,
                eviction, cp, lanes, draftLayers, cacheOnly, seed, timeScale, LoadOverlap.SAME_FORWARD);
    }

    /** This configuration with loads used in the forward that needs them, or a batch later. */
    public SimConfig withLoadOverlap(LoadOverlap overlap) {
        return new SimConfig(model, gpu, blockTokens, pageSize, deviceCapacityTokens, hostCapacityTokens, writePolicy,
                backupMode, eviction, cp, lanes, draftLayers, cacheOnly, seed, timeScale, overlap);
    }

    /** The compute model of this model and GPU with default efficiencies. */
    public ComputeModel computeModel() {
        return ComputeModel.of(model, gpu);
    }

    /** This configuration with another backup mode. */
    public SimConfig withBackupMode(BackupMode mode) {
        return new SimConfig(model, gpu, blockTokens, pageSize, deviceCapacityTokens, hostCapacityTokens, writePolicy,
                mode, eviction, cp, lanes, draftLayers, cacheOnly, seed, timeScale, loadOverlap);
    }

    /** This configuration with another host capacity. */
    public SimConfig withHostCapacityTokens(long tokens) {
        return new SimConfig(model, gpu, blockTokens, pageSize, deviceCapacityTokens, tokens, writePolicy,
                backupMode, eviction, cp, lanes, draftLayers, cacheOnly, seed, timeScale, loadOverlap);
    }

    /** This configuration with other capacities (e.g. the unlimited-cache bound). */
    public SimConfig withCapacities(long deviceTokens, long hostTokens) {
        return new SimConfig(model, gpu, blockTokens, pageSize, deviceTokens, hostTokens, writePolicy,
                backupMode, eviction, cp, lanes, draftLayers, cacheOnly, seed, timeScale, loadOverlap);
    }

    /** This configuration in cache-only mode or not. */
    public SimConfig withCacheOnly(boolean on) {
        return new SimConfig(model, gpu, blockTokens, pageSize, deviceCapacityTokens, hostCapacityTokens, writePolicy,
                backupMode, eviction, cp, lanes, draftLayers, on, seed, timeScale, loadOverlap);
    }

    /** Host capacity as written on the command line: a number, or {@code inf}. */
    public String hostCapacityText() {
        return hostUnlimited() ? "inf" : Long.toString(hostCapacityTokens);
    }

    private static void requireNonNull(Object o, String name) {
        if (o == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
    }
}
