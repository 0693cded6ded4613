package io.hicache.core.memory;

/**
 * The shape of one KV page, independent of where it lives: how many layers, how many buffers per
 * layer, tokens per page and bytes per token per buffer. A device layout and the host pool that backs
 * it up must have equal shapes. Immutable value; thread-safe. The constructor throws
 * {@link IllegalArgumentException} naming the field when a value is out of range or the page bytes overflow a
 * {@code long}.
 *
 * @param layerCount             layers, at least 1
 * @param bufferCount            buffers per layer: 2 (K, V) for MHA, 1 (latent) for MLA
 * @param pageSizeTokens         tokens per page, at least 1
 * @param bytesPerTokenPerBuffer bytes one token occupies in one buffer of one layer, at least 1
 */
public record KvPageShape(int layerCount, int bufferCount, int pageSizeTokens, long bytesPerTokenPerBuffer) {

    public KvPageShape {
        if (layerCount < 1) {
            throw new IllegalArgumentException("layerCount must be >= 1, was " + layerCount);
        }
        if (bufferCount != 1 && bufferCount != 2) {
            throw new IllegalArgumentException("bufferCount must be 1 (MLA) or 2 (MHA), was " + bufferCount);
        }
        if (pageSizeTokens < 1) {
            throw new IllegalArgumentException("pageSizeTokens must be >= 1, was " + pageSizeTokens);
        }
        if (bytesPerTokenPerBuffer < 1) {
            throw new IllegalArgumentException("bytesPerTokenPerBuffer must be >= 1, was " + bytesPerTokenPerBuffer);
        }
        try {
            Math.multiplyExact(Math.multiplyExact(bytesPerTokenPerBuffer, (long) pageSizeTokens),
                    (long) layerCount * bufferCount);
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("bytes per page over all layers overflow a long: layerCount="
                    + layerCount + ", bufferCount=" + bufferCount + ", pageSizeTokens=" + pageSizeTokens
                    + ", bytesPerTokenPerBuffer=" + bytesPerTokenPerBuffer, e);
        }
    }

    /** Bytes of one page of one buffer of one layer: {@code pageSizeTokens * bytesPerTokenPerBuffer}. */
    public long pageBytes() {
        return pageSizeTokens * bytesPerTokenPerBuffer;
    }

    /** Bytes of one page over every layer and buffer: what one host page id costs in this pool. */
    public long bytesPerPageAllLayers() {
        return pageBytes() * layerCount * bufferCount;
    }
}
