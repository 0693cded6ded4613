package io.hicache.cuda;

/**
 * A CUDA stream handle: the native {@code cudaStream_t} value, or a simulated id.
 * A small immutable value; equality is by handle. Owned by whoever created it through
 * {@link CudaRuntime#createStream(int)} and valid until {@link CudaRuntime#destroyStream(CudaStream)}.
 *
 * @param handle the runtime's handle value; 0 is the legacy default stream
 */
public record CudaStream(long handle) {
    /** The legacy default stream (handle 0). */
    public static final CudaStream DEFAULT = new CudaStream(0L);
}
