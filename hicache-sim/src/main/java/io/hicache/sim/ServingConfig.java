package io.hicache.sim;

import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;

/**
 * How the timed engine serves the trace: the deployment (instances, tensor parallelism, router), the
 * scheduler's budgets and the latency objectives. Kept apart from {@link SimConfig} (what the cache is)
 * so each can grow on its own. Immutable and thread-safe; the compact constructor checks every value.
 *
 * @param instances      serving instances behind the router (>= 1)
 * @param router         how arrivals are spread over the instances
 * @param tp             tensor-parallel GPUs per instance (per CP rank), >= 1
 * @param maxBatchTokens token budget of one forward step, prefill chunks plus one token per decoding
 *                       request (SGLang {@code --max-prefill-tokens}), >= 1
 * @param chunkTokens    largest prefill chunk of one request in one step (SGLang
 *                       {@code --chunked-prefill-size}), 1 .. maxBatchTokens
 * @param sloTtftMs      time-to-first-token objective in ms (> 0)
 * @param sloTpotMs      time-per-output-token objective in ms (> 0)
 * @param hostBandwidthGbps host DRAM and PCIe-switch bandwidth, GB/s, that the instance's {@code cp x tp} GPUs
 *                       share when they copy at the same instant (TP ranks copy the same layer together): each
 *                       GPU's host link runs at {@code min(link, this / GPUs)}; 0 = not shared (every GPU at its
 *                       link's rate)
 * @param sharedCopyEngine loads (host to device) and backups (device to host) share one copy engine and
 *                       serialize against each other, instead of one engine per direction
 * @param closedLoop     a request whose trace names the request it follows ({@code Request.parentId}) arrives no
 *                       earlier than that one finished, as a chat client sends its next turn after reading the
 *                       answer; false: every request arrives at its trace time
 * @param tierWeights    how much a cached page counts in the {@code cache-aware} and {@code kv-events} routers'
 *                       overlap, by the tier holding it ({@code --tier-weights}; {@link TierWeights#UNIT}: 1 each)
 */
public record ServingConfig(int instances, Router router, int tp, int maxBatchTokens, int chunkTokens,
                            double sloTtftMs, double sloTpotMs, double hostBandwidthGbps, boolean sharedCopyEngine,
                            boolean closedLoop, TierWeights tierWeights) {

    /** A deployment whose routers count every tier as 1. */
    public ServingConfig(int instances, Router router, int tp, int maxBatchTokens, int chunkTokens, double sloTtftMs,
                         double sloTpotMs, double hostBandwidthGbps, boolean sharedCopyEngine, boolean closedLoop) {
        this(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, hostBandwidthGbps,
                sharedCopyEngine, closedLoop, TierWeights.UNIT);
    }

    /** A deployment that replays follow-up turns closed loop. */
    public ServingConfig(int instances, Router router, int tp, int maxBatchTokens, int chunkTokens, double sloTtftMs,
                         double sloTpotMs, double hostBandwidthGbps, boolean sharedCopyEngine) {
        this(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, hostBandwidthGbps,
                sharedCopyEngine, true);
    }

    /** A deployment whose GPUs each copy at their link's rate, one copy engine per direction. */
    public ServingConfig(int instances, Router router, int tp, int maxBatchTokens, int chunkTokens, double sloTtftMs,
                         double sloTpotMs) {
        this(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, 0, false);
    }

    /** Default step budget (SGLang's default {@code --max-prefill-tokens}). */
    public static final int DEFAULT_MAX_BATCH_TOKENS = 8192;
    /** Default TTFT objective: 2 s, an interactive chat target for prompts of several thousand tokens. */
    public static final double DEFAULT_SLO_TTFT_MS = 2_000;
    /** Default TPOT objective: 100 ms per token (10 tokens/s, faster than reading speed). */
    public static final double DEFAULT_SLO_TPOT_MS = 100;

    /** Checks every value. */
    public ServingConfig {
        if (instances < 1) {
            throw new IllegalArgumentException("--instances must be >= 1, got " + instances);
        }
        if (router == null) {
            throw new IllegalArgumentException("router must not be null");
        }
        if (tierWeights == null) {
            throw new IllegalArgumentException("tierWeights must not be null");
        }
        if (tp < 1) {
            throw new IllegalArgumentException("--tp must be >= 1 GPU, got " + tp);
        }
        if (maxBatchTokens < 1) {
            throw new IllegalArgumentException("--max-batch-tokens must be >= 1, got " + maxBatchTokens);
        }
        if (chunkTokens < 1 || chunkTokens > maxBatchTokens) {
            throw new IllegalArgumentException("--chunk-tokens must be in 1.." + maxBatchTokens
                    + " (at most --max-batch-tokens), got " + chunkTokens);
        }
        if (!(sloTtftMs > 0) || Double.isInfinite(sloTtftMs)) {
            throw new IllegalArgumentException("--slo-ttft-ms must be a finite number > 0, got " + sloTtftMs);
        }
        if (!(sloTpotMs > 0) || Double.isInfinite(sloTpotMs)) {
            throw new IllegalArgumentException("--slo-tpot-ms must be a finite number > 0, got " + sloTpotMs);
        }
        if (!(hostBandwidthGbps >= 0) || Double.isInfinite(hostBandwidthGbps)) {
            throw new IllegalArgumentException("--host-bandwidth-gbps must be a finite number >= 0 (0: not shared), got "
                    + hostBandwidthGbps);
        }
    }

    /**
     * One GPU's host-link rate in bytes/s when all {@code gpus} GPUs of the instance copy at once: the link's
     * {@code linkBytesPerSecond}, or its share of {@link #hostBandwidthGbps} when that is smaller.
     */
    public double hostLinkBytesPerSecond(double linkBytesPerSecond, int gpus) {
        if (hostBandwidthGbps == 0) {
            return linkBytesPerSecond;
        }
        return Math.min(linkBytesPerSecond, hostBandwidthGbps * 1e9 / Math.max(1, gpus));
    }

    /** Share of each GPU's memory the engine's static pools may take (SGLang's {@code --mem-fraction-static}). */
    public static final double MEMORY_FRACTION_STATIC = 0.9;

    /**
     * The KV room of one instance in prompt tokens: on each of its {@code cp x tp} GPUs,
     * {@link #MEMORY_FRACTION_STATIC} of the HBM less its share of the whole model's weights ({@code 1/tp}:
     * layers, embedding and LM head, plus the draft's when {@code draftLayers > 0}), divided by the KV bytes of a
     * token on one GPU over the target and draft layers ({@code 1/tp} of them when TP splits the KV heads).
     * llama3-70b at TP 4 on H200 (143,771 MiB): (135.7 GB - 35.3 GB) / 80 KiB = about 1.23M tokens. At least one
     * 512-token block per GPU when the weights leave nothing.
     */
    public static long kvRoomPromptTokens(ModelPreset model, GpuPreset gpu, int tp, int cp, int draftLayers) {
        double perGpu = gpu.hbmBytes() * MEMORY_FRACTION_STATIC - (double) model.weightBytes(draftLayers) / tp;
        long tokens = (long) (perGpu / kvBytesPerTokenPerGpu(model, tp, draftLayers)) * cp;
        return Math.max(512L * tp * cp, tokens);
    }

    /** {@link #kvRoomPromptTokens(ModelPreset, GpuPreset, int, int, int)} with the model's own draft layers. */
    public static long kvRoomPromptTokens(ModelPreset model, GpuPreset gpu, int tp, int cp) {
        return kvRoomPromptTokens(model, gpu, tp, cp, model.defaultDraftLayers());
    }

    /**
     * KV bytes one token takes on one GPU of a TP group, target and draft layers: {@code 1/tp} of them when TP
     * splits the KV heads (GQA/MHA), all of them when every GPU holds the whole latent (MLA).
     */
    public static double kvBytesPerTokenPerGpu(ModelPreset model, int tp, int draftLayers) {
        double all = (double) model.kvBytesPerTokenPerLayer() * (model.layers() + Math.max(0, draftLayers));
        return model.kvShardedByTp() ? all / tp : all;
    }

    /** One instance of {@code model} on {@code gpu} at the preset's default TP, default budgets and SLOs. */
    public static ServingConfig defaults(ModelPreset model, GpuPreset gpu) {
        return new ServingConfig(1, Router.CACHE_AWARE, model.defaultTensorParallel(gpu), DEFAULT_MAX_BATCH_TOKENS,
                DEFAULT_MAX_BATCH_TOKENS, DEFAULT_SLO_TTFT_MS, DEFAULT_SLO_TPOT_MS);
    }

    /**
     * Checks {@link #tp} against the model: with GQA/MHA the KV heads are split across the TP GPUs, so
     * {@code tp} must divide them; MLA keeps one latent KV per token that every TP GPU holds whole.
     *
     * @throws IllegalArgumentException the message names {@code --tp} and the valid values
     */
    public void checkModel(ModelPreset model) {
        int heads = model.kvHeads();
        if (model.kvShardedByTp() && heads % tp != 0) {
            StringBuilder valid = new StringBuilder();
            for (int d = 1; d <= heads; d++) {
                if (heads % d == 0) {
                    valid.append(valid.isEmpty() ? "" : ", ").append(d);
                }
            }
            throw new IllegalArgumentException("--tp " + tp + " does not divide the " + heads + " KV heads of "
                    + model.cliName() + "; valid: " + valid);
        }
    }

    /** This configuration with another fleet. */
    public ServingConfig withFleet(int n, Router r) {
        return new ServingConfig(n, r, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs, hostBandwidthGbps,
                sharedCopyEngine, closedLoop, tierWeights);
    }

    /** This configuration with other router tier weights. */
    public ServingConfig withTierWeights(TierWeights w) {
        return new ServingConfig(instances, router, tp, maxBatchTokens, chunkTokens, sloTtftMs, sloTpotMs,
                hostBandwidthGbps, sharedCopyEngine, closedLoop, w);
    }
}
