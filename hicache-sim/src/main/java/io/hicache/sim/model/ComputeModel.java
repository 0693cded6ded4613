package io.hicache.sim.model;

/**
 * A deliberately simple roofline model of one GPU running one layer at a time; every time is the
 * larger of a compute term and a memory term.
 *
 * <ul>
 *   <li><b>Prefill</b> of {@code T} new tokens after {@code C} cached context tokens, per layer:
 *   FLOPs = {@code 2 * activeParams * T + attnFlops * T * (C + (T + 1) / 2)} (dense matmuls plus
 *   causal attention over the context and the new tokens), divided by
 *   {@code peakFlops * flopsEfficiency}; memory = weights read once
 *   ({@code min(totalParams, activeParams * T) * weightBytes}) over {@code hbm * memoryEfficiency}.</li>
 *   <li><b>Decode step</b> of a batch of {@code B} sequences holding {@code K} context tokens in
 *   total, per layer: memory = weights ({@code min(totalParams, activeParams * B) * weightBytes},
 *   i.e. an MoE touches more experts as the batch grows) plus the KV read
 *   ({@code K * kvBytesPerTokenPerLayer}); compute = {@code 2 * activeParams * B + attnFlops * K}.</li>
 *   <li><b>Copy</b> of {@code n} bytes over the host link: {@code launchLatency + n / (link * linkEfficiency)}.</li>
 *   <li><b>Forward step</b> of a continuous batch on an instance of {@code tp} GPUs ({@link #stepLayerNs}): the
 *   prefill chunks and the decoding sequences share one pass over the weights, so FLOPs and bytes of both
 *   parts add up before the roofline; tensor parallelism divides FLOPs, weight bytes and (when the KV heads
 *   are sharded) KV bytes by {@code tp}, and adds two all-reduces per layer (after attention and after the
 *   MLP) of {@code tokens x hidden x 2} bytes: a ring all-reduce moves {@code 2 (tp-1)/tp} of that over
 *   each GPU's NVLink at {@link #DEFAULT_NVLINK_EFFICIENCY} of the preset bandwidth, plus
 *   {@link #ALL_REDUCE_LATENCY_NS} per call.</li>
 * </ul>
 * Immutable and thread-safe.
 *
 * @param model            the model preset
 * @param gpu              the GPU preset
 * @param flopsEfficiency  fraction of peak FLOP/s reached (0, 1]; {@link #DEFAULT_FLOPS_EFFICIENCY}
 * @param memoryEfficiency fraction of peak HBM bandwidth reached (0, 1]; {@link #DEFAULT_MEMORY_EFFICIENCY}
 * @param linkEfficiency   fraction of peak host-link bandwidth reached (0, 1]; {@link #DEFAULT_LINK_EFFICIENCY}
 */
public record ComputeModel(ModelPreset model, GpuPreset gpu, double flopsEfficiency, double memoryEfficiency,
                           double linkEfficiency) {

    /** Typical model FLOPs utilisation of a large prefill. */
    public static final double DEFAULT_FLOPS_EFFICIENCY = 0.5;
    /** Typical achieved fraction of HBM bandwidth in decode. */
    public static final double DEFAULT_MEMORY_EFFICIENCY = 0.8;
    /** Typical achieved fraction of the host link with pinned memory (about 55 GB/s on PCIe 5.0 x16). */
    public static final double DEFAULT_LINK_EFFICIENCY = 0.87;

    /** Typical achieved fraction of NVLink bandwidth in a ring all-reduce. */
    public static final double DEFAULT_NVLINK_EFFICIENCY = 0.8;
    /** Fixed cost of one all-reduce inside an NVLink node (a custom or NCCL all-reduce of a few KB), ns. */
    public static final long ALL_REDUCE_LATENCY_NS = 5_000;

    /** Validates the efficiencies. */
    public ComputeModel {
        check("flopsEfficiency", flopsEfficiency);
        check("memoryEfficiency", memoryEfficiency);
        check("linkEfficiency", linkEfficiency);
    }

    /** The model with the default efficiencies. */
    public static ComputeModel of(ModelPreset model, GpuPreset gpu) {
        return new ComputeModel(model, gpu, DEFAULT_FLOPS_EFFICIENCY, DEFAULT_MEMORY_EFFICIENCY,
                DEFAULT_LINK_EFFICIENCY);
    }

    /** Time of one layer of a prefill of {@code newTokens} after {@code contextTokens} cached ones, ns. */
    public long prefillLayerNs(long newTokens, long contextTokens) {
        if (newTokens <= 0) {
            return 0;
        }
        double flops = 2.0 * model.activeParamsPerLayer() * newTokens
                + (double) model.attnFlopsPerContextToken() * newTokens * (contextTokens + (newTokens + 1) / 2.0);
        double weightBytes = Math.min(model.totalParamsPerLayer(),
                model.activeParamsPerLayer() * (double) newTokens) * model.weightBytesPerParam();
        return Math.max(computeNs(flops), memoryNs(weightBytes));
    }

    /** Time of one layer of one decode step of {@code batch} sequences with {@code contextTokens} in total, ns. */
    public long decodeStepLayerNs(int batch, long contextTokens) {
        if (batch <= 0) {
            return 0;
        }
        double flops = 2.0 * model.activeParamsPerLayer() * batch
                + (double) model.attnFlopsPerContextToken() * contextTokens;
        double bytes = Math.min(model.totalParamsPerLayer(), model.activeParamsPerLayer() * (double) batch)
                * model.weightBytesPerParam()
                + (double) contextTokens * model.kvBytesPerTokenPerLayer();
        return Math.max(computeNs(flops), memoryNs(bytes));
    }

    /**
     * Time of one layer of one forward step of a continuous batch on {@code tp} GPUs, ns.
     *
     * @param prefillTokens       new prompt tokens computed in this step (all chunks)
     * @param prefillAttnPairs    attention pairs of the chunks: the sum over chunks of
     *                            {@code newTokens * (contextTokens + (newTokens + 1) / 2)}
     * @param decodeBatch         decoding sequences (one new token each)
     * @param decodeContextTokens context tokens those sequences hold in total
     * @param tp                  tensor-parallel GPUs (>= 1)
     */
    public long stepLayerNs(long prefillTokens, double prefillAttnPairs, int decodeBatch, long decodeContextTokens,
                            int tp) {
        return stepLayerNs(prefillTokens, prefillAttnPairs, decodeBatch, decodeContextTokens, tp, 1);
    }

    /**
     * Time of one layer of one forward step on one rank of a context-parallel group of {@code cp} ranks, each an
     * instance of {@code tp} GPUs holding the whole model and {@code 1/cp} of every sequence's tokens and KV: the
     * prefill tokens and their attention pairs split over the ranks, the KV a decode step reads too, while every rank
     * computes each decoding sequence's new token through the full weights (its attention over its own share of the
     * context, merged across ranks; the merge's small exchange is not modelled). So a long prefill runs about
     * {@code cp} times faster and a decode step, bound by its weight reads, hardly faster. {@code cp = 1} is
     * {@link #stepLayerNs(long, double, int, long, int)}.
     *
     * @param cp context-parallel ranks (>= 1)
     * @throws IllegalArgumentException if {@code cp < 1}
     */
    public long stepLayerNs(long prefillTokens, double prefillAttnPairs, int decodeBatch, long decodeContextTokens,
                            int tp, int cp) {
        if (cp < 1) {
            throw new IllegalArgumentException("cp " + cp + " must be >= 1");
        }
        if (cp > 1) {
            prefillTokens = (prefillTokens + cp - 1) / cp;
            prefillAttnPairs /= cp;
            decodeContextTokens = (decodeContextTokens + cp - 1) / cp;
        }
        long tokens = prefillTokens + decodeBatch;
        if (tokens <= 0) {
            return 0;
        }
        double flops = 2.0 * model.activeParamsPerLayer() * tokens
                + (double) model.attnFlopsPerContextToken() * (prefillAttnPairs + decodeContextTokens);
        double weightBytes = Math.min(model.totalParamsPerLayer(), model.activeParamsPerLayer() * (double) tokens)
                * model.weightBytesPerParam();
        double kvBytes = (double) decodeContextTokens * model.kvBytesPerTokenPerLayer();
        double perGpuBytes = weightBytes / tp + (model.kvShardedByTp() ? kvBytes / tp : kvBytes);
        long local = Math.max(computeNs(flops / tp), memoryNs(perGpuBytes));
        return local + allReduceLayerNs(tokens, tp);
    }

    /** Time of the two all-reduces of one layer over {@code tokens} tokens on {@code tp} GPUs (0 for tp 1), ns. */
    public long allReduceLayerNs(long tokens, int tp) {
        if (tp <= 1 || tokens <= 0) {
            return 0;
        }
        double bytes = (double) tokens * model.hiddenSize() * 2 * 2.0 * (tp - 1) / tp;
        return 2 * (ALL_REDUCE_LATENCY_NS
                + (long) Math.ceil(bytes * 1e9 / (gpu.nvlinkBytesPerSecond() * DEFAULT_NVLINK_EFFICIENCY)));
    }

    /** Time of one async copy of {@code bytes} over the host link (either direction), ns. */
    public long copyNs(long bytes) {
        return gpu.copyLaunchLatencyNs()
                + (long) Math.ceil(bytes * 1e9 / (gpu.hostLinkBytesPerSecond() * linkEfficiency));
    }

    /** KV bytes of {@code tokens} tokens in one layer. */
    public long kvBytesPerLayer(long tokens) {
        return tokens * model.kvBytesPerTokenPerLayer();
    }

    private long computeNs(double flops) {
        return (long) Math.ceil(flops * 1e9 / (gpu.denseBf16FlopsPerSecond() * flopsEfficiency));
    }

    private long memoryNs(double bytes) {
        return (long) Math.ceil(bytes * 1e9 / (gpu.hbmBytesPerSecond() * memoryEfficiency));
    }

    private static void check(String name, double v) {
        if (!(v > 0 && v <= 1)) {
            throw new IllegalArgumentException(name + " must be in (0, 1], got " + v);
        }
    }
}
