package io.hicache.sim.trace;

import org.agrona.collections.Int2IntHashMap;

import java.util.Arrays;

/**
 * Turns a request's block hash ids into token ids for the radix tree. Each block becomes
 * {@code blockTokens} distinct tokens; a request of {@code L} input tokens and block size {@code B}
 * expands to {@code ceil(L * blockTokens / B)} tokens, so with {@code blockTokens == B} the result is
 * exactly {@code L} tokens (the last block truncated) and with {@code blockTokens == 1} each block is
 * one token (the block-level view published hit ratios use).
 *
 * <p><b>Id scheme.</b> Hash ids are remapped densely in first-seen order: the {@code k}-th distinct
 * hash id gets index {@code k}, and its tokens are {@code k * blockTokens + j} for
 * {@code j = 0 .. blockTokens-1}. Tokens of different blocks never collide and every token is a
 * non-negative int no matter how large the trace's ids are; only equality of ids matters to prefix
 * matching, so the remapping changes no hit. The expansion fails with
 * {@link IllegalStateException} only when {@code distinctBlocks * blockTokens} exceeds
 * {@link Integer#MAX_VALUE} (4.2 million distinct 512-token blocks).
 *
 * <p>Owned by one thread (the remap table is state). Expanding the same trace in the same order
 * always gives the same tokens.
 */
public final class TokenExpander {
    private final int blockTokens;
    private final Int2IntHashMap denseIndex = new Int2IntHashMap(1 << 16, 0.65f, -1);

    /**
     * @param blockTokens tokens per block, at least 1
     * @throws IllegalArgumentException {@code blockTokens < 1}
     */
    public TokenExpander(int blockTokens) {
        if (blockTokens < 1) {
            throw new IllegalArgumentException("block tokens must be >= 1, got " + blockTokens);
        }
        this.blockTokens = blockTokens;
    }

    /** Tokens per block. */
    public int blockTokens() {
        return blockTokens;
    }

    /** Number of tokens {@code r} expands to: {@code ceil(inputLength * blockTokens / blockSize)}. */
    public int tokenCount(Request r) {
        return count(r.inputLength(), r.blockCount(), r.blockSize());
    }

    /**
     * Tokens of the prompt and the answer together when {@link Request#coversAnswer()}:
     * {@code ceil((inputLength + outputLength) * blockTokens / blockSize)}; else {@link #tokenCount}.
     */
    public int conversationTokenCount(Request r) {
        return r.coversAnswer() ? count(r.inputLength() + r.outputLength(), r.blockIds().length, r.blockSize())
                : tokenCount(r);
    }

    private int count(long length, int blocks, int blockSize) {
        long n = (length * blockTokens + blockSize - 1) / blockSize;
        return (int) Math.min(n, (long) blocks * blockTokens);
    }

    /** Expands {@code r} into a fresh array of {@link #tokenCount(Request)} tokens. */
    public int[] expand(Request r) {
        int[] out = new int[tokenCount(r)];
        expandInto(r, out);
        return out;
    }

    /**
     * Expands {@code r} into {@code dst} without allocating (except when the remap table grows).
     *
     * @return the number of tokens written
     * @throws IllegalArgumentException {@code dst} is shorter than {@link #tokenCount(Request)}
     */
    public int expandInto(Request r, int[] dst) {
        return expandInto(r, dst, tokenCount(r));
    }

    /**
     * Expands the prompt and the answer together ({@link #conversationTokenCount}) into {@code dst}: what the
     * next turn of the conversation repeats. Without answer ids, the prompt only.
     *
     * @return the number of tokens written
     */
    public int expandConversationInto(Request r, int[] dst) {
        return expandInto(r, dst, conversationTokenCount(r));
    }

    private int expandInto(Request r, int[] dst, int count) {
        if (dst.length < count) {
            throw new IllegalArgumentException("token buffer holds " + dst.length + " tokens, request " + r.index()
                    + " needs " + count);
        }
        int[] ids = r.blockIds();
        int pos = 0;
        for (int b = 0; b < ids.length && pos < count; b++) {
            int base = dense(ids[b]) * blockTokens;
            int n = Math.min(blockTokens, count - pos);
            for (int j = 0; j < n; j++) {
                dst[pos++] = base + j;
            }
        }
        return count;
    }

    /**
     * The page keys of {@code r}'s whole pages: key {@code i} is {@code token(i * pageSize) / pageSize} of
     * {@link #expand}, computed without writing the tokens (hash ids are remapped in the same order, so keys and
     * later expansions agree with {@code expand}).
     *
     * @param pageSize tokens per page, a divisor of {@link #blockTokens()}
     */
    public int[] pageKeys(Request r, int pageSize) {
        return pageKeys(r, pageSize, tokenCount(r));
    }

    /**
     * The page keys of the whole pages of prompt and answer together ({@link #conversationTokenCount}), as
     * {@link #pageKeys} gives them for the prompt: the keys a finished request's KV is cached under, which the
     * next turn of its conversation matches. Without answer ids, the prompt's keys.
     */
    public int[] conversationPageKeys(Request r, int pageSize) {
        return pageKeys(r, pageSize, conversationTokenCount(r));
    }

    private int[] pageKeys(Request r, int pageSize, int count) {
        if (pageSize < 1 || blockTokens % pageSize != 0) {
            throw new IllegalArgumentException("page size " + pageSize + " must divide block tokens " + blockTokens);
        }
        int[] keys = new int[count / pageSize];
        int[] ids = r.blockIds();
        int pagesPerBlock = blockTokens / pageSize;
        int blocks = (count + blockTokens - 1) / blockTokens;
        for (int b = 0; b < ids.length && b < blocks; b++) {
            int base = dense(ids[b]) * pagesPerBlock; // = dense * blockTokens / pageSize
            for (int j = 0; j < pagesPerBlock; j++) {
                int page = b * pagesPerBlock + j;
                if (page >= keys.length) {
                    break;
                }
                keys[page] = base + j;
            }
        }
        return keys;
    }

    /** Returns a buffer at least {@code count} long: {@code buf} itself or a larger copy. */
    public static int[] ensureCapacity(int[] buf, int count) {
        return buf.length >= count ? buf : Arrays.copyOf(buf, Math.max(count, buf.length * 2));
    }

    /** Number of distinct hash ids seen so far. */
    public int distinctBlocks() {
        return denseIndex.size();
    }

    private int dense(int hashId) {
        int k = denseIndex.get(hashId);
        if (k < 0) {
            k = denseIndex.size();
            if ((long) (k + 1) * blockTokens - 1 > Integer.MAX_VALUE) {
                throw new IllegalStateException("token ids overflow: " + (k + 1) + " distinct blocks x " + blockTokens
                        + " tokens per block exceeds " + Integer.MAX_VALUE + "; use a smaller --block-tokens or --limit");
            }
            denseIndex.put(hashId, k);
        }
        return k;
    }
}
