package io.hicache.bench;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

/**
 * A {@link CudaRuntime} that does nothing: events are complete as soon as they are recorded, copies move no
 * bytes and take no time, device memory is only an address range. It exists so benchmarks can measure the
 * library's own cost (hooks, submission, commit) without the simulated device's lock, clock and byte copies.
 * Host memory is real (heap-independent native memory from one shared arena) because host pools view it.
 *
 * <p>Counts the copy ranges it is asked to queue ({@link #copiesIssued()}), one per range whether it came as
 * a single, 2D or batched call. Not for correctness tests. Thread-safe for the counters' single-writer use
 * in benchmarks; host allocation is synchronised.
 */
public final class NoOpCudaRuntime implements CudaRuntime {
    private final Arena arena = Arena.ofShared();
    private final Map<Long, MemorySegment> hostAllocations = new HashMap<>();
    private long nextHandle = 1;
    private long nextDeviceAddress = 1L << 40;
    private long copiesIssued;
    private long runtimeCalls;

    /** Copy ranges queued so far. */
    public long copiesIssued() {
        return copiesIssued;
    }

    /** Copy calls (single, 2D or batched) made so far. */
    public long copyCalls() {
        return runtimeCalls;
    }

    @Override
    public int runtimeVersion() {
        return 13000;
    }

    @Override
    public int driverVersion() {
        return 0;
    }

    @Override
    public int deviceCount() {
        return 1;
    }

    @Override
    public void setDevice(int device) {
    }

    @Override
    public String errorName(int code) {
        return "noop-error-" + code;
    }

    @Override
    public String errorString(int code) {
        return "no-op runtime error " + code;
    }

    @Override
    public synchronized CudaStream createStream(int priority) {
        return new CudaStream(nextHandle++);
    }

    @Override
    public void destroyStream(CudaStream stream) {
    }

    @Override
    public void synchronizeStream(CudaStream stream) {
    }

    @Override
    public void streamWaitEvent(CudaStream stream, CudaEvent event) {
    }

    @Override
    public synchronized CudaEvent createEvent(boolean disableTiming) {
        return new CudaEvent(nextHandle++);
    }

    @Override
    public void destroyEvent(CudaEvent event) {
    }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        return 0;
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
    }

    @Override
    public float eventElapsedMs(CudaEvent start, CudaEvent end) {
        return 0f;
    }

    @Override
    public synchronized long deviceMalloc(long bytes) {
        long address = nextDeviceAddress;
        nextDeviceAddress += (bytes + 4095) & ~4095L;
        return address;
    }

    @Override
    public void deviceFree(long devicePtr) {
    }

    @Override
    public synchronized long hostAlloc(long bytes, int flags) {
        MemorySegment segment = arena.allocate(bytes, 4096);
        hostAllocations.put(segment.address(), segment);
        return segment.address();
    }

    @Override
    public synchronized void hostFree(long hostPtr) {
        hostAllocations.remove(hostPtr);
    }

    @Override
    public void hostRegister(long hostPtr, long bytes, int flags) {
    }

    @Override
    public void hostUnregister(long hostPtr) {
    }

    @Override
    public synchronized MemorySegment hostMemory(long hostPtr, long bytes) {
        MemorySegment segment = hostAllocations.get(hostPtr);
        if (segment == null || segment.byteSize() < bytes) {
            throw new IllegalArgumentException("host range " + hostPtr + " + " + bytes + " was not allocated here");
        }
        return segment.asSlice(0, bytes);
    }

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        copiesIssued++;
        runtimeCalls++;
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        copiesIssued++;
        runtimeCalls++;
    }

    @Override
    public boolean supportsBatchedCopy() {
        return false;
    }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind,
                                 CudaStream stream) {
        copiesIssued += count;
        runtimeCalls += count;
    }

    @Override
    public void launchHostFunc(CudaStream stream, Runnable fn) {
        fn.run();
    }

    @Override
    public void close() {
        arena.close();
    }
}
