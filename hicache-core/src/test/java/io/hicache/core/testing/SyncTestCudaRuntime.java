package io.hicache.core.testing;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.TreeMap;

/**
 * TEMPORARY test-only runtime until SimulatedCudaRuntime lands on main: copies run synchronously over
 * real off-heap memory, bounds-checked against the allocations it made or registered.
 */
public final class SyncTestCudaRuntime implements CudaRuntime {
    private final Arena arena = Arena.ofShared();
    private final TreeMap<Long, MemorySegment> allocations = new TreeMap<>();
    private final TreeMap<Long, Long> registered = new TreeMap<>();

    public MemorySegment deviceMemory(long ptr, long bytes) {
        return resolve(ptr, bytes);
    }

    @Override
    public MemorySegment hostMemory(long ptr, long bytes) {
        return resolve(ptr, bytes);
    }

    private synchronized MemorySegment resolve(long ptr, long bytes) {
        Map.Entry<Long, MemorySegment> e = allocations.floorEntry(ptr);
        if (e != null && ptr - e.getKey() + bytes <= e.getValue().byteSize()) {
            return e.getValue().asSlice(ptr - e.getKey(), bytes);
        }
        Map.Entry<Long, Long> r = registered.floorEntry(ptr);
        if (r != null && ptr - r.getKey() + bytes <= r.getValue()) {
            return MemorySegment.ofAddress(ptr).reinterpret(bytes);
        }
        throw new IllegalArgumentException("range 0x" + Long.toHexString(ptr) + "+" + bytes + " not allocated");
    }

    @Override public int runtimeVersion() { return 13000; }
    @Override public int driverVersion() { return 13000; }
    @Override public int deviceCount() { return 1; }
    @Override public void setDevice(int device) { }
    @Override public String errorName(int code) { return "code" + code; }
    @Override public String errorString(int code) { return "code" + code; }
    @Override public CudaStream createStream(int priority) { return new CudaStream(1); }
    @Override public void destroyStream(CudaStream stream) { }
    @Override public void synchronizeStream(CudaStream stream) { }
    @Override public void streamWaitEvent(CudaStream stream, CudaEvent event) { }
    @Override public CudaEvent createEvent(boolean disableTiming) { return new CudaEvent(1); }
    @Override public void destroyEvent(CudaEvent event) { }
    @Override public void recordEvent(CudaEvent event, CudaStream stream) { }
    @Override public int queryEventStatus(CudaEvent event) { return 0; }
    @Override public void synchronizeEvent(CudaEvent event) { }
    @Override public float eventElapsedMs(CudaEvent start, CudaEvent end) { return 0; }

    @Override
    public synchronized long deviceMalloc(long bytes) {
        MemorySegment s = arena.allocate(bytes, 256);
        allocations.put(s.address(), s);
        return s.address();
    }

    @Override public synchronized void deviceFree(long devicePtr) { allocations.remove(devicePtr); }
    @Override public long hostAlloc(long bytes, int flags) { return deviceMalloc(bytes); }
    @Override public synchronized void hostFree(long hostPtr) { allocations.remove(hostPtr); }
    @Override public synchronized void hostRegister(long hostPtr, long bytes, int flags) { registered.put(hostPtr, bytes); }
    @Override public synchronized void hostUnregister(long hostPtr) { registered.remove(hostPtr); }

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        MemorySegment.copy(resolve(src, bytes), 0, resolve(dst, bytes), 0, bytes);
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        for (long row = 0; row < height; row++) {
            memcpyAsync(dst + row * dstPitch, src + row * srcPitch, widthBytes, kind, stream);
        }
    }

    @Override public boolean supportsBatchedCopy() { return true; }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        for (int i = 0; i < count; i++) {
            memcpyAsync(dsts[i], srcs[i], sizes[i], kind, stream);
        }
    }

    @Override public void launchHostFunc(CudaStream stream, Runnable fn) { fn.run(); }
    @Override public void close() { }
}
