package io.hicache.serve.model;

import com.github.tjake.jlama.math.ActivationFunction;
import com.github.tjake.jlama.safetensors.Config;

import java.util.List;
import java.util.Locale;

/**
 * The shape of the seeded Llama the engine serves (grouped-query attention, SiLU MLP, RoPE, RMSNorm) and the seed of
 * its weights: the same spec gives the same weights bit for bit, so two engines started with it compute the same
 * function. Immutable; thread-safe.
 *
 * @param name          the preset's name, or null for a shape given as numbers
 * @param layers        transformer blocks, 1..64
 * @param hidden        embedding width: a multiple of 64 and of {@code heads}, with an even head size
 * @param heads         query heads
 * @param kvHeads       key/value heads; divides {@code heads}
 * @param ffn           MLP width, a multiple of 64
 * @param vocab         vocabulary size, a multiple of 64 and at least {@link ByteTokenizer#MIN_VOCAB}: the byte
 *                      tokenizer uses the first ids, the rest are reachable through {@code input_ids} only
 * @param contextTokens the longest sequence (prompt and generated tokens) a request may reach
 * @param seed          the weights' seed
 */
public record ModelSpec(String name, int layers, int hidden, int heads, int kvHeads, int ffn, int vocab, int contextTokens,
                        long seed) {
    /** The default context (the issue asks for at least 4,096 tokens). */
    public static final int DEFAULT_CONTEXT = 4096;
    /** The default weights' seed. */
    public static final long DEFAULT_SEED = 17;

    public ModelSpec {
        if (layers < 1 || layers > 64) {
            throw new IllegalArgumentException("layers " + layers + " must be in 1..64");
        }
        if (heads < 1 || kvHeads < 1 || heads % kvHeads != 0) {
            throw new IllegalArgumentException("heads " + heads + " must be a positive multiple of kv heads " + kvHeads);
        }
        if (hidden < 64 || hidden % 64 != 0 || hidden % heads != 0 || (hidden / heads) % 2 != 0) {
            throw new IllegalArgumentException("hidden " + hidden + " must be a multiple of 64 and of heads " + heads
                + " with an even head size");
        }
        if (ffn < 64 || ffn % 64 != 0) {
            throw new IllegalArgumentException("ffn " + ffn + " must be a multiple of 64");
        }
        if (vocab % 64 != 0 || vocab < ByteTokenizer.MIN_VOCAB) {
            throw new IllegalArgumentException("vocab " + vocab + " must be a multiple of 64 and at least "
                + ByteTokenizer.MIN_VOCAB + " (the byte tokenizer's ids)");
        }
        if (contextTokens < 32 || contextTokens > 1 << 20) {
            throw new IllegalArgumentException("context " + contextTokens + " must be in 32..1048576 tokens");
        }
    }

    /**
     * Parses {@code tiny}, {@code small} or {@code LAYERS,HIDDEN,HEADS,KV_HEADS,FFN,VOCAB}.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    public static ModelSpec parse(String s, int contextTokens, long seed) {
        if (s == null || s.isBlank()) {
            throw new IllegalArgumentException("--model must be tiny, small or LAYERS,HIDDEN,HEADS,KV_HEADS,FFN,VOCAB");
        }
        switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "tiny":
                return new ModelSpec("tiny", 4, 256, 4, 2, 512, 512, contextTokens, seed);
            case "small":
                return new ModelSpec("small", 8, 512, 8, 4, 1408, 1024, contextTokens, seed);
            default:
                break;
        }
        String[] p = s.split(",");
        if (p.length != 6) {
            throw new IllegalArgumentException("--model " + s + ": expected tiny, small or six numbers "
                + "LAYERS,HIDDEN,HEADS,KV_HEADS,FFN,VOCAB");
        }
        int[] v = new int[6];
        for (int i = 0; i < 6; i++) {
            try {
                v[i] = Integer.parseInt(p[i].trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--model " + s + ": '" + p[i].trim() + "' is not a number", e);
            }
        }
        return new ModelSpec(null, v[0], v[1], v[2], v[3], v[4], v[5], contextTokens, seed);
    }

    /** The id clients see in {@code /v1/models} (they may also say {@code default}). */
    public String id() {
        String shape = name != null ? name : layers + "x" + hidden + "-h" + heads + "kv" + kvHeads + "-f" + ffn + "-v" + vocab;
        return "hicache-llama-" + shape + (seed == DEFAULT_SEED ? "" : "-s" + seed);
    }

    /** Head size. */
    public int headSize() {
        return hidden / heads;
    }

    /** Floats of K (or of V) per token per layer. */
    public int kvWidth() {
        return kvHeads * headSize();
    }

    /** Bytes of K (or V) per token per layer (float32). */
    public long kvBytesPerTokenPerBuffer() {
        return (long) kvWidth() * Float.BYTES;
    }

    /**
     * Positions Jlama's RoPE table holds beyond {@link #contextTokens}. Jlama 0.8.4's {@code CausalSelfAttention}
     * reads the frequencies of KV head {@code h} at {@code position * headSize / 2 + h * headSize}, that is at the
     * row of position {@code position + 2h} (queries use their group's KV head, so attention stays relative and the
     * arithmetic is consistent), and it sizes the table by the configuration's context: with a table of exactly
     * {@code contextTokens} rows, positions past {@code contextTokens - 2 * kvHeads + 1} overran it. The engine serves
     * {@code contextTokens}; Jlama's configuration gets these extra rows so the last position's heads stay inside.
     */
    public int ropeSlack() {
        return 2 * (kvHeads - 1);
    }

    /**
     * Jlama's configuration for this shape: its context is {@link #contextTokens} plus {@link #ropeSlack()} (the RoPE
     * table's rows; a row's values do not depend on the table's length, so the function computed is unchanged).
     */
    public Config config() {
        return new Config(contextTokens + ropeSlack(), hidden, ffn, heads, kvHeads, layers, 1e-5f, vocab, ByteTokenizer.BOS,
            List.of(ByteTokenizer.EOS), ActivationFunction.Type.SILU, 10_000.0, null, headSize(), null, null);
    }

    /** A new model instance with its own weights (drawn from the seed) and its own KV memory. */
    public StepModel newModel() {
        return new StepModel(config(), contextTokens, new SeededWeights(this));
    }

    /** One line for logs. */
    public String describe() {
        return String.format(Locale.ROOT, "%s: %d layers, hidden %d, %d heads over %d KV heads, ffn %d, vocab %d, "
            + "context %d, seed %d", id(), layers, hidden, heads, kvHeads, ffn, vocab, contextTokens, seed);
    }
}
