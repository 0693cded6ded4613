package io.hicache.examples.jlama;

import com.github.tjake.jlama.model.llama.LlamaModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.WeightLoader;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Jlama's {@link LlamaModel} with a listener around every transformer block: the only place this example
 * reaches into Jlama. It overrides the public {@code forward(embedding, startPos, kvBuffer, reducer)} with the
 * same loop {@code AbstractModel.forward} runs (the blocks are the protected {@code transformerBlocks}), adding
 * {@link LayerListener#beforeLayer} and {@link LayerListener#afterLayer} calls; the arithmetic is Jlama's,
 * unchanged. Jlama's {@code batchForward} splits a prompt into chunks of {@code jlama.max_batch_size} (256)
 * tokens and calls this once per chunk.
 *
 * <p>Not thread-safe: one forward thread drives a model instance (as Jlama's own {@code generate} does).
 */
public final class HookedLlamaModel extends LlamaModel {

    /** Called on the forward thread around each block; {@code startPos} and {@code tokens} describe the chunk. */
    public interface LayerListener {
        /** Before block {@code layer} reads the KV of positions below {@code startPos}. */
        void beforeLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv);

        /** After block {@code layer} wrote the KV of positions {@code [startPos, startPos + tokens)}. */
        void afterLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv);
    }

    private LayerListener listener;

    HookedLlamaModel(Config config, WeightLoader weights) {
        super(config, weights, null, DType.F32, DType.F32, Optional.empty());
    }

    @Override
    public AbstractTensor forward(AbstractTensor embedding, int startPos, KvBufferCache.KvBuffer kv,
                                  Optional<Consumer<List<AbstractTensor>>> reducer) {
        LayerListener l = listener;
        int tokens = embedding.shape().first();
        for (int i = c.dctx().layerStart; i < c.dctx().layerEnd; i++) {
            if (l != null) {
                l.beforeLayer(i, startPos, tokens, kv);
            }
            AbstractTensor ref = embedding;
            embedding = transformerBlocks[i - c.dctx().layerStart].forward(embedding, startPos, kv, reducer);
            ref.close();
            if (l != null) {
                l.afterLayer(i, startPos, tokens, kv);
            }
        }
        return embedding;
    }

    /** A fresh, private KV buffer for one request (Jlama's own paged per-session memory). */
    public KvBufferCache.KvBuffer newKvBuffer() {
        return kvBufferCache.getEphemeralKvBuffer();
    }

    /**
     * Runs positions {@code [from, tokens.length)} of {@code tokens} through the model with {@code l} around every
     * block (null: none), reading positions below {@code from} from {@code kv}.
     *
     * @return the output of the last position (close it)
     */
    public AbstractTensor prefill(int[] tokens, int from, KvBufferCache.KvBuffer kv, LayerListener l) {
        if (from < 0 || from >= tokens.length) {
            throw new IllegalArgumentException("from " + from + " must be in 0.." + (tokens.length - 1));
        }
        listener = l;
        try (AbstractTensor out = batchForward(Arrays.copyOfRange(tokens, from, tokens.length), from, kv)) {
            AbstractTensor last = makeDenseTensor(1, c.embeddingLength);
            last.copyFrom(out, out.getOffset(out.shape().first() - 1, 0), 0, c.embeddingLength);
            return last;
        } finally {
            listener = null;
        }
    }

    /** One decode step: the token at {@code pos}, no listener. @return its output (close it) */
    public AbstractTensor decode(int token, int pos, KvBufferCache.KvBuffer kv) {
        return forward(token, pos, kv, Optional.empty());
    }

    /**
     * Greedy sampling through Jlama's own output head: writes the raw logits of {@code output} into
     * {@code logits} (length = vocabulary) and returns the arg-max token.
     */
    public int greedy(AbstractTensor output, float[] logits) {
        try (AbstractTensor t = makeDenseTensor(1, c.vocabularySize)) {
            int next = sample(output, 0f, 0f, t);
            MemorySegment s = t.getMemorySegment();
            MemorySegment.copy(s, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, logits, 0, c.vocabularySize);
            return next;
        }
    }
}
