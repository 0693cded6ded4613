package io.hicache.serve.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.FloatBufferTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import com.github.tjake.jlama.tensor.TensorShape;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

/**
 * Jlama's attention over a KV buffer whose pages are the caller's memory (the engine's device pages): the same
 * logits bit for bit as over Jlama's own buffer, each position's K and V land in the page the caller mapped it to,
 * and a position with no page is refused rather than read from somewhere else.
 */
class PagedKvBufferTest {
    private static final ModelSpec SPEC = new ModelSpec(null, 2, 128, 4, 2, 128, 384, 256, 5);
    private static final int PAGE = 16;

    /**
     * Pages in one native segment (shared: Jlama reads it from its worker threads), handed out in reverse order so
     * that the mapping, not adjacency, is what counts.
     */
    private static final class Pages implements com.github.tjake.jlama.tensor.PagedKvBuffer.Pages {
        final int count;
        final long pageBytes = (long) PAGE * SPEC.kvBytesPerTokenPerBuffer();
        final MemorySegment memory;
        final AbstractTensor[] views;

        Pages(Arena arena, int count) {
            this.count = count;
            this.memory = arena.allocate(pageBytes * SPEC.layers() * 2 * count, 64);
            this.views = new AbstractTensor[SPEC.layers() * 2 * count];
        }

        long offset(int layer, int buffer, int index) {
            int physical = count - 1 - index;
            return ((long) (layer * 2 + buffer) * count + physical) * pageBytes;
        }

        @Override
        public AbstractTensor page(int layer, int buffer, int index) {
            if (index >= count) {
                throw new IllegalStateException("no page " + index);
            }
            int i = (layer * 2 + buffer) * count + index;
            if (views[i] == null) {
                var fb = memory.asSlice(offset(layer, buffer, index), pageBytes).asByteBuffer()
                    .order(ByteOrder.nativeOrder()).asFloatBuffer();
                views[i] = new FloatBufferTensor(fb, TensorShape.of(PAGE, SPEC.kvWidth()), true);
            }
            return views[i];
        }
    }

    private static int[] prompt(int n) {
        SplittableRandom r = new SplittableRandom(11);
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 3 + r.nextInt(200);
        }
        return t;
    }

    /** Two prefill chunks, then two decode steps; the logits of each. */
    private static float[][] run(StepModel m, KvBufferCache.KvBuffer kv, int[] tokens) {
        int[][] spans = {{0, 40}, {40, 75}, {75, 76}, {76, 77}};
        float[][] out = new float[spans.length][SPEC.vocab()];
        for (int i = 0; i < spans.length; i++) {
            try (AbstractTensor last = m.forwardChunk(tokens, spans[i][0], spans[i][1], kv, null)) {
                m.logits(last, out[i]);
            }
        }
        return out;
    }

    @Test
    void attentionOverTheCallersPagesComputesWhatJlamasOwnBufferDoes() {
        int[] tokens = prompt(77);
        try (StepModel m = SPEC.newModel(); Arena arena = Arena.ofShared()) {
            KvBufferCache.KvBuffer own = m.newKvBuffer();
            float[][] expected = run(m, own, tokens);
            Pages pages = new Pages(arena, 5);
            KvBufferCache.KvBuffer paged = m.newKvBuffer(PAGE, pages);
            float[][] got = run(m, paged, tokens);
            for (int i = 0; i < expected.length; i++) {
                assertThat(got[i]).as("forward " + i).containsExactly(expected[i]);
            }
            long row = SPEC.kvBytesPerTokenPerBuffer();
            for (int layer = 0; layer < SPEC.layers(); layer++) {
                for (int pos = 0; pos < 77; pos++) {
                    AbstractTensor k = own.getKeyTensorForPosition(layer, pos);
                    AbstractTensor v = own.getValTensorForPosition(layer, pos);
                    long kAt = pages.offset(layer, 0, pos / PAGE) + (pos % PAGE) * row;
                    long vAt = pages.offset(layer, 1, pos / PAGE) + (pos % PAGE) * row;
                    for (int d = 0; d < SPEC.kvWidth(); d++) {
                        assertThat(pages.memory.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, kAt + d * 4L))
                            .as("K layer %d pos %d", layer, pos).isEqualTo(k.get(at(k, d)));
                        assertThat(pages.memory.get(java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED, vAt + d * 4L))
                            .as("V layer %d pos %d", layer, pos).isEqualTo(v.get(at(v, d)));
                    }
                }
            }
            own.close();
            paged.close();
        }
    }

    /** Index of element {@code d} of a row tensor (Jlama's row slices keep their leading dimensions of 1). */
    private static int[] at(AbstractTensor row, int d) {
        int[] i = new int[row.shape().dims()];
        i[i.length - 1] = d;
        return i;
    }

    @Test
    void aPositionWithoutAPageIsRefused() {
        int[] tokens = prompt(77);
        try (StepModel m = SPEC.newModel(); Arena arena = Arena.ofShared()) {
            KvBufferCache.KvBuffer paged = m.newKvBuffer(PAGE, new Pages(arena, 2)); // 32 positions
            assertThatThrownBy(() -> m.forwardChunk(tokens, 0, 40, paged, null))
                .isInstanceOf(RuntimeException.class).hasStackTraceContaining("no page 2");
        }
    }
}
