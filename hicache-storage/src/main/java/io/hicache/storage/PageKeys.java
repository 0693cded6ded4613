package io.hicache.storage;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * SHA-256 page-key chains, byte-compatible with SGLang's HiCache storage keys ({@code get_hash_str} and
 * its native {@code get_hash}):
 *
 * <pre>
 *   key[0] = SHA-256(prior ‖ ids of page 0)      (prior omitted when there is none)
 *   key[k] = SHA-256(key[k-1] ‖ ids of page k)
 * </pre>
 *
 * where a page's ids are written as 4-byte little-endian unsigned integers ({@code int} values are taken
 * as their 32 unsigned bits) and a last partial page is hashed as it is. In a <b>bigram</b> (EAGLE) chain
 * the hashed units are the pairs {@code (tokens[i], tokens[i+1])}: {@code n + 1} ids make {@code n} units,
 * a page holds {@code pageSize} units, and each unit contributes both ids. The prior of a namespaced chain
 * is {@link KeyNamespace#seed()}; with {@link KeyNamespace#NONE} the keys are exactly SGLang's.
 *
 * <p>Stateless; thread-safe (each call uses its own digest). Cold path: allocates the result and a digest.
 */
public final class PageKeys {
    private PageKeys() {
    }

    /**
     * The keys of {@code tokens[from, to)} cut into pages of {@code pageSizeTokens} (last page may be partial).
     *
     * @param prior the digest seeding the chain (a namespace seed or the key of the page before), or null
     * @throws IllegalArgumentException naming the value when the range or page size is invalid
     */
    public static PageKey[] chain(PageKey prior, int[] tokens, int from, int to, int pageSizeTokens) {
        checkRange(tokens, from, to, pageSizeTokens);
        int pages = ceilDiv(to - from, pageSizeTokens);
        PageKey[] out = new PageKey[pages];
        MessageDigest md = sha256();
        byte[] buf = new byte[pageSizeTokens * 4];
        PageKey prev = prior;
        for (int p = 0; p < pages; p++) {
            int start = from + p * pageSizeTokens;
            int end = Math.min(to, start + pageSizeTokens);
            int n = 0;
            for (int i = start; i < end; i++) {
                n = putLe(buf, n, tokens[i]);
            }
            prev = digest(md, prev, buf, n);
            out[p] = prev;
        }
        return out;
    }

    /** {@link #chain(PageKey, int[], int, int, int)} over all of {@code tokens}. */
    public static PageKey[] chain(PageKey prior, int[] tokens, int pageSizeTokens) {
        return chain(prior, tokens, 0, tokens.length, pageSizeTokens);
    }

    /**
     * The key of one page following {@code prior}: the incremental form, for a tree that extends a chain
     * page by page. {@code tokens[from, to)} is the page's ids (or {@code 2 * units} interleaved bigram ids).
     */
    public static PageKey next(PageKey prior, int[] tokens, int from, int to) {
        if (tokens == null || from < 0 || to > tokens.length || from >= to) {
            throw new IllegalArgumentException("page range [" + from + ", " + to + ") is empty or outside "
                    + (tokens == null ? "null tokens" : tokens.length + " tokens"));
        }
        byte[] buf = new byte[(to - from) * 4];
        int n = 0;
        for (int i = from; i < to; i++) {
            n = putLe(buf, n, tokens[i]);
        }
        return digest(sha256(), prior, buf, n);
    }

    /**
     * The keys of a bigram (EAGLE) sequence: {@code tokens} holds {@code n + 1} ids, the units are the
     * {@code n} pairs {@code (tokens[i], tokens[i+1])}, pages hold {@code pageSizeUnits} units.
     *
     * @throws IllegalArgumentException when fewer than 2 ids are given or the page size is below 1
     */
    public static PageKey[] bigramChain(PageKey prior, int[] tokens, int pageSizeUnits) {
        if (tokens == null || tokens.length < 2) {
            throw new IllegalArgumentException("a bigram chain needs at least 2 token ids, got "
                    + (tokens == null ? "null" : tokens.length));
        }
        if (pageSizeUnits < 1) {
            throw new IllegalArgumentException("pageSizeUnits must be >= 1, was " + pageSizeUnits);
        }
        int units = tokens.length - 1;
        int pages = ceilDiv(units, pageSizeUnits);
        PageKey[] out = new PageKey[pages];
        MessageDigest md = sha256();
        byte[] buf = new byte[pageSizeUnits * 8];
        PageKey prev = prior;
        for (int p = 0; p < pages; p++) {
            int start = p * pageSizeUnits;
            int end = Math.min(units, start + pageSizeUnits);
            int n = 0;
            for (int i = start; i < end; i++) {
                n = putLe(buf, n, tokens[i]);
                n = putLe(buf, n, tokens[i + 1]);
            }
            prev = digest(md, prev, buf, n);
            out[p] = prev;
        }
        return out;
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    private static PageKey digest(MessageDigest md, PageKey prev, byte[] buf, int n) {
        md.reset();
        if (prev != null) {
            for (int i = 0; i < PageKey.BYTES; i++) {
                md.update(prev.byteAt(i));
            }
        }
        md.update(buf, 0, n);
        return PageKey.wrap(md.digest());
    }

    private static int putLe(byte[] buf, int at, int v) {
        buf[at] = (byte) v;
        buf[at + 1] = (byte) (v >>> 8);
        buf[at + 2] = (byte) (v >>> 16);
        buf[at + 3] = (byte) (v >>> 24);
        return at + 4;
    }

    private static void checkRange(int[] tokens, int from, int to, int pageSizeTokens) {
        if (tokens == null) {
            throw new IllegalArgumentException("tokens must not be null");
        }
        if (from < 0 || to > tokens.length || from > to) {
            throw new IllegalArgumentException("token range [" + from + ", " + to + ") outside [0, " + tokens.length + "]");
        }
        if (pageSizeTokens < 1) {
            throw new IllegalArgumentException("pageSizeTokens must be >= 1, was " + pageSizeTokens);
        }
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
