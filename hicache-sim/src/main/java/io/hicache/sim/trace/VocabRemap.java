package io.hicache.sim.trace;

import java.util.SplittableRandom;

/**
 * Turns the token ids a {@link TokenExpander} makes from a trace's block hashes into token ids of an engine whose
 * vocabulary holds {@code vocab} ids, so that a client replaying the trace against the engine sends prompts with
 * exactly the block and page structure the simulator sees: equal blocks give equal token sequences, different blocks
 * different ones, and prompts that share a prefix of blocks share that prefix of tokens. A page-aligned prefix that
 * hits in the simulator's radix tree therefore hits in the engine's, and nothing else does.
 *
 * <p><b>How.</b> The engine caches whole pages of {@code pageSize} tokens, and the expander's tokens of one page of
 * one block are {@code g * pageSize + o} for the page's number {@code g} ({@link TokenExpander#pageKeys}' key) and
 * {@code o = 0 .. pageSize-1}. The token at offset {@code o} becomes a seeded bijection of the {@code o}-th base-vocab
 * digit of {@code g} for the first {@code D} offsets, where {@code D} is the fewest digits that number every page the
 * expander can make ({@code vocab^D >= 2^31 / pageSize}, at most {@code pageSize}), and a seeded hash of {@code g} and
 * {@code o} after them. Two different pages differ in their first {@code D} tokens, so the map is injective on pages
 * (never folds two blocks together), and it depends only on the simulator's token, so a block maps alike wherever it
 * occurs. The client expands with the {@code blockTokens} the simulator is given (the trace's block size sends the
 * trace's own token counts; a smaller one, each block as that many tokens) and a page size that divides it, the
 * engine's.
 *
 * <p>A trace whose pages outnumber what {@code vocab^pageSize} can tell apart (only with a tiny vocabulary and page
 * size) fails with {@link IllegalStateException} at the first page beyond, rather than folding it.
 *
 * <p>Typical use, one expander and one remap per replay. The requests may be expanded in any order (the simulator
 * expands a held follow-up turn when it arrives): the expander numbers blocks in first-seen order, which changes the
 * ids but never which blocks are equal, so the hits are the same.
 *
 * <pre>{@code
 * TokenExpander expander = new TokenExpander(request.blockSize());
 * VocabRemap remap = VocabRemap.forVocabulary(engineVocab, enginePageSize, seed);
 * int[] inputIds = remap.tokenIds(expander, request);   // what the client sends as input_ids
 * }</pre>
 *
 * <p>Immutable and thread-safe (the {@link TokenExpander} it is given is not: one per replay, on one thread).
 */
public final class VocabRemap {
    private static final long PAGE_LIMIT_TOKENS = 1L << 31;

    private final int vocab;
    private final int pageSize;
    private final long seed;
    /** Offsets that carry the page number's digits. */
    private final int digits;
    /** {@code vocab^o} for the digit offsets. */
    private final long[] power;
    /** Pages told apart: {@code vocab^digits}, or {@link Long#MAX_VALUE} when that exceeds what a long holds. */
    private final long capacityPages;
    private final long[] mul;
    private final long[] add;

    private VocabRemap(int vocab, int pageSize, long seed) {
        this.vocab = vocab;
        this.pageSize = pageSize;
        this.seed = seed;
        long needed = Math.ceilDiv(PAGE_LIMIT_TOKENS, pageSize);
        int d = 0;
        long cap = 1;
        while (d < pageSize && cap < needed) {
            cap = Math.multiplyHigh(cap, vocab) != 0 || cap * vocab < 0 ? Long.MAX_VALUE : cap * vocab;
            d++;
        }
        this.digits = Math.max(1, d);
        this.capacityPages = d == 0 ? vocab : cap;
        this.power = new long[digits];
        long p = 1;
        for (int o = 0; o < digits; o++) {
            power[o] = p;
            p = o + 1 < digits ? p * vocab : p;
        }
        SplittableRandom rnd = new SplittableRandom(seed);
        this.mul = new long[digits];
        this.add = new long[digits];
        for (int o = 0; o < digits; o++) {
            long a;
            do {
                a = vocab == 1 ? 1 : 1 + rnd.nextLong(vocab - 1);
            } while (gcd(a, vocab) != 1);
            mul[o] = a;
            add[o] = rnd.nextLong(vocab);
        }
    }

    /**
     * The remap into a vocabulary of {@code vocab} ids for an engine with {@code pageSize}-token pages; {@code seed}
     * chooses the ids (a replay's seed: the structure does not depend on it).
     *
     * @throws IllegalArgumentException {@code vocab < 2} or {@code pageSize < 1}
     */
    public static VocabRemap forVocabulary(int vocab, int pageSize, long seed) {
        if (vocab < 2) {
            throw new IllegalArgumentException("the engine's vocabulary must hold at least 2 token ids, got " + vocab);
        }
        if (pageSize < 1) {
            throw new IllegalArgumentException("page size must be >= 1 token, got " + pageSize);
        }
        return new VocabRemap(vocab, pageSize, seed);
    }

    /** The vocabulary size: every id {@link #token} returns lies in {@code [0, vocab)}. */
    public int vocab() {
        return vocab;
    }

    /** Tokens per page of the engine. */
    public int pageSize() {
        return pageSize;
    }

    /** Distinct pages the remap can tell apart ({@link Long#MAX_VALUE}: every page an expander can make). */
    public long capacityPages() {
        return capacityPages;
    }

    /**
     * The engine's id for the expander's token {@code simToken}.
     *
     * @throws IllegalArgumentException {@code simToken < 0}
     * @throws IllegalStateException its page lies beyond {@link #capacityPages()}
     */
    public int token(int simToken) {
        if (simToken < 0) {
            throw new IllegalArgumentException("token ids of the expander are >= 0, got " + simToken);
        }
        long g = simToken / pageSize;
        int o = simToken % pageSize;
        if (g >= capacityPages) {
            throw new IllegalStateException("the trace has more distinct pages than a vocabulary of " + vocab
                    + " ids with " + pageSize + "-token pages can tell apart (" + capacityPages + "): page " + g);
        }
        if (o < digits) {
            long digit = g / power[o] % vocab;
            return (int) ((mul[o] * digit + add[o]) % vocab);
        }
        return (int) Long.remainderUnsigned(mix(seed ^ (g * 0x9E3779B97F4A7C15L) ^ ((long) o << 40)), vocab);
    }

    /** Replaces {@code tokens[0, count)}, the expander's ids, by the engine's ({@link #token}), in place. */
    public void remapInPlace(int[] tokens, int count) {
        for (int i = 0; i < count; i++) {
            tokens[i] = token(tokens[i]);
        }
    }

    /**
     * The engine's prompt for {@code r}: {@link TokenExpander#expand} then {@link #token} per id; its length is
     * {@link TokenExpander#tokenCount}, the prompt's own tokens when the expander's {@code blockTokens} is the trace's
     * block size.
     */
    public int[] tokenIds(TokenExpander expander, Request r) {
        int[] t = expander.expand(r);
        remapInPlace(t, t.length);
        return t;
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static long gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return a;
    }
}
