package io.hicache.core.memory;

import java.util.Arrays;

/**
 * Where the engine keeps its KV cache on the device: per layer and buffer (K and V for
 * {@link AttentionKind#MHA}, one latent buffer for {@link AttentionKind#MLA}) a base address, and for
 * every buffer the same page size, bytes per token and page stride. Device page {@code p} of layer
 * {@code l}, buffer {@code b} starts at {@code base(l, b) + p * pageStrideBytes} and spans
 * {@link #pageBytes()} contiguous bytes.
 *
 * <p>Described by the engine, owned by the engine: this library never frees these addresses. A draft or
 * MTP model has its own layout (its own layer count and widths).
 *
 * <p>Immutable; thread-safe. Built with {@link #builder(AttentionKind)}, which validates every field
 * and throws {@link IllegalArgumentException} naming the bad field (overlapping buffer regions included).
 */
public final class DeviceKvLayout {
    private final AttentionKind kind;
    private final KvPageShape shape;
    private final int pageCount;
    private final long pageStrideBytes;
    /** Base address per (layer, buffer), index {@code layer * bufferCount + buffer}. */
    private final long[] bases;

    private DeviceKvLayout(AttentionKind kind, KvPageShape shape, int pageCount, long pageStrideBytes, long[] bases) {
        this.kind = kind;
        this.shape = shape;
        this.pageCount = pageCount;
        this.pageStrideBytes = pageStrideBytes;
        this.bases = bases;
    }

    /** A builder for a layout of the given attention kind. */
    public static Builder builder(AttentionKind kind) {
        return new Builder(kind);
    }

    /** Bytes per token per buffer for MHA: {@code kvHeads * headDim * dtypeBytes}. */
    public static long mhaBytesPerToken(int kvHeads, int headDim, int dtypeBytes) {
        requirePositive("kvHeads", kvHeads);
        requirePositive("headDim", headDim);
        requirePositive("dtypeBytes", dtypeBytes);
        return (long) kvHeads * headDim * dtypeBytes;
    }

    /** Bytes per token of the MLA latent buffer: {@code (kvLoraRank + qkRopeHeadDim) * dtypeBytes}. */
    public static long mlaBytesPerToken(int kvLoraRank, int qkRopeHeadDim, int dtypeBytes) {
        requirePositive("kvLoraRank", kvLoraRank);
        if (qkRopeHeadDim < 0) {
            throw new IllegalArgumentException("qkRopeHeadDim must be >= 0, was " + qkRopeHeadDim);
        }
        requirePositive("dtypeBytes", dtypeBytes);
        return ((long) kvLoraRank + qkRopeHeadDim) * dtypeBytes;
    }

    private static void requirePositive(String field, long value) {
        if (value < 1) {
            throw new IllegalArgumentException(field + " must be >= 1, was " + value);
        }
    }

    /** MHA or MLA. */
    public AttentionKind kind() {
        return kind;
    }

    /** The page shape (layers, buffers, tokens per page, bytes per token) a host pool must match. */
    public KvPageShape shape() {
        return shape;
    }

    /** Layers. */
    public int layerCount() {
        return shape.layerCount();
    }

    /** Buffers per layer: 2 for MHA, 1 for MLA. */
    public int bufferCount() {
        return shape.bufferCount();
    }

    /** Tokens per page. */
    public int pageSizeTokens() {
        return shape.pageSizeTokens();
    }

    /** Bytes one token occupies in one buffer of one layer. */
    public long bytesPerTokenPerBuffer() {
        return shape.bytesPerTokenPerBuffer();
    }

    /** Device pages per buffer (the device pool's size in pages). */
    public int pageCount() {
        return pageCount;
    }

    /** Distance between the starts of consecutive device pages of one buffer; at least {@link #pageBytes()}. */
    public long pageStrideBytes() {
        return pageStrideBytes;
    }

    /** Bytes of one page of one buffer of one layer. */
    public long pageBytes() {
        return shape.pageBytes();
    }

    /** Bytes of one page over every layer and buffer. */
    public long bytesPerPageAllLayers() {
        return shape.bytesPerPageAllLayers();
    }

    /** Device bytes of every page of every layer and buffer (payload only, without stride padding). */
    public long totalPageBytes() {
        return bytesPerPageAllLayers() * pageCount;
    }

    /** Base address of a layer's buffer. */
    public long bufferBase(int layer, int buffer) {
        checkLayerBuffer(layer, buffer);
        return bases[layer * shape.bufferCount() + buffer];
    }

    /**
     * Device address of a page of one layer's buffer. Allocation-free.
     *
     * @throws IndexOutOfBoundsException naming the value when layer, buffer or page is out of range
     */
    public long pageAddress(int layer, int buffer, int devicePage) {
        checkLayerBuffer(layer, buffer);
        if (devicePage < 0 || devicePage >= pageCount) {
            throw new IndexOutOfBoundsException("devicePage " + devicePage + " out of [0, " + pageCount + ")");
        }
        return bases[layer * shape.bufferCount() + buffer] + devicePage * pageStrideBytes;
    }

    private void checkLayerBuffer(int layer, int buffer) {
        if (layer < 0 || layer >= shape.layerCount()) {
            throw new IndexOutOfBoundsException("layer " + layer + " out of [0, " + shape.layerCount() + ")");
        }
        if (buffer < 0 || buffer >= shape.bufferCount()) {
            throw new IndexOutOfBoundsException("buffer " + buffer + " out of [0, " + shape.bufferCount() + ")");
        }
    }

    @Override
    public String toString() {
        return "DeviceKvLayout{" + kind + ", " + shape + ", pageCount=" + pageCount
                + ", pageStrideBytes=" + pageStrideBytes + "}";
    }

    /**
     * Builds a {@link DeviceKvLayout}. Set the layer count before any base address. Not thread-safe;
     * use on one thread and discard.
     */
    public static final class Builder {
        private final AttentionKind kind;
        private int layerCount;
        private int pageSizeTokens;
        private long bytesPerTokenPerBuffer;
        private int pageCount;
        private long pageStrideBytes;
        private long[] bases;

        private Builder(AttentionKind kind) {
            if (kind == null) {
                throw new IllegalArgumentException("kind must not be null");
            }
            this.kind = kind;
        }

        /** Number of layers; resets any base addresses set so far. */
        public Builder layerCount(int layerCount) {
            requirePositive("layerCount", layerCount);
            this.layerCount = layerCount;
            this.bases = new long[layerCount * kind.bufferCount()];
            return this;
        }

        /** Tokens per page. */
        public Builder pageSizeTokens(int pageSizeTokens) {
            this.pageSizeTokens = pageSizeTokens;
            return this;
        }

        /** Bytes per token per buffer; see {@link #mhaBytesPerToken} and {@link #mlaBytesPerToken}. */
        public Builder bytesPerTokenPerBuffer(long bytesPerTokenPerBuffer) {
            this.bytesPerTokenPerBuffer = bytesPerTokenPerBuffer;
            return this;
        }

        /** Device pages per buffer. */
        public Builder pageCount(int pageCount) {
            this.pageCount = pageCount;
            return this;
        }

        /** Distance between consecutive device pages; 0 (the default) means exactly the page bytes. */
        public Builder pageStrideBytes(long pageStrideBytes) {
            this.pageStrideBytes = pageStrideBytes;
            return this;
        }

        /** Base address of one layer's buffer. */
        public Builder bufferBase(int layer, int buffer, long address) {
            if (bases == null) {
                throw new IllegalStateException("set layerCount before bufferBase");
            }
            if (layer < 0 || layer >= layerCount) {
                throw new IllegalArgumentException("layer " + layer + " out of [0, " + layerCount + ")");
            }
            if (buffer < 0 || buffer >= kind.bufferCount()) {
                throw new IllegalArgumentException("buffer " + buffer + " out of [0, " + kind.bufferCount()
                        + ") for " + kind);
            }
            bases[layer * kind.bufferCount() + buffer] = address;
            return this;
        }

        /**
         * Places every (layer, buffer) region back to back from {@code baseAddress}, layer-major:
         * region {@code layer * bufferCount + buffer} starts at {@code baseAddress + index * pageCount *
         * stride}. Needs layer count, page count, page size and bytes per token set first.
         */
        public Builder packedFrom(long baseAddress) {
            if (bases == null) {
                throw new IllegalStateException("set layerCount before packedFrom");
            }
            long stride = effectiveStride();
            if (stride < 1 || pageCount < 1) {
                throw new IllegalStateException("set pageSizeTokens, bytesPerTokenPerBuffer and pageCount before packedFrom");
            }
            long regionBytes = Math.multiplyExact(stride, (long) pageCount);
            for (int i = 0; i < bases.length; i++) {
                bases[i] = baseAddress + i * regionBytes;
            }
            return this;
        }

        /** Device bytes {@link #packedFrom} spans: what to {@code cudaMalloc} for a packed layout. */
        public long packedBytes() {
            if (bases == null) {
                throw new IllegalStateException("set layerCount before packedBytes");
            }
            return Math.multiplyExact(Math.multiplyExact(effectiveStride(), (long) pageCount), (long) bases.length);
        }

        private long effectiveStride() {
            return pageStrideBytes == 0 ? (long) pageSizeTokens * bytesPerTokenPerBuffer : pageStrideBytes;
        }

        /**
         * Validates and builds.
         *
         * @throws IllegalArgumentException naming the field: non-positive counts or sizes, a stride below
         *                                  the page bytes, a zero base address, or two buffer regions that
         *                                  overlap
         */
        public DeviceKvLayout build() {
            if (bases == null) {
                throw new IllegalArgumentException("layerCount must be set (>= 1)");
            }
            KvPageShape shape = new KvPageShape(layerCount, kind.bufferCount(), pageSizeTokens, bytesPerTokenPerBuffer);
            requirePositive("pageCount", pageCount);
            long stride = effectiveStride();
            if (stride < shape.pageBytes()) {
                throw new IllegalArgumentException("pageStrideBytes must be >= pageBytes (" + shape.pageBytes()
                        + "), was " + stride);
            }
            long regionBytes;
            try {
                regionBytes = Math.multiplyExact(stride, (long) pageCount);
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("pageStrideBytes * pageCount overflows a long: pageStrideBytes="
                        + stride + ", pageCount=" + pageCount, e);
            }
            int bufferCount = kind.bufferCount();
            for (int i = 0; i < bases.length; i++) {
                if (bases[i] == 0) {
                    throw new IllegalArgumentException("bufferBase(layer=" + (i / bufferCount) + ", buffer="
                            + (i % bufferCount) + ") is not set (0)");
                }
                if (bases[i] > Long.MAX_VALUE - regionBytes) {
                    throw new IllegalArgumentException("bufferBase(layer=" + (i / bufferCount) + ", buffer="
                            + (i % bufferCount) + ") + region bytes overflows: base=0x" + Long.toHexString(bases[i]));
                }
            }
            checkDisjoint(bases, regionBytes, bufferCount);
            return new DeviceKvLayout(kind, shape, pageCount, stride, bases.clone());
        }

        private static void checkDisjoint(long[] bases, long regionBytes, int bufferCount) {
            Integer[] order = new Integer[bases.length];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            Arrays.sort(order, (a, b) -> Long.compare(bases[a], bases[b]));
            for (int i = 1; i < order.length; i++) {
                int prev = order[i - 1];
                int cur = order[i];
                if (bases[cur] < bases[prev] + regionBytes) {
                    throw new IllegalArgumentException("bufferBase(layer=" + (cur / bufferCount) + ", buffer="
                            + (cur % bufferCount) + ")=0x" + Long.toHexString(bases[cur])
                            + " overlaps bufferBase(layer=" + (prev / bufferCount) + ", buffer="
                            + (prev % bufferCount) + ")=0x" + Long.toHexString(bases[prev])
                            + " whose region spans " + regionBytes + " bytes");
                }
            }
        }
    }
}
