package io.hicache.cuda;

import java.lang.foreign.MemorySegment;

/**
 * The CUDA runtime operations HiCache uses: streams, events, asynchronous copies (single, 2D and
 * batched), pinned host memory and device memory.
 *
 * <p>Two implementations: {@link NativeCudaRuntime} calls {@code libcudart} through FFM;
 * {@link io.hicache.cuda.simulated.SimulatedCudaRuntime} is a deterministic virtual-clock device that moves real bytes.
 *
 * <p><b>Threads.</b> Implementations are safe to call from several threads as CUDA itself is; a
 * handle must not be destroyed while another thread still uses it. The hot-path calls
 * ({@link #recordEvent}, {@link #queryEventStatus}, {@link #streamWaitEvent}, {@link #memcpyAsync},
 * {@link #memcpyBatchAsync}) allocate nothing in steady state.
 *
 * <p><b>Failures.</b> Every call that fails throws {@link CudaException} with the numeric code and
 * the runtime's name and text for it, except {@link #queryEventStatus}, which returns the code so a
 * polling loop need not throw. {@link CudaException#sticky()} says whether the context is poisoned.
 * Bad use (an unknown or destroyed handle, a copy outside an allocation) throws before any state
 * changes.
 */
public interface CudaRuntime extends AutoCloseable {

    /** {@code cudaHostAllocDefault}. */
    int HOST_ALLOC_DEFAULT = 0;
    /** {@code cudaHostAllocPortable}: pinned for every context. */
    int HOST_ALLOC_PORTABLE = 1;
    /** {@code cudaHostRegisterDefault}. */
    int HOST_REGISTER_DEFAULT = 0;
    /** {@code cudaHostRegisterPortable}. */
    int HOST_REGISTER_PORTABLE = 1;

    /** {@code cudaRuntimeGetVersion}: e.g. 13000 for CUDA 13.0. */
    int runtimeVersion();

    /** {@code cudaDriverGetVersion}: 0 when no driver is installed. */
    int driverVersion();

    /** {@code cudaGetDeviceCount}. */
    int deviceCount();

    /** {@code cudaSetDevice} for the calling thread. */
    void setDevice(int device);

    /** {@code cudaGetErrorName} for a code. */
    String errorName(int code);

    /** {@code cudaGetErrorString} for a code. */
    String errorString(int code);

    // ---- streams and events ----

    /** {@code cudaStreamCreateWithPriority(cudaStreamNonBlocking, priority)}; lower is higher priority. */
    CudaStream createStream(int priority);

    /** {@code cudaStreamDestroy}. */
    void destroyStream(CudaStream stream);

    /** {@code cudaStreamSynchronize}: blocks (or, simulated, advances the clock) until the stream is idle. */
    void synchronizeStream(CudaStream stream);

    /** {@code cudaStreamWaitEvent}: work queued on {@code stream} after this waits for {@code event}. */
    void streamWaitEvent(CudaStream stream, CudaEvent event);

    /** {@code cudaEventCreateWithFlags}; {@code disableTiming} adds {@code cudaEventDisableTiming}. */
    CudaEvent createEvent(boolean disableTiming);

    /** {@code cudaEventDestroy}. */
    void destroyEvent(CudaEvent event);

    /** {@code cudaEventRecord}: the event completes when all work queued on {@code stream} so far does. */
    void recordEvent(CudaEvent event, CudaStream stream);

    /**
     * {@code cudaEventQuery}, returning the raw code: 0 ({@code cudaSuccess}) when complete, 600
     * ({@code cudaErrorNotReady}) while pending, any other code for a failure of the work it covers.
     * Never throws for a runtime error; allocation-free.
     */
    int queryEventStatus(CudaEvent event);

    /** {@code cudaEventQuery} as a boolean: true when complete, false while pending; throws on failure. */
    default boolean queryEvent(CudaEvent event) {
        int code = queryEventStatus(event);
        if (code == 0) {
            return true;
        }
        if (code == CudaError.NOT_READY.code()) {
            return false;
        }
        throw new CudaException(code, errorName(code), errorString(code), "cudaEventQuery");
    }

    /** {@code cudaEventSynchronize}. */
    void synchronizeEvent(CudaEvent event);

    /** {@code cudaEventElapsedTime} in milliseconds between two completed, timing-enabled events. */
    float eventElapsedMs(CudaEvent start, CudaEvent end);

    // ---- memory ----

    /** {@code cudaMalloc}: returns the device address. */
    long deviceMalloc(long bytes);

    /** {@code cudaFree}. */
    void deviceFree(long devicePtr);

    /** {@code cudaHostAlloc}: pinned host memory; returns its address. */
    long hostAlloc(long bytes, int flags);

    /** {@code cudaFreeHost}. */
    void hostFree(long hostPtr);

    /** {@code cudaHostRegister}: pins an existing host range (e.g. an mmap'd region). */
    void hostRegister(long hostPtr, long bytes, int flags);

    /** {@code cudaHostUnregister}. */
    void hostUnregister(long hostPtr);

    /**
     * A view of {@code bytes} of host memory at {@code hostPtr} (from {@link #hostAlloc} or a
     * registered range), for reading and writing host KV on the CPU. The view is valid while the
     * memory is.
     */
    MemorySegment hostMemory(long hostPtr, long bytes);

    // ---- copies ----

    /** {@code cudaMemcpyAsync}. */
    void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream);

    /** {@code cudaMemcpy2DAsync}: {@code height} rows of {@code widthBytes}, with the given pitches. */
    void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                       CopyKind kind, CudaStream stream);

    /** True when {@link #memcpyBatchAsync} issues one runtime call ({@code cudaMemcpyBatchAsync}, CUDA 12.8+). */
    boolean supportsBatchedCopy();

    /**
     * Copies {@code count} independent ranges in stream order: as one {@code cudaMemcpyBatchAsync} where
     * {@link #supportsBatchedCopy()} holds, else as {@code count} {@link #memcpyAsync} calls. The arrays
     * are read during the call only and may be reused afterwards.
     */
    void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream);

    /**
     * {@code cudaLaunchHostFunc}: runs {@code fn} on a runtime thread once all prior work on the stream
     * completes. Not a hot-path call: native implementations create an upcall stub per call.
     */
    void launchHostFunc(CudaStream stream, Runnable fn);

    /**
     * Whether this runtime checks {@link #retire} declarations (a checking simulator does; a real device does
     * not). Callers skip computing the ranges when false.
     */
    default boolean tracksRetiredMemory() {
        return false;
    }

    /**
     * Declares that {@code [address, address + bytes)} was freed or handed to a new owner now: copies issued before
     * this call must not touch it when they run. A checking runtime reports those that do; others ignore the call.
     */
    default void retire(long address, long bytes) {
    }

    /** Releases what the runtime object holds (not device state created through it). Idempotent. */
    @Override
    void close();
}
