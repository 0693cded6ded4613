package io.hicache.core.internal;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;

/**
 * A runtime that forwards every call to another one but refuses device-to-host copy submissions from the
 * {@code failFrom}-th on, as a real runtime does when it rejects a call (e.g. {@code cudaErrorInvalidValue}).
 * Copies already accepted keep running on the delegate.
 */
final class FailingSubmissionRuntime implements CudaRuntime {
    private final CudaRuntime delegate;
    private final int failFrom;
    private int d2hSubmissions;

    FailingSubmissionRuntime(CudaRuntime delegate, int failFrom) {
        this.delegate = delegate;
        this.failFrom = failFrom;
    }

    private void maybeFail(CopyKind kind, String call) {
        if (kind == CopyKind.DEVICE_TO_HOST && ++d2hSubmissions >= failFrom) {
            int code = CudaError.INVALID_VALUE.code();
            throw new CudaException(code, delegate.errorName(code), delegate.errorString(code), call);
        }
    }

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        maybeFail(kind, "cudaMemcpyAsync");
        delegate.memcpyAsync(dst, src, bytes, kind, stream);
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        maybeFail(kind, "cudaMemcpy2DAsync");
        delegate.memcpy2DAsync(dst, dstPitch, src, srcPitch, widthBytes, height, kind, stream);
    }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        maybeFail(kind, "cudaMemcpyBatchAsync");
        delegate.memcpyBatchAsync(dsts, srcs, sizes, count, kind, stream);
    }

    @Override public int runtimeVersion() { return delegate.runtimeVersion(); }
    @Override public int driverVersion() { return delegate.driverVersion(); }
    @Override public int deviceCount() { return delegate.deviceCount(); }
    @Override public void setDevice(int device) { delegate.setDevice(device); }
    @Override public String errorName(int code) { return delegate.errorName(code); }
    @Override public String errorString(int code) { return delegate.errorString(code); }
    @Override public CudaStream createStream(int priority) { return delegate.createStream(priority); }
    @Override public void destroyStream(CudaStream stream) { delegate.destroyStream(stream); }
    @Override public void synchronizeStream(CudaStream stream) { delegate.synchronizeStream(stream); }
    @Override public void streamWaitEvent(CudaStream stream, CudaEvent event) { delegate.streamWaitEvent(stream, event); }
    @Override public CudaEvent createEvent(boolean disableTiming) { return delegate.createEvent(disableTiming); }
    @Override public void destroyEvent(CudaEvent event) { delegate.destroyEvent(event); }
    @Override public void recordEvent(CudaEvent event, CudaStream stream) { delegate.recordEvent(event, stream); }
    @Override public int queryEventStatus(CudaEvent event) { return delegate.queryEventStatus(event); }
    @Override public void synchronizeEvent(CudaEvent event) { delegate.synchronizeEvent(event); }
    @Override public float eventElapsedMs(CudaEvent start, CudaEvent end) { return delegate.eventElapsedMs(start, end); }
    @Override public long deviceMalloc(long bytes) { return delegate.deviceMalloc(bytes); }
    @Override public void deviceFree(long devicePtr) { delegate.deviceFree(devicePtr); }
    @Override public long hostAlloc(long bytes, int flags) { return delegate.hostAlloc(bytes, flags); }
    @Override public void hostFree(long hostPtr) { delegate.hostFree(hostPtr); }
    @Override public void hostRegister(long hostPtr, long bytes, int flags) { delegate.hostRegister(hostPtr, bytes, flags); }
    @Override public void hostUnregister(long hostPtr) { delegate.hostUnregister(hostPtr); }
    @Override public MemorySegment hostMemory(long hostPtr, long bytes) { return delegate.hostMemory(hostPtr, bytes); }
    @Override public boolean supportsBatchedCopy() { return delegate.supportsBatchedCopy(); }
    @Override public void launchHostFunc(CudaStream stream, Runnable fn) { delegate.launchHostFunc(stream, fn); }
    @Override public void close() { }
}
