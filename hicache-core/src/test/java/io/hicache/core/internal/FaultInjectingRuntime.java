package io.hicache.core.internal;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.Map;

/**
 * A runtime that forwards every call to another one and throws, once, at the {@code n}-th call of a named method
 * (counted from when the fault is armed): an unexpected {@link IllegalStateException} (a bug, as an agent would
 * meet it) or a {@link CudaException} (a resource the runtime refuses). {@link #allocations()} counts the calls that
 * create something a controller must give back (streams, events, host and device memory), so a test can fail
 * each of them in turn. Thread-safe (synchronized), so agents on their own threads may call it.
 */
final class FaultInjectingRuntime implements CudaRuntime {
    private static final String ALLOCATING = "createStream createEvent hostAlloc hostRegister deviceMalloc";

    private final CudaRuntime delegate;
    private final Map<String, Integer> calls = new HashMap<>();
    private final Map<String, Integer> failAt = new HashMap<>();
    private final Map<String, Boolean> cudaError = new HashMap<>();
    private final Map<String, java.util.function.Supplier<? extends Throwable>> throwing = new HashMap<>();
    private final java.util.Set<Thread> stalling = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private volatile java.util.concurrent.CountDownLatch stallArrived;
    private volatile java.util.concurrent.CountDownLatch stallRelease;
    private int allocations;
    private int failAllocationAt;

    FaultInjectingRuntime(CudaRuntime delegate) {
        this.delegate = delegate;
    }

    /** The {@code n}-th call (1-based, from now) of {@code method} throws an {@link IllegalStateException}. */
    synchronized FaultInjectingRuntime failAt(String method, int n) {
        calls.put(method, 0);
        failAt.put(method, n);
        cudaError.put(method, false);
        throwing.remove(method);
        return this;
    }

    /**
     * The {@code n}-th call (1-based, from now) of {@code method} throws what {@code error} makes (a
     * {@link RuntimeException} or an {@link Error}); with {@code n <= 0} every call from now on does.
     */
    synchronized FaultInjectingRuntime failWith(String method, int n, java.util.function.Supplier<? extends Throwable> error) {
        calls.put(method, 0);
        failAt.put(method, n);
        throwing.put(method, error);
        return this;
    }

    /**
     * The next {@code recordEvent} of {@code thread} records and then stalls inside the call (as a thread preempted
     * in {@code cudaEventRecord}): it counts {@code arrived} down and returns only once {@code release} opens.
     */
    void stallNextRecordOf(Thread thread, java.util.concurrent.CountDownLatch arrived,
                           java.util.concurrent.CountDownLatch release) {
        stallArrived = arrived;
        stallRelease = release;
        stalling.add(thread);
    }

    /** Stops every injected fault of {@code method}. */
    synchronized FaultInjectingRuntime heal(String method) {
        failAt.remove(method);
        throwing.remove(method);
        return this;
    }

    /** The {@code n}-th allocating call (1-based, from construction) throws {@code cudaErrorMemoryAllocation}. */
    synchronized FaultInjectingRuntime failAllocationAt(int n) {
        failAllocationAt = n;
        return this;
    }

    /** Allocating calls so far. */
    synchronized int allocations() {
        return allocations;
    }

    private synchronized void check(String method) {
        if (ALLOCATING.contains(method) && ++allocations == failAllocationAt) {
            int code = CudaError.MEMORY_ALLOCATION.code();
            throw new CudaException(code, delegate.errorName(code), delegate.errorString(code), method + " (injected)");
        }
        Integer at = failAt.get(method);
        if (at != null) {
            int n = calls.merge(method, 1, Integer::sum);
            java.util.function.Supplier<? extends Throwable> error = throwing.get(method);
            if (error != null && (n == at || at <= 0)) {
                Throwable t = error.get();
                if (t instanceof Error e) {
                    throw e;
                }
                throw (RuntimeException) t;
            }
            if (n == at) {
                throw new IllegalStateException("injected fault in " + method);
            }
        }
    }

    @Override public int runtimeVersion() { return delegate.runtimeVersion(); }
    @Override public int driverVersion() { return delegate.driverVersion(); }
    @Override public int deviceCount() { return delegate.deviceCount(); }
    @Override public void setDevice(int device) { delegate.setDevice(device); }
    @Override public String errorName(int code) { return delegate.errorName(code); }
    @Override public String errorString(int code) { return delegate.errorString(code); }

    @Override
    public CudaStream createStream(int priority) {
        check("createStream");
        return delegate.createStream(priority);
    }

    @Override public void destroyStream(CudaStream stream) { delegate.destroyStream(stream); }
    @Override public void synchronizeStream(CudaStream stream) { delegate.synchronizeStream(stream); }

    @Override
    public void streamWaitEvent(CudaStream stream, CudaEvent event) {
        check("streamWaitEvent");
        delegate.streamWaitEvent(stream, event);
    }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        check("createEvent");
        return delegate.createEvent(disableTiming);
    }

    @Override public void destroyEvent(CudaEvent event) { delegate.destroyEvent(event); }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
        check("recordEvent");
        delegate.recordEvent(event, stream);
        if (!stalling.isEmpty() && stalling.remove(Thread.currentThread())) {
            stallArrived.countDown();
            try {
                stallRelease.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        check("queryEventStatus");
        return delegate.queryEventStatus(event);
    }

    @Override public void synchronizeEvent(CudaEvent event) { delegate.synchronizeEvent(event); }
    @Override public float eventElapsedMs(CudaEvent start, CudaEvent end) { return delegate.eventElapsedMs(start, end); }

    @Override
    public long deviceMalloc(long bytes) {
        check("deviceMalloc");
        return delegate.deviceMalloc(bytes);
    }

    @Override public void deviceFree(long devicePtr) { delegate.deviceFree(devicePtr); }

    @Override
    public long hostAlloc(long bytes, int flags) {
        check("hostAlloc");
        return delegate.hostAlloc(bytes, flags);
    }

    @Override public void hostFree(long hostPtr) { delegate.hostFree(hostPtr); }

    @Override
    public void hostRegister(long hostPtr, long bytes, int flags) {
        check("hostRegister");
        delegate.hostRegister(hostPtr, bytes, flags);
    }

    @Override public void hostUnregister(long hostPtr) { delegate.hostUnregister(hostPtr); }
    @Override public MemorySegment hostMemory(long hostPtr, long bytes) { return delegate.hostMemory(hostPtr, bytes); }

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        check("memcpyAsync");
        delegate.memcpyAsync(dst, src, bytes, kind, stream);
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        check("memcpy2DAsync");
        delegate.memcpy2DAsync(dst, dstPitch, src, srcPitch, widthBytes, height, kind, stream);
    }

    @Override public boolean supportsBatchedCopy() { return delegate.supportsBatchedCopy(); }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        check("memcpyBatchAsync");
        delegate.memcpyBatchAsync(dsts, srcs, sizes, count, kind, stream);
    }

    @Override public void launchHostFunc(CudaStream stream, Runnable fn) { delegate.launchHostFunc(stream, fn); }
    @Override public boolean tracksRetiredMemory() { return delegate.tracksRetiredMemory(); }
    @Override public void retire(long address, long bytes) { delegate.retire(address, bytes); }
    @Override public void close() { }
}
