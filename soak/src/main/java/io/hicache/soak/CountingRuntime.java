package io.hicache.soak;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link CudaRuntime} that forwards every call, counts the streams and events alive (so the soak can report the
 * ones a closed cache left behind) and injects two seeded faults: a share of copy launches fails with {@code
 * cudaErrorLaunchOutOfResources} (701, not sticky), as a real launch that the driver refuses; and a share of event
 * waits ({@code cudaEventQuery} through {@link #queryEventStatus}/{@link #queryEvent}, {@code cudaEventSynchronize})
 * that find their event complete answer {@code cudaErrorUnknown} (999, not sticky) instead, as a device reporting
 * that the work the event covers failed. The failed event keeps answering the error until it is recorded again, as
 * a real event does. Thread-safe as the runtime it wraps.
 */
final class CountingRuntime implements CudaRuntime {
    private final CudaRuntime d;
    private final AtomicLong streams = new AtomicLong();
    private final AtomicLong events = new AtomicLong();
    private final AtomicLong copyFaults = new AtomicLong();
    private final SplittableRandom faults;
    private final double copyFaultProbability;
    private final AtomicLong eventFaults = new AtomicLong();
    private final double eventFaultProbability;
    /** Events whose completion was turned into a failure; cleared when the event is recorded again. */
    private final Set<CudaEvent> failedEvents = ConcurrentHashMap.newKeySet();

    CountingRuntime(CudaRuntime delegate, long seed, double copyFaultProbability, double eventFaultProbability) {
        this.d = delegate;
        this.faults = new SplittableRandom(seed);
        this.copyFaultProbability = copyFaultProbability;
        this.eventFaultProbability = eventFaultProbability;
    }

    /** Event waits made to fail on purpose (each event counted once per recording). */
    long eventFaults() {
        return eventFaults.get();
    }

    /** The status an event wait reports: the device's, or 999 for a completed event drawn (or already) failed. */
    private int eventStatus(CudaEvent event, int status) {
        if (status != 0 || eventFaultProbability <= 0) {
            return status;
        }
        if (failedEvents.contains(event)) {
            return CudaError.UNKNOWN.code();
        }
        boolean fail;
        synchronized (faults) {
            fail = faults.nextDouble() < eventFaultProbability;
        }
        if (fail && failedEvents.add(event)) {
            eventFaults.incrementAndGet();
            return CudaError.UNKNOWN.code();
        }
        return status;
    }

    /** Copy launches failed on purpose. */
    long copyFaults() {
        return copyFaults.get();
    }

    private void maybeFail(String call) {
        if (copyFaultProbability <= 0) {
            return;
        }
        boolean fail;
        synchronized (faults) {
            fail = faults.nextDouble() < copyFaultProbability;
        }
        if (fail) {
            copyFaults.incrementAndGet();
            throw new CudaException(CudaError.LAUNCH_OUT_OF_RESOURCES.code(), "cudaErrorLaunchOutOfResources",
                "too many resources requested for launch (injected by the soak)", call);
        }
    }

    long liveStreams() {
        return streams.get();
    }

    long liveEvents() {
        return events.get();
    }

    @Override public int runtimeVersion() { return d.runtimeVersion(); }
    @Override public int driverVersion() { return d.driverVersion(); }
    @Override public int deviceCount() { return d.deviceCount(); }
    @Override public void setDevice(int device) { d.setDevice(device); }
    @Override public String errorName(int code) { return d.errorName(code); }
    @Override public String errorString(int code) { return d.errorString(code); }

    @Override
    public CudaStream createStream(int priority) {
        CudaStream s = d.createStream(priority);
        streams.incrementAndGet();
        return s;
    }

    @Override
    public void destroyStream(CudaStream stream) {
        d.destroyStream(stream);
        streams.decrementAndGet();
    }

    @Override public void synchronizeStream(CudaStream stream) { d.synchronizeStream(stream); }
    @Override public void streamWaitEvent(CudaStream stream, CudaEvent event) { d.streamWaitEvent(stream, event); }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        CudaEvent e = d.createEvent(disableTiming);
        events.incrementAndGet();
        return e;
    }

    @Override
    public void destroyEvent(CudaEvent event) {
        failedEvents.remove(event);
        d.destroyEvent(event);
        events.decrementAndGet();
    }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
        d.recordEvent(event, stream);
        failedEvents.remove(event); // new work: its own outcome
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        return eventStatus(event, d.queryEventStatus(event));
    }

    @Override
    public boolean queryEvent(CudaEvent event) {
        int code = queryEventStatus(event);
        if (code == 0 || code == CudaError.NOT_READY.code()) {
            return code == 0;
        }
        throw new CudaException(code, d.errorName(code), d.errorString(code), "cudaEventQuery");
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
        d.synchronizeEvent(event);
        int code = eventStatus(event, 0);
        if (code != 0) {
            throw new CudaException(code, d.errorName(code), d.errorString(code), "cudaEventSynchronize");
        }
    }
    @Override public float eventElapsedMs(CudaEvent start, CudaEvent end) { return d.eventElapsedMs(start, end); }
    @Override public long deviceMalloc(long bytes) { return d.deviceMalloc(bytes); }
    @Override public void deviceFree(long devicePtr) { d.deviceFree(devicePtr); }
    @Override public long hostAlloc(long bytes, int flags) { return d.hostAlloc(bytes, flags); }
    @Override public void hostFree(long hostPtr) { d.hostFree(hostPtr); }
    @Override public void hostRegister(long hostPtr, long bytes, int flags) { d.hostRegister(hostPtr, bytes, flags); }
    @Override public void hostUnregister(long hostPtr) { d.hostUnregister(hostPtr); }
    @Override public MemorySegment hostMemory(long hostPtr, long bytes) { return d.hostMemory(hostPtr, bytes); }

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        maybeFail("cudaMemcpyAsync");
        d.memcpyAsync(dst, src, bytes, kind, stream);
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        maybeFail("cudaMemcpy2DAsync");
        d.memcpy2DAsync(dst, dstPitch, src, srcPitch, widthBytes, height, kind, stream);
    }

    @Override public boolean supportsBatchedCopy() { return d.supportsBatchedCopy(); }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        maybeFail("cudaMemcpyBatchAsync");
        d.memcpyBatchAsync(dsts, srcs, sizes, count, kind, stream);
    }

    @Override public void launchHostFunc(CudaStream stream, Runnable fn) { d.launchHostFunc(stream, fn); }
    @Override public boolean tracksRetiredMemory() { return d.tracksRetiredMemory(); }
    @Override public void retire(long address, long bytes) { d.retire(address, bytes); }
    @Override public void close() { d.close(); }
}
