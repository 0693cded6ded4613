package io.hicache.sim.model;

import io.hicache.core.memory.AttentionKind;
import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Registry of model presets: the per-layer numbers the compute model and the KV pools need.
 * Immutable and thread-safe.
 *
 * <p>Parameter counts per layer are computed from the published {@code config.json} shapes
 * (attention projections + MLP/MoE + norms); the input embedding, the LM head (untied in every preset) and
 * the final norm are counted apart ({@link #embeddingParams}), so {@link #weightBytes} is the whole model as
 * it sits in GPU memory. Attention FLOPs are {@code attnFlopsPerContextToken} per new token, per context
 * token, per layer (QK^T plus AV, 2 FLOPs per multiply-add).
 */
public enum ModelPreset {
    /**
     * Llama 3 70B. Source: meta-llama/Meta-Llama-3-70B config.json (Llama 3 model card, April 2024):
     * 80 layers, hidden 8192, 64 query heads, 8 KV heads of dim 128, intermediate 28672, bf16.
     * Per layer: q,o 8192x8192 each, k,v 8192x1024 each, MLP 3x8192x28672, norms 2x8192
     * = 855,654,400 params. Embedding and LM head 2 x 128,256 x 8192 plus the final norm = 2,101,354,496
     * params: 70,553,706,496 in all (141.1 GB of bf16). KV: 2 (K,V) x 8 heads x 128 x 2 bytes = 4096 B per
     * token per layer, x 80 layers = 320 KiB per token. Attention: 2 x 2 x 64 x 128 = 32768 FLOPs per
     * context token.
     */
    LLAMA3_70B("llama3-70b", AttentionKind.MHA, 80, 4096, 855_654_400L, 855_654_400L, 2_101_354_496L,
            855_654_400L, 2, 32_768L, 0),
    /**
     * Llama 3 8B. Source: meta-llama/Meta-Llama-3-8B config.json: 32 layers, hidden 4096, 32 query
     * heads, 8 KV heads of dim 128, intermediate 14336, bf16. Per layer: q,o 4096x4096, k,v
     * 4096x1024, MLP 3x4096x14336, norms = 218,112,000 params. Embedding and LM head 2 x 128,256 x 4096
     * plus the final norm = 1,050,677,248 params: 8,030,261,248 in all (16.06 GB of bf16). KV: 4096 B per
     * token per layer, x 32 = 128 KiB per token. Attention: 2 x 2 x 32 x 128 = 16384 FLOPs per context token.
     */
    LLAMA3_8B("llama3-8b", AttentionKind.MHA, 32, 4096, 218_112_000L, 218_112_000L, 1_050_677_248L,
            218_112_000L, 2, 16_384L, 0),
    /**
     * DeepSeek-V3. Sources: deepseek-ai/DeepSeek-V3 config.json and the technical report
     * (arXiv:2412.19437): 61 layers, MLA with kv_lora_rank 512 and qk_rope_head_dim 64, so the cache
     * holds 512 + 64 = 576 values x 2 bytes = 1152 B per token per layer (70,272 B per token);
     * 671B total / 37B activated parameters, FP8 weights (1 byte); num_nextn_predict_layers 1 (one
     * MTP module, used as the draft, so {@code defaultDraftLayers} = 1). Per layer (embeddings of
     * 129,280 x 7168 removed): about 10.97e9 total and 0.609e9 activated params; embedding and LM head
     * 2 x 129,280 x 7168 plus the final norm = 1,853,365,248 params, so 671.0B in all (671 GB of FP8). The
     * MTP module holds 14B parameters of its own (the model card's 685B = 671B + 14B), counted as one
     * draft layer's weights. Attention with the absorbed MLA weights: 128 heads x (576 score + 512 value)
     * x 2 = 278,528 FLOPs per context token.
     */
    DEEPSEEK_V3("deepseek-v3", AttentionKind.MLA, 61, 1152, 10_970_000_000L, 609_000_000L, 1_853_365_248L,
            14_000_000_000L, 1, 278_528L, 1);

    /** The preset used when none is named. */
    public static final ModelPreset DEFAULT = LLAMA3_70B;

    private final String cliName;
    private final AttentionKind attention;
    private final int layers;
    private final long kvBytesPerTokenPerLayer;
    private final long totalParamsPerLayer;
    private final long activeParamsPerLayer;
    private final long embeddingParams;
    private final long draftParamsPerLayer;
    private final int weightBytesPerParam;
    private final long attnFlopsPerContextToken;
    private final int defaultDraftLayers;

    ModelPreset(String cliName, AttentionKind attention, int layers, long kvBytesPerTokenPerLayer,
                long totalParamsPerLayer, long activeParamsPerLayer, long embeddingParams, long draftParamsPerLayer,
                int weightBytesPerParam, long attnFlopsPerContextToken, int defaultDraftLayers) {
        this.cliName = cliName;
        this.attention = attention;
        this.layers = layers;
        this.kvBytesPerTokenPerLayer = kvBytesPerTokenPerLayer;
        this.totalParamsPerLayer = totalParamsPerLayer;
        this.activeParamsPerLayer = activeParamsPerLayer;
        this.embeddingParams = embeddingParams;
        this.draftParamsPerLayer = draftParamsPerLayer;
        this.weightBytesPerParam = weightBytesPerParam;
        this.attnFlopsPerContextToken = attnFlopsPerContextToken;
        this.defaultDraftLayers = defaultDraftLayers;
    }

    /** The name used on the command line. */
    public String cliName() {
        return cliName;
    }

    /** KV layout. */
    public AttentionKind attention() {
        return attention;
    }

    /** Transformer layers of the target model. */
    public int layers() {
        return layers;
    }

    /** KV cache bytes one token occupies in one layer. */
    public long kvBytesPerTokenPerLayer() {
        return kvBytesPerTokenPerLayer;
    }

    /** KV cache bytes one token occupies over all target layers. */
    public long kvBytesPerToken() {
        return kvBytesPerTokenPerLayer * layers;
    }

    /** All parameters of one layer (every expert for MoE). */
    public long totalParamsPerLayer() {
        return totalParamsPerLayer;
    }

    /** Parameters one token passes through in one layer (activated experts for MoE). */
    public long activeParamsPerLayer() {
        return activeParamsPerLayer;
    }

    /** Bytes per weight (2 for bf16, 1 for fp8). */
    public int weightBytesPerParam() {
        return weightBytesPerParam;
    }

    /** Attention FLOPs per new token per context token per layer. */
    public long attnFlopsPerContextToken() {
        return attnFlopsPerContextToken;
    }

    /** Draft layers the model brings (MTP modules); 0 when it has none. */
    public int defaultDraftLayers() {
        return defaultDraftLayers;
    }

    /**
     * KV heads of the target model (GQA/MHA), split across the tensor-parallel GPUs of an instance; MLA
     * caches one latent vector per token, counted as 1 head, which every TP GPU holds whole.
     * Llama 3 70B and 8B: 8 ({@code num_key_value_heads}); DeepSeek-V3: 1 latent.
     */
    public int kvHeads() {
        return switch (this) {
            case LLAMA3_70B, LLAMA3_8B -> 8;
            case DEEPSEEK_V3 -> 1;
        };
    }

    /** Whether tensor parallelism splits the KV heads (GQA/MHA) rather than replicating the KV (MLA). */
    public boolean kvShardedByTp() {
        return attention != AttentionKind.MLA;
    }

    /** Hidden size ({@code hidden_size} of config.json): the width of each tensor-parallel all-reduce. */
    public int hiddenSize() {
        return switch (this) {
            case LLAMA3_70B -> 8192;
            case LLAMA3_8B -> 4096;
            case DEEPSEEK_V3 -> 7168;
        };
    }

    /** Parameters outside the layers: the input embedding, the LM head and the final norm. */
    public long embeddingParams() {
        return embeddingParams;
    }

    /**
     * Parameters of one draft layer: DeepSeek-V3's MTP module as published (14B); for the Llama presets, which
     * bring no draft, one target layer (an EAGLE-style draft head is about one decoder layer).
     */
    public long draftParamsPerLayer() {
        return draftParamsPerLayer;
    }

    /** Bytes of the whole model's weights: every layer (every expert for MoE), the embedding and the LM head. */
    public long weightBytes() {
        return (totalParamsPerLayer * layers + embeddingParams) * weightBytesPerParam;
    }

    /** Bytes of the weights with {@code draftLayers} draft layers loaded beside the target. */
    public long weightBytes(int draftLayers) {
        return weightBytes() + draftParamsPerLayer * Math.max(0, draftLayers) * weightBytesPerParam;
    }

    /**
     * The tensor-parallel degree a deployment would use on {@code gpu}: llama3-8b (16 GB of bf16 weights)
     * fits one GPU, TP 1. llama3-70b (about 140 GB of bf16 weights) would fill a whole H200 and take half
     * of two, leaving about 60 GB per GPU for KV and activations; TP 4 leaves about 90 GB per GPU, i.e.
     * about 1.1M tokens of KV per instance for a trace whose prompts average 12k tokens, and quarters the
     * prefill time of such a prompt (about 0.9 s instead of 1.7 s at TP 2), so TP 4 is the default on every
     * preset GPU. DeepSeek-V3 (about 670 GB of FP8 weights) needs a whole 8-GPU node: TP 8, as in SGLang's
     * and DeepSeek's single-node recipes.
     */
    public int defaultTensorParallel(GpuPreset gpu) {
        return switch (this) {
            case LLAMA3_8B -> 1;
            case LLAMA3_70B -> 4;
            case DEEPSEEK_V3 -> 8;
        };
    }

    /**
     * The preset with this command-line name (case-insensitive).
     *
     * @throws UnknownPresetException the message lists the valid names
     */
    public static ModelPreset byName(String name) {
        for (ModelPreset m : values()) {
            if (m.cliName.equalsIgnoreCase(name)) {
                return m;
            }
        }
        throw new UnknownPresetException("model", name, names());
    }

    /** The valid names, comma-separated. */
    public static String names() {
        return Arrays.stream(values()).map(ModelPreset::cliName).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return cliName;
    }
}
