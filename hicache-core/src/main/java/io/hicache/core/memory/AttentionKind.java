package io.hicache.core.memory;

/**
 * How a model stores its KV cache per layer, which fixes the number of device buffers per layer.
 * Immutable; thread-safe.
 */
public enum AttentionKind {
    /** Multi-head (or grouped-query) attention: two buffers per layer, K (index 0) and V (index 1). */
    MHA(2),
    /**
     * Multi-head latent attention (DeepSeek style): one latent buffer per layer whose width per token is
     * {@code kv_lora_rank + qk_rope_head_dim} elements.
     */
    MLA(1);

    /** Buffer index of K for {@link #MHA}. */
    public static final int K = 0;
    /** Buffer index of V for {@link #MHA}. */
    public static final int V = 1;
    /** Buffer index of the latent buffer for {@link #MLA}. */
    public static final int LATENT = 0;

    private final int bufferCount;

    AttentionKind(int bufferCount) {
        this.bufferCount = bufferCount;
    }

    /** Buffers per layer: 2 for MHA, 1 for MLA. */
    public int bufferCount() {
        return bufferCount;
    }
}
