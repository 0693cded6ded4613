package io.hicache.storage;

import java.util.Arrays;

/**
 * The storage key of one KV page: a 32-byte SHA-256 digest, written as 64 lowercase hex characters. Keys
 * are made by {@link PageKeys} (a chain over the page's tokens, as SGLang's {@code get_hash_str}) and by
 * {@link KeyNamespace#seed()}; {@link #fromHex} is the only way in from text and accepts nothing but
 * well-formed keys, so a key is always safe to use as a file name or a Redis key.
 *
 * <p>Immutable value; thread-safe.
 */
public final class PageKey implements Comparable<PageKey> {
    /** Bytes of a digest. */
    public static final int BYTES = 32;
    /** Characters of the hex form. */
    public static final int HEX_CHARS = 64;

    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final byte[] digest;
    private final String hex;

    private PageKey(byte[] digest) {
        this.digest = digest;
        char[] out = new char[HEX_CHARS];
        for (int i = 0; i < BYTES; i++) {
            out[2 * i] = HEX[(digest[i] >> 4) & 0xF];
            out[2 * i + 1] = HEX[digest[i] & 0xF];
        }
        this.hex = new String(out);
    }

    /**
     * The key of a 32-byte digest (copied).
     *
     * @throws IllegalArgumentException when {@code digest} is not 32 bytes
     */
    public static PageKey ofDigest(byte[] digest) {
        if (digest == null || digest.length != BYTES) {
            throw new IllegalArgumentException("a page key digest must be " + BYTES + " bytes, was "
                    + (digest == null ? "null" : digest.length));
        }
        return new PageKey(digest.clone());
    }

    /** Wraps a fresh digest without copying; {@code digest} must not be shared. */
    static PageKey wrap(byte[] digest) {
        return new PageKey(digest);
    }

    /** True when {@code s} is exactly 64 lowercase hex characters ({@code [0-9a-f]{64}}). */
    public static boolean isWellFormedHex(CharSequence s) {
        if (s == null || s.length() != HEX_CHARS) {
            return false;
        }
        for (int i = 0; i < HEX_CHARS; i++) {
            if (nibble(s.charAt(i)) < 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Parses a key from its hex form.
     *
     * @throws IllegalArgumentException when {@code hex} is not 64 lowercase hex characters (the message
     *                                  gives the length only, never echoes the input)
     */
    public static PageKey fromHex(CharSequence hex) {
        if (!isWellFormedHex(hex)) {
            throw new IllegalArgumentException("a page key must be " + HEX_CHARS
                    + " lowercase hex characters [0-9a-f], got " + (hex == null ? "null" : hex.length() + " characters")
                    + (hex != null && hex.length() == HEX_CHARS ? " with a character outside [0-9a-f]" : ""));
        }
        byte[] d = new byte[BYTES];
        for (int i = 0; i < BYTES; i++) {
            d[i] = (byte) ((nibble(hex.charAt(2 * i)) << 4) | nibble(hex.charAt(2 * i + 1)));
        }
        return new PageKey(d);
    }

    private static int nibble(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        return -1;
    }

    /** The 64-character lowercase hex form (SGLang's key string). */
    public String hex() {
        return hex;
    }

    /** A copy of the 32 digest bytes. */
    public byte[] toBytes() {
        return digest.clone();
    }

    /** Copies the 32 digest bytes into {@code dst} at {@code offset}. */
    public void copyTo(byte[] dst, int offset) {
        System.arraycopy(digest, 0, dst, offset, BYTES);
    }

    /** Byte {@code i} of the digest. */
    public byte byteAt(int i) {
        return digest[i];
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PageKey k && Arrays.equals(digest, k.digest);
    }

    @Override
    public int hashCode() {
        // the digest is uniformly distributed; its first bytes are a good hash
        return (digest[0] & 0xFF) << 24 | (digest[1] & 0xFF) << 16 | (digest[2] & 0xFF) << 8 | (digest[3] & 0xFF);
    }

    @Override
    public int compareTo(PageKey o) {
        return Arrays.compareUnsigned(digest, o.digest);
    }

    @Override
    public String toString() {
        return hex;
    }
}
