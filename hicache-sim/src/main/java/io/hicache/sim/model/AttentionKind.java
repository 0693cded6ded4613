package io.hicache.sim.model;

/** How a model stores its KV cache. */
public enum AttentionKind {
    /** Grouped-query attention: K and V per KV head. */
    GQA,
    /** Multi-head latent attention: one compressed latent plus a decoupled RoPE key per token. */
    MLA
}
