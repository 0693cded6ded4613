package io.hicache.cuda;

/**
 * A CUDA event handle: the native {@code cudaEvent_t} value, or a simulated id.
 * A small immutable value; equality is by handle. Valid from {@link CudaRuntime#createEvent(boolean)}
 * until {@link CudaRuntime#destroyEvent(CudaEvent)}.
 *
 * @param handle the runtime's handle value, never 0
 */
public record CudaEvent(long handle) {
}
