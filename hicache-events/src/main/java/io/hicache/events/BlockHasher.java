package io.hicache.events;

/**
 * The 64-bit block hashes of KV events: one per page, chained through the parent page's hash, so a page's hash
 * names its whole token prefix (as vLLM's block hashes do). Stable across runs, JVMs and machines: a pure
 * function of the page's tokens, its parent's hash and the stream's extra key; values are non-negative (63 bits)
 * so decoders that read them as signed or unsigned 64-bit integers agree.
 *
 * <p>The function, for a page of tokens {@code t[0..n)} (each as an unsigned 32-bit value) below parent hash
 * {@code p} (for the first page, {@link #root(long) root(extraKey)}):
 * <pre>
 *   h = p
 *   for each t: h = rotl64(h ^ (t * 0x9E3779B97F4A7C15), 31) * 0xC2B2AE3D27D4EB4F
 *   hash = fmix64(h ^ n) &amp; 0x7FFFFFFFFFFFFFFF        (fmix64: MurmurHash3's 64-bit finaliser)
 * </pre>
 * The extra key plays the role of vLLM's {@code extra_keys}: a LoRA adapter id or a tenant salt hashed into it
 * keeps two adapters' (or tenants') identical prompts apart. Stateless; any thread.
 */
public final class BlockHasher {
    private static final long P1 = 0x9E3779B97F4A7C15L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;

    private BlockHasher() {
    }

    /** The chain's seed for {@code extraKey} (0 when there is none): the parent of every first page. */
    public static long root(long extraKey) {
        return fmix64(extraKey ^ 0x5348_6943_6163_6865L); // "HiCache"-ish constant
    }

    /**
     * The hash of the page {@code tokens[off, off + n)} below {@code parent}.
     *
     * @throws IndexOutOfBoundsException if the range is outside {@code tokens}
     */
    public static long page(long parent, int[] tokens, int off, int n) {
        java.util.Objects.checkFromIndexSize(off, n, tokens.length);
        long h = parent;
        for (int i = off; i < off + n; i++) {
            h = Long.rotateLeft(h ^ ((tokens[i] & 0xFFFF_FFFFL) * P1), 31) * P2;
        }
        return fmix64(h ^ n) & Long.MAX_VALUE;
    }

    /** One token step of {@link #page} (for callers that read tokens one at a time). */
    static long step(long h, int token) {
        return Long.rotateLeft(h ^ ((token & 0xFFFF_FFFFL) * P1), 31) * P2;
    }

    /** The end of {@link #page} after {@code n} steps. */
    static long finish(long h, int n) {
        return fmix64(h ^ n) & Long.MAX_VALUE;
    }

    /**
     * The hashes of every whole page of {@code tokens[0, len)} with pages of {@code pageSize} tokens, chained from
     * {@link #root(long) root(extraKey)}: what a router computes for a request to look it up.
     *
     * @throws IllegalArgumentException if {@code pageSize < 1}
     */
    public static long[] chain(int[] tokens, int len, int pageSize, long extraKey) {
        if (pageSize < 1) {
            throw new IllegalArgumentException("pageSize must be >= 1, got " + pageSize);
        }
        long[] out = new long[len / pageSize];
        long h = root(extraKey);
        for (int p = 0; p < out.length; p++) {
            h = page(h, tokens, p * pageSize, pageSize);
            out[p] = h;
        }
        return out;
    }

    private static long fmix64(long k) {
        k ^= k >>> 33;
        k *= 0xFF51AFD7ED558CCDL;
        k ^= k >>> 33;
        k *= 0xC4CEB93FE1A85EC9L;
        k ^= k >>> 33;
        return k;
    }
}
