package io.hicache.serve.model;

import com.github.tjake.jlama.model.DistributedContext;
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
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Jlama's {@link WeightLoader} over tensors drawn from the spec's seed: N(0, 0.05^2) matrices, norm weights near 1.
 * Each tensor has its own random stream (seed and tensor name), so the order in which Jlama loads them cannot change
 * the bytes; StrictMath makes every JVM draw the same values. Thread-safe (each load is independent).
 */
final class SeededWeights implements WeightLoader {
    private final long seed;
    private final Map<String, TensorInfo> infos = new LinkedHashMap<>();

    SeededWeights(ModelSpec m) {
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
        SplittableRandom r = new SplittableRandom(seed * 0x9E3779B97F4A7C15L ^ name.hashCode());
        boolean norm = name.endsWith("norm.weight");
        for (int i = 0; i < n; i++) {
            double u = 1.0 - r.nextDouble();
            double v = r.nextDouble();
            double g = StrictMath.sqrt(-2.0 * StrictMath.log(u)) * StrictMath.cos(2 * StrictMath.PI * v);
            fb.put(i, norm ? (float) (1.0 + 0.1 * g) : (float) (0.05 * g));
        }
        return new FloatBufferTensor(name, fb, TensorShape.of(info.shape), true);
    }

    @Override
    public DType getModelDType() {
        return DType.F32;
    }

    @Override
    public void close() {
    }
}
