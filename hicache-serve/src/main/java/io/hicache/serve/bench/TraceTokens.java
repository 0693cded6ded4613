package io.hicache.serve.bench;

import io.hicache.serve.model.ByteTokenizer;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.VocabRemap;

/**
 * A trace's requests as token ids the engine takes: expanded from their block hash ids exactly as the simulator
 * expands them ({@link TokenExpander}: token {@code k * blockTokens + j} for the {@code j}-th token of the {@code k}-th
 * distinct block), then remapped into the engine's vocabulary by the simulator's {@link VocabRemap}, over the ids from
 * 3 up (pad, BOS and EOS are never sent): per page, a function of the simulator's page key ({@code t / pageSize}) and
 * the offset, the first tokens the key's digits. So two pages are equal in the engine exactly when their simulator keys
 * are equal, whatever the vocabulary: distinct blocks stay distinct, and no block folds onto another. Needs a page size
 * that divides the block tokens (as the simulator's page keys do) and is at least {@link #digits()}.
 *
 * <p>Owned by one thread (the expander's remap table is state); expanding the same trace in the same order gives the
 * same tokens.
 */
public final class TraceTokens {
    private static final int FIRST = ByteTokenizer.FIRST_BYTE;
    /** The replay's seed of the remap: which ids, not the structure. */
    private static final long SEED = 43;

    private final TokenExpander expander;
    private final VocabRemap remap;
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
        this.remap = VocabRemap.forVocabulary(vocab - FIRST, pageSize, SEED);
        int d = 1;
        long span = (long) vocab - FIRST;
        long keys = Math.ceilDiv(1L << 31, pageSize);
        while (span < keys) {
            span *= vocab - FIRST;
            d++;
        }
        this.digits = d;
        if (remap.capacityPages() < keys) {
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

    /** One expanded token in the vocabulary ({@link VocabRemap#token}, past the special ids). */
    public int remap(int token) {
        return FIRST + remap.token(token);
    }
}
