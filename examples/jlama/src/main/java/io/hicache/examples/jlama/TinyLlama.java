package io.hicache.examples.jlama;

import com.github.tjake.jlama.math.ActivationFunction;
import com.github.tjake.jlama.model.DistributedContext;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.TensorInfo;
import com.github.tjake.jlama.safetensors.WeightLoader;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.FloatBufferTensor;
import com.github.tjake.jlama.tensor.TensorShape;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * A small Llama (grouped-query attention, SiLU MLP, RoPE, RMSNorm) with weights drawn from a seed at run
 * time: nothing is downloaded. The same spec gives the same weights bit for bit, so two model instances
 * built from it compute the same function. Immutable; thread-safe.
 *
 * @param layers        transformer blocks, 1..64
 * @param hidden        embedding width, a multiple of {@code heads} and of 64
 * @param heads         query heads
 * @param kvHeads       key/value heads; divides {@code heads} (fewer than {@code heads}: GQA)
 * @param ffn           MLP width, a multiple of 64
 * @param vocab         vocabulary size, a multiple of 64
 * @param contextTokens the longest sequence a request may reach
 * @param seed          the weights' seed
 */
public record TinyLlama(int layers, int hidden, int heads, int kvHeads, int ffn, int vocab, int contextTokens, long seed) {

    /** Token id Jlama treats as beginning-of-sequence; our prompts are token ids and do not need it. */
    static final int BOS = 1;

    public TinyLlama {
        if (layers < 1 || layers > 64) {
            throw new IllegalArgumentException("layers " + layers + " must be in 1..64");
        }
        if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0) {
            throw new IllegalArgumentException("heads " + heads + " must be a positive multiple of kvHeads " + kvHeads);
        }
        if (hidden < 64 || hidden % 64 != 0 || hidden % heads != 0 || (hidden / heads) % 2 != 0) {
            throw new IllegalArgumentException("hidden " + hidden + " must be a multiple of 64 and of heads " + heads
                + " with an even head size");
        }
        if (ffn < 64 || ffn % 64 != 0 || vocab < 64 || vocab % 64 != 0) {
            throw new IllegalArgumentException("ffn " + ffn + " and vocab " + vocab + " must be multiples of 64");
        }
        if (contextTokens < 2) {
            throw new IllegalArgumentException("contextTokens " + contextTokens + " must be >= 2");
        }
    }

    /** The demo's default shape: 4 layers, hidden 256, 8 query heads over 2 KV heads, vocabulary 4096. */
    public static TinyLlama demo(int layers, int contextTokens, long seed) {
        return new TinyLlama(layers, 256, 8, 2, 512, 4096, contextTokens, seed);
    }

    public int headSize() {
        return hidden / heads;
    }

    /** Floats of K (or of V) per token per layer. */
    public int kvWidth() {
        return kvHeads * headSize();
    }

    /** Jlama's configuration for this shape. */
    public Config config() {
        return new Config(contextTokens, hidden, ffn, heads, kvHeads, layers, 1e-5f, vocab, BOS, List.of(2),
            ActivationFunction.Type.SILU, 10_000.0, null, headSize(), null, null);
    }

    /** A new model instance: its own weights (regenerated from the seed) and its own KV memory. */
    public HookedLlamaModel newModel() {
        return new HookedLlamaModel(config(), new SeededWeights(this));
    }

    /**
     * Jlama's {@link WeightLoader} over seeded tensors: N(0, 0.05^2) matrices, norm weights near 1. Each tensor
     * comes from its own stream (seed and name), so the parallel loading Jlama does cannot change the bytes.
     */
    static final class SeededWeights implements WeightLoader {
        private final long seed;
        private final Map<String, TensorInfo> infos = new LinkedHashMap<>();

        SeededWeights(TinyLlama m) {
            this.seed = m.seed();
            int q = m.heads() * m.headSize();
            put("model.embed_tokens.weight", m.vocab(), m.hidden());
            for (int l = 0; l < m.layers(); l++) {
                String b = "model.layers." + l + ".";
                put(b + "self_attn.q_proj.weight", q, m.hidden());
                put(b + "self_attn.k_proj.weight", m.kvWidth(), m.hidden());
                put(b + "self_attn.v_proj.weight", m.kvWidth(), m.hidden());
                put(b + "self_attn.o_proj.weight", m.hidden(), q);
                put(b + "mlp.gate_proj.weight", m.ffn(), m.hidden());
                put(b + "mlp.down_proj.weight", m.hidden(), m.ffn());
                put(b + "mlp.up_proj.weight", m.ffn(), m.hidden());
                put(b + "input_layernorm.weight", m.hidden());
                put(b + "post_attention_layernorm.weight", m.hidden());
            }
            put("model.norm.weight", m.hidden());
            put("lm_head.weight", m.vocab(), m.hidden());
        }

        private void put(String name, long... shape) {
            infos.put(name, new TensorInfo(DType.F32, shape, new long[] {0, 0}));
        }

        @Override
        public Map<String, String> metadata() {
            return Map.of();
        }

        @Override
        public Map<String, TensorInfo> tensorInfoMap() {
            return infos;
        }

        @Override
        public AbstractTensor load(String name, DistributedContext dctx, boolean sparseRows, boolean sparseColumns) {
            TensorInfo info = infos.get(name);
            if (info == null) {
                throw new IllegalArgumentException("no tensor named " + name);
            }
            int n = 1;
            for (int d : info.shape) {
                n = Math.multiplyExact(n, d);
            }
            FloatBuffer fb = ByteBuffer.allocateDirect(n * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
            SplittableRandom r = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + name.hashCode());
            boolean norm = name.endsWith("norm.weight");
            for (int i = 0; i < n; i++) {
                double g = gaussian(r);
                fb.put(i, norm ? (float) (1.0 + 0.1 * g) : (float) (0.05 * g));
            }
            return new FloatBufferTensor(name, fb, TensorShape.of(info.shape), true);
        }

        /** Box-Muller on one stream: StrictMath, so every JVM and JIT tier draws the same weights. */
        private static double gaussian(SplittableRandom r) {
            double u = 1.0 - r.nextDouble();
            double v = r.nextDouble();
            return StrictMath.sqrt(-2.0 * StrictMath.log(u)) * StrictMath.cos(2 * Math.PI * v);
        }

        @Override
        public DType getModelDType() {
            return DType.F32;
        }

        @Override
        public void close() {
        }
    }
}
