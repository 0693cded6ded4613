package io.hicache.serve.bench;

import io.hicache.serve.model.ByteTokenizer;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;

/**
 * A trace's requests as token ids the engine takes: expanded from their block hash ids exactly as the simulator
 * expands them ({@link TokenExpander}: token {@code k * blockTokens + j} for the {@code j}-th token of the {@code k}-th
 * distinct block), then remapped into the engine's vocabulary. The remap works per page: the simulator keys the
 * page that starts at token {@code t} by {@code q = t / pageSize}, and every token of that page becomes a function
 * of {@code q} and its offset in the page, its first {@link #digits()} tokens the base-{@code (vocab - 3)} digits of
 * {@code q} (ids from 3: pad, BOS and EOS are never sent). So two pages are equal in the engine exactly when their
 * simulator keys are equal, whatever the vocabulary: distinct blocks stay distinct, and no block folds onto another.
 * Needs a page size that divides the block tokens (as the simulator's page keys do) and is at least
 * {@link #digits()}.
 *
 * <p>Owned by one thread (the expander's remap table is state); expanding the same trace in the same order gives the
 * same tokens.
 */
public final class TraceTokens {
    private static final int FIRST = ByteTokenizer.FIRST_BYTE;

    private final TokenExpander expander;
    private final int pageSize;
    private final int radix;
    private final int digits;

    /**
     * @param blockTokens tokens per trace block after expansion (the simulator's {@code --block-tokens})
     * @param pageSize    the engine's tokens per KV page
     * @param vocab       the engine's vocabulary size
     * @throws IllegalArgumentException the page size does not divide the block tokens, or is too small to carry a
     *     page's key in this vocabulary
     */
    public TraceTokens(int blockTokens, int pageSize, int vocab) {
        if (pageSize < 1 || blockTokens % pageSize != 0) {
            throw new IllegalArgumentException("the page size " + pageSize + " must divide the block tokens "
                + blockTokens + " (--block-tokens), as the simulator's page keys need");
        }
        if (vocab < FIRST + 2) {
            throw new IllegalArgumentException("a vocabulary of " + vocab + " ids cannot carry trace tokens");
        }
        this.expander = new TokenExpander(blockTokens);
        this.pageSize = pageSize;
        this.radix = vocab - FIRST;
        int d = 1;
        long span = radix;
        long keys = (long) Integer.MAX_VALUE / pageSize + 1;
        while (span < keys) {
            span *= radix;
            d++;
        }
        this.digits = d;
        if (d > pageSize) {
            throw new IllegalArgumentException("a page of " + pageSize + " tokens cannot keep pages distinct in a "
                + "vocabulary of " + vocab + " (it needs " + d + " tokens a page); use a larger --page-size or vocabulary");
        }
    }

    /** Tokens of a page that carry its key. */
    public int digits() {
        return digits;
    }

    /** The simulator's expansion of {@code r}'s prompt (before the remap). */
    public int[] raw(Request r) {
        return expander.expand(r);
    }

    /** The simulator's expansion of {@code r}'s prompt and answer together ({@code TokenExpander#expandConversationInto}). */
    public int[] rawConversation(Request r) {
        int[] out = new int[expander.conversationTokenCount(r)];
        expander.expandConversationInto(r, out);
        return out;
    }

    /** {@code raw} remapped into the vocabulary ({@link #remap(int)} of each token). */
    public int[] remap(int[] raw) {
        int[] out = new int[raw.length];
        for (int i = 0; i < raw.length; i++) {
            out[i] = remap(raw[i]);
        }
        return out;
    }

    /** One expanded token in the vocabulary: a function of its page's key and its offset in the page. */
    public int remap(int token) {
        int key = token / pageSize;
        int offset = token % pageSize;
        if (offset < digits) {
            int v = key;
            for (int i = 0; i < offset; i++) {
                v /= radix;
            }
            return FIRST + v % radix;
        }
        long h = (key * 0x9E3779B97F4A7C15L) ^ (offset * 0xC2B2AE3D27D4EB4FL);
        h ^= h >>> 29;
        return FIRST + (int) Math.floorMod(h, (long) radix);
    }
}
