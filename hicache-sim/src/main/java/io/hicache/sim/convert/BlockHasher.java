package io.hicache.sim.convert;

import io.hicache.storage.PageKey;
import io.hicache.storage.PageKeys;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code hash_ids} rule of the {@code hicache} trace format: a request's token ids are cut into blocks of
 * {@code blockTokens} (the last may be partial), each block is keyed as the L3 tier keys a page
 * ({@link PageKeys}: {@code key[0] = SHA-256(ids of block 0)}, {@code key[k] = SHA-256(key[k-1] ‖ ids of block k)},
 * ids as 4-byte little-endian unsigned integers, no namespace, so byte-equal to SGLang's page keys), and every
 * distinct key gets the next number, 0, 1, 2, ..., in the order this hasher first meets it. Two blocks share a
 * number exactly when their keys are equal, that is when they and everything before them hold the same tokens; the
 * numbers are non-negative 32-bit ints and never collide. {@link #key(int)} gives the key behind a number (what
 * {@code hicache-sim keys --namespace none} prints for the same tokens).
 *
 * <p>Owned by one thread (the numbering is state); one hasher numbers one output file. Cold path.
 */
public final class BlockHasher {
    private final int blockTokens;
    private final Map<PageKey, Integer> numbers = new HashMap<>();
    private final List<PageKey> keys = new ArrayList<>();

    /**
     * @param blockTokens tokens per block, at least 1
     * @throws IllegalArgumentException {@code blockTokens < 1}
     */
    public BlockHasher(int blockTokens) {
        if (blockTokens < 1) {
            throw new IllegalArgumentException("block tokens must be >= 1, got " + blockTokens);
        }
        this.blockTokens = blockTokens;
    }

    /** Tokens per block. */
    public int blockTokens() {
        return blockTokens;
    }

    /** The hash ids of {@code tokens[0, length)}: {@code ceil(length / blockTokens)} numbers. */
    public int[] hashIds(int[] tokens, int length) {
        if (length == 0) {
            return new int[0];
        }
        PageKey[] chain = PageKeys.chain(null, tokens, 0, length, blockTokens);
        int[] ids = new int[chain.length];
        for (int i = 0; i < chain.length; i++) {
            ids[i] = number(chain[i]);
        }
        return ids;
    }

    /** Distinct blocks numbered so far. */
    public int distinctBlocks() {
        return keys.size();
    }

    /** The L3 page key numbered {@code id}. */
    public PageKey key(int id) {
        return keys.get(id);
    }

    /** A token stream that only grows (a conversation): its blocks are hashed once, as they fill. */
    public Stream stream() {
        return new Stream();
    }

    int number(PageKey key) {
        Integer n = numbers.get(key);
        if (n != null) {
            return n;
        }
        if (keys.size() == Integer.MAX_VALUE) {
            throw new IllegalStateException("more than " + Integer.MAX_VALUE + " distinct blocks in one trace");
        }
        int id = keys.size();
        numbers.put(key, id);
        keys.add(key);
        return id;
    }

    /**
     * A token stream hashed incrementally: {@link #hashIds()} equals {@link BlockHasher#hashIds} over everything
     * appended so far, but each full block is hashed once. Owned by the hasher's thread.
     */
    public final class Stream {
        private int[] fullIds = new int[16];
        private int fullCount;
        private PageKey lastFull;
        private final int[] tail = new int[blockTokens];
        private int tailLength;
        private long length;

        private Stream() {
        }

        /** Tokens appended so far. */
        public long length() {
            return length;
        }

        /** Appends {@code token}. */
        public void append(int token) {
            tail[tailLength++] = token;
            length++;
            if (tailLength == blockTokens) {
                lastFull = PageKeys.next(lastFull, tail, 0, blockTokens);
                if (fullCount == fullIds.length) {
                    fullIds = Arrays.copyOf(fullIds, fullCount * 2);
                }
                fullIds[fullCount++] = number(lastFull);
                tailLength = 0;
            }
        }

        /** The hash ids of the whole stream, its partial last block included. */
        public int[] hashIds() {
            int[] ids = Arrays.copyOf(fullIds, fullCount + (tailLength > 0 ? 1 : 0));
            if (tailLength > 0) {
                ids[fullCount] = number(PageKeys.next(lastFull, tail, 0, tailLength));
            }
            return ids;
        }
    }
}
