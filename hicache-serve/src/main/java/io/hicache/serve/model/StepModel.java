package io.hicache.serve.model;

import com.github.tjake.jlama.model.llama.LlamaModel;
import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.safetensors.WeightLoader;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import com.github.tjake.jlama.tensor.PagedKvBuffer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * Jlama's {@link LlamaModel} driven one step at a time: a prefill chunk of one sequence or one decode token, with a
 * listener around every transformer block (where the engine waits for loaded layers and calls the cache's hooks),
 * over Jlama's own KV buffer or one over the caller's pages ({@link #newKvBuffer(int, PagedKvBuffer.Pages)}). It overrides the public {@code forward(embedding, startPos, kvBuffer, reducer)} with the loop
 * {@code AbstractModel.forward} runs, adding the listener calls; the arithmetic is Jlama's, unchanged. Unlike Jlama's
 * {@code batchForward} it does not split a chunk: the engine chooses the chunk size ({@code --chunk-tokens}).
 *
 * <p>Not thread-safe: one thread (the engine's) drives an instance, as Jlama's own {@code generate} does.
 */
public final class StepModel extends LlamaModel {

    /** Called on the engine thread around each block; {@code startPos} and {@code tokens} describe the chunk. */
    public interface LayerListener {
        /** Before block {@code layer} reads the KV of positions below {@code startPos}. */
        void beforeLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv);

        /** After block {@code layer} wrote the KV of positions {@code [startPos, startPos + tokens)}. */
        void afterLayer(int layer, int startPos, int tokens, KvBufferCache.KvBuffer kv);
    }

    private final int contextTokens;
    private LayerListener listener;

    StepModel(Config config, int contextTokens, WeightLoader weights) {
        super(config, weights, null, DType.F32, DType.F32, Optional.empty());
        if (contextTokens > config.contextLength) {
            throw new IllegalArgumentException("context " + contextTokens + " exceeds Jlama's " + config.contextLength);
        }
        this.contextTokens = contextTokens;
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

    /** A fresh KV buffer for one request (Jlama's own paged per-sequence memory). Close it when done. */
    public KvBufferCache.KvBuffer newKvBuffer() {
        return kvBufferCache.getEphemeralKvBuffer();
    }

    /**
     * A KV buffer over memory the caller owns, {@code pageSize} positions per page (the engine's device pages:
     * attention reads and writes them in place). Closing it frees nothing; the caller frees its pages.
     */
    public KvBufferCache.KvBuffer newKvBuffer(int pageSize, PagedKvBuffer.Pages pages) {
        return new PagedKvBuffer(kvBufferCache, pageSize, pages);
    }

    /**
     * Runs positions {@code [from, to)} of {@code tokens} through the model in one forward, with {@code l} around every
     * block (null: none), reading the KV of positions below {@code from} from {@code kv}.
     *
     * @return the output of position {@code to - 1} (close it)
     */
    public AbstractTensor forwardChunk(int[] tokens, int from, int to, KvBufferCache.KvBuffer kv, LayerListener l) {
        if (from < 0 || to <= from || to > tokens.length || to > contextTokens) {
            throw new IllegalArgumentException("chunk [" + from + ", " + to + ") outside the sequence of "
                + tokens.length + " tokens or the context of " + contextTokens);
        }
        listener = l;
        try {
            AbstractTensor embedding = to - from == 1 ? embedInput.inputTokenToEmbedding(tokens[from], from)
                : embedInput.batchInputsToEmbeddings(Arrays.copyOfRange(tokens, from, to), from);
            try (AbstractTensor out = forward(embedding, from, kv, Optional.empty())) {
                AbstractTensor last = makeDenseTensor(1, c.embeddingLength);
                last.copyFrom(out, out.getOffset(out.shape().first() - 1, 0), 0, c.embeddingLength);
                return last;
            }
        } finally {
            listener = null;
        }
    }

    /**
     * Jlama's output head on {@code output}: writes the raw logits (length = vocabulary) into {@code logits}. The
     * engine's {@link Sampler} picks the token.
     */
    public void logits(AbstractTensor output, float[] logits) {
        try (AbstractTensor t = makeDenseTensor(1, c.vocabularySize)) {
            sample(output, 0f, 0f, t);
            MemorySegment s = t.getMemorySegment();
            MemorySegment.copy(s, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, logits, 0, c.vocabularySize);
        }
    }
}
