package io.hicache.core.memory;

/**
 * How a host KV pool orders its bytes. With {@code L} layers, {@code B} buffers, {@code N} host pages,
 * {@code P} tokens per page and {@code w} bytes per token per buffer ({@code pageBytes = P * w}):
 *
 * <ul>
 *   <li>{@link #LAYER_FIRST} {@code [B][L][N][P][w]}: one layer's pages are contiguous, so a run of
 *       consecutive host pages of one layer is one contiguous range (best for per-layer copies).</li>
 *   <li>{@link #PAGE_FIRST} {@code [B][N][P][L][w]}: token-major, as SGLang's {@code page_first}: the
 *       tokens of one (layer, page) lie {@code L * w} bytes apart, so a page of one layer is not
 *       contiguous and is copied as rows ({@code cudaMemcpy2DAsync}).</li>
 *   <li>{@link #PAGE_FIRST_DIRECT} {@code [B][N][L][P][w]}: page-major with every whole page of one layer
 *       contiguous and all layers of a page adjacent, as SGLang's {@code page_first_direct}: the layout a
 *       storage tier wants (one page id is {@code B} contiguous blocks).</li>
 * </ul>
 *
 * <p>The region of (layer, buffer, page) starts at {@link #pageOffsetBytes}; its {@code P} token rows of
 * {@code w} bytes lie {@link #tokenPitchBytes} apart; the same layer and buffer of page {@code p + 1}
 * starts {@link #pagePitchBytes} after page {@code p}. Every layout tiles {@code [0, N * L * B * pageBytes)}
 * exactly. Stateless; thread-safe; the arithmetic methods allocate nothing and do not range-check
 * (callers do).
 */
public enum HostLayout {
    LAYER_FIRST {
        @Override
        public long pageOffsetBytes(KvPageShape shape, int pageCount, int layer, int buffer, int page) {
            long index = ((long) buffer * shape.layerCount() + layer) * pageCount + page;
            return index * shape.pageBytes();
        }

        @Override
        public long tokenPitchBytes(KvPageShape shape) {
            return shape.bytesPerTokenPerBuffer();
        }

        @Override
        public long pagePitchBytes(KvPageShape shape, int pageCount) {
            return shape.pageBytes();
        }
    },
    PAGE_FIRST {
        @Override
        public long pageOffsetBytes(KvPageShape shape, int pageCount, int layer, int buffer, int page) {
            long firstToken = ((long) buffer * pageCount + page) * shape.pageSizeTokens();
            return (firstToken * shape.layerCount() + layer) * shape.bytesPerTokenPerBuffer();
        }

        @Override
        public long tokenPitchBytes(KvPageShape shape) {
            return shape.layerCount() * shape.bytesPerTokenPerBuffer();
        }

        @Override
        public long pagePitchBytes(KvPageShape shape, int pageCount) {
            return shape.pageSizeTokens() * tokenPitchBytes(shape);
        }
    },
    PAGE_FIRST_DIRECT {
        @Override
        public long pageOffsetBytes(KvPageShape shape, int pageCount, int layer, int buffer, int page) {
            long index = ((long) buffer * pageCount + page) * shape.layerCount() + layer;
            return index * shape.pageBytes();
        }

        @Override
        public long tokenPitchBytes(KvPageShape shape) {
            return shape.bytesPerTokenPerBuffer();
        }

        @Override
        public long pagePitchBytes(KvPageShape shape, int pageCount) {
            return shape.layerCount() * shape.pageBytes();
        }
    };

    /** Offset from the pool base of token 0 of (layer, buffer, page) in a pool of {@code pageCount} pages. */
    public abstract long pageOffsetBytes(KvPageShape shape, int pageCount, int layer, int buffer, int page);

    /** Distance between consecutive tokens of one (layer, buffer, page); equals {@code w} when pages are contiguous. */
    public abstract long tokenPitchBytes(KvPageShape shape);

    /** Distance from (layer, buffer, page) to (layer, buffer, page + 1). */
    public abstract long pagePitchBytes(KvPageShape shape, int pageCount);

    /** True when each (layer, buffer, page) region is one contiguous range of {@code pageBytes}. */
    public boolean pageContiguous(KvPageShape shape) {
        return shape.pageSizeTokens() == 1 || tokenPitchBytes(shape) == shape.bytesPerTokenPerBuffer();
    }
}
