package com.github.tjake.jlama.tensor;

/**
 * A Jlama KV buffer whose memory is not Jlama's: every {@code pageSize} consecutive positions of one layer and one of
 * K and V are a page the caller owns (the serving engine's device pages), so attention reads and writes the engine's
 * KV pages in place and nothing is copied between them and Jlama. Jlama's attention asks a buffer for the K (V) row of
 * one position, where it writes, and for the K (V) pages up to a position, which it reads page by page using each
 * page's first dimension as its length; this class answers both from {@link Pages}.
 *
 * <p>It lives in Jlama's package because {@link KvBufferCache.KvBuffer}'s constructor is package-private (the class
 * path puts both in one runtime package); it overrides only the four public accessors Jlama 0.8.4's
 * {@code CausalSelfAttention} calls. Jlama allocates none of its own pages for it. Not thread-safe: the thread that
 * runs the model owns it.
 */
public final class PagedKvBuffer extends KvBufferCache.KvBuffer {
    /** Where a buffer's pages are. */
    public interface Pages {
        /**
         * The page of positions {@code [index * pageSize, (index + 1) * pageSize)} of {@code layer}, K
         * ({@code buffer} 0) or V (1): a {@code [pageSize, kvWidth]} tensor over the caller's memory.
         *
         * @throws IllegalStateException when the buffer holds no page there
         */
        AbstractTensor page(int layer, int buffer, int index);
    }

    private final int pageSize;
    private final Pages pages;

    /**
     * @param cache    the model's KV buffer cache (Jlama's constructor needs it; nothing is allocated from it)
     * @param pageSize positions per page
     * @param pages    the pages
     */
    public PagedKvBuffer(KvBufferCache cache, int pageSize, Pages pages) {
        cache.super(java.util.UUID.randomUUID(), 1 << 20, true);
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size " + pageSize);
        }
        this.pageSize = pageSize;
        this.pages = pages;
    }

    @Override
    public AbstractTensor getKeyTensorForPosition(int layer, int position) {
        return row(layer, 0, position);
    }

    @Override
    public AbstractTensor getValTensorForPosition(int layer, int position) {
        return row(layer, 1, position);
    }

    @Override
    public AbstractTensor[] getKeyTensorsUptoPosition(int layer, int upto) {
        return upto(layer, 0, upto);
    }

    @Override
    public AbstractTensor[] getValTensorsUptoPosition(int layer, int upto) {
        return upto(layer, 1, upto);
    }

    private AbstractTensor row(int layer, int buffer, int position) {
        return pages.page(layer, buffer, position / pageSize).slice(true, position % pageSize); // cached, as Jlama does
    }

    private AbstractTensor[] upto(int layer, int buffer, int upto) {
        AbstractTensor[] out = new AbstractTensor[upto / pageSize + 1];
        for (int i = 0; i < out.length; i++) {
            out[i] = pages.page(layer, buffer, i);
        }
        return out;
    }

    /** Nothing of Jlama's to free: the pages are the caller's. */
    @Override
    public void close() {
        // the caller frees its pages
    }
}
