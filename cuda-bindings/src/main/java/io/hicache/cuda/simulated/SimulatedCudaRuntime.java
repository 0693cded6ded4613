package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;

import org.agrona.collections.Long2ObjectHashMap;

import static io.hicache.cuda.simulated.CallChecks.cudaException;
import static io.hicache.cuda.simulated.CallChecks.hex;

/**
 * A deterministic CUDA device on a virtual clock. Device and pinned host memory are real off-heap
 * {@link MemorySegment}s; copies move the real bytes when they complete on the virtual clock, never at
 * submission, so a reader that looks too early sees the old bytes.
 *
 * <h2>Execution model</h2>
 * <ul>
 *   <li>Every stream is a FIFO; it runs one operation at a time, in submission order. Handle 0
 *       ({@link CudaStream#DEFAULT}) is a stream like the others (no legacy implicit synchronisation,
 *       as with {@code cudaStreamNonBlocking} streams). Stream priorities are recorded but do not change
 *       the schedule.</li>
 *   <li>Copies and simulated kernels need an engine: one per copy direction and one compute unit (see
 *       {@link SimulatedCudaConfig} for the timing model). An engine runs one operation at a time and
 *       serves waiting streams first-come first-served.</li>
 *   <li>Event records, stream waits and host functions take no time, but like every operation they
 *       complete only inside a clock-advancing call ({@link #advanceTo}, {@link #advanceToNextEvent},
 *       {@link #runUntilIdle}, {@code synchronize*}): an event recorded on an idle stream reads
 *       {@code cudaErrorNotReady} until the clock is advanced, even by zero nanoseconds.</li>
 *   <li>{@link #recordEvent} captures all work queued on the stream so far; recording again re-arms the
 *       event (it then reflects only the newest record). An event never recorded queries as complete.
 *       {@link #streamWaitEvent} captures the event's newest record at the time of the call, as CUDA
 *       does; waiting on a never-recorded event is a no-op.</li>
 *   <li>Operations due at the same virtual time complete in submission order (a global sequence
 *       number), so a run is a pure function of the seed and the call sequence.</li>
 *   <li>{@link #launchHostFunc} runs the {@link Runnable} on the thread advancing the clock, when the
 *       stream reaches it. As in CUDA, it must not call the CUDA API (this runtime throws
 *       {@link IllegalStateException} if it does) and must not block. If it throws, the exception
 *       propagates out of the advancing call with the clock at the function's time; the operation
 *       counts as complete.</li>
 * </ul>
 *
 * <h2>Faults</h2>
 * All reproducible from the seed and the call sequence. {@link #failWorkOp} fails the n-th work
 * operation (copies and kernels, counted from 1 since creation), {@link #failCopiesMatching} fails copies a
 * predicate selects, {@link SimulatedCudaConfig} adds random copy failures and random extra latency, and
 * {@link #injectStickyError} poisons the context at once. A failed copy still occupies its engine for its
 * whole duration; at completion it writes only the first half of its bytes (in range order) and:
 * <ul>
 *   <li>non-sticky error: every event whose record was already queued on that stream when the copy failed
 *       (the events covering it) reports the code from {@link #queryEventStatus}; events recorded later
 *       report success. The next {@link #synchronizeStream} of that stream throws it once. Other
 *       streams, even those waiting on such an event, are not affected.</li>
 *   <li>sticky error ({@link CudaError#sticky()}): the context is poisoned, all queued work is dropped
 *       (no more bytes move), every later CUDA call throws a {@link CudaException} with that code and
 *       {@link #queryEventStatus} returns it. {@link #errorName}, {@link #errorString}, the versions, the
 *       memory views, the counters, the clock and {@link #close()} keep working.</li>
 * </ul>
 *
 * <h2>Bad use</h2>
 * An unknown or destroyed handle, a double free, a pointer outside every allocation, a copy range
 * crossing an allocation's end, a copy kind that does not match where the pointers live, or host memory
 * that is neither from {@link #hostAlloc} nor registered throws {@link IllegalArgumentException} naming
 * the value and the rule; freeing memory that queued copies still use throws
 * {@link IllegalStateException}. Where CUDA defines a code for the mistake ({@code cudaErrorInvalidDevice},
 * {@code cudaErrorHostMemoryAlreadyRegistered}, {@code cudaErrorHostMemoryNotRegistered},
 * {@code cudaErrorMemoryAllocation}) a {@link CudaException} with that code is thrown instead. Either way
 * no state changes. After {@link #close()} every call but {@code close} and the counters throws
 * {@link IllegalStateException}.
 *
 * <h2>Threads</h2>
 * Thread-safe: every public method runs under one {@link ReentrantLock}, so calls are serialised; the
 * clock moves only inside the advancing calls. Host functions run while the lock is held.
 *
 * <h2>Allocation</h2>
 * Operation records are pooled and handles are looked up in primitive maps: submitting copies, records
 * and waits, querying events and advancing the clock allocate nothing in steady state.
 *
 * <h2>Parts</h2>
 * This class holds the handles and checks each call; the device's parts live beside it:
 * {@code VirtualClockDriver} (clock, streams, engines, completion), {@code SimulatedMemory} (allocations and
 * copy-range resolution), {@code FaultInjector}, {@code UseAfterFreeCheck} and {@code SimCounters}.
 */
public final class SimulatedCudaRuntime implements CudaRuntime {

    /** Operation types, as passed to {@link OpListener#onComplete}. */
    public static final int OP_COPY = 1;
    /** A simulated kernel. */
    public static final int OP_KERNEL = 2;
    /** An event record. */
    public static final int OP_RECORD = 3;
    /** A stream wait on an event. */
    public static final int OP_WAIT = 4;
    /** A host function. */
    public static final int OP_HOST_FUNC = 5;

    /**
     * Selects copies to fail; evaluated once per copy range at submission, on the submitting thread,
     * under the runtime's lock. Must not call the runtime.
     */
    @FunctionalInterface
    public interface CopyFaultPredicate {
        /** True to fail the copy of {@code bytes} from {@code src} to {@code dst} in direction {@code kind}. */
        boolean test(long dst, long src, long bytes, CopyKind kind);
    }

    /** Observes every completed operation, e.g. to trace a run; called under the lock; must not call the runtime. */
    @FunctionalInterface
    public interface OpListener {
        /**
         * @param opSeq        the operation's number: the value {@link #opsIssued()} had just after it was issued
         * @param opType       {@link #OP_COPY}, {@link #OP_KERNEL}, {@link #OP_RECORD}, {@link #OP_WAIT} or
         *                     {@link #OP_HOST_FUNC}
         * @param streamHandle the stream it ran on
         * @param startNs      when it started running (after waiting for its engine)
         * @param endNs        when it completed
         * @param errorCode    0, or the CUDA error it failed with
         */
        void onComplete(long opSeq, int opType, long streamHandle, long startNs, long endNs, int errorCode);
    }

    /**
     * Live objects at one moment; all zero after every create is matched by a destroy or free.
     *
     * @param liveStreams            created and not destroyed (the default stream is not counted)
     * @param liveEvents             created and not destroyed
     * @param liveDeviceAllocations  {@code deviceMalloc} not freed
     * @param liveDeviceBytes        bytes of those allocations
     * @param liveHostAllocations    {@code hostAlloc} not freed
     * @param liveHostRegistrations  {@code hostRegister} not unregistered
     */
    public record LeakReport(int liveStreams, int liveEvents, int liveDeviceAllocations, long liveDeviceBytes,
                             int liveHostAllocations, int liveHostRegistrations) {
        /** True when nothing is live. */
        public boolean clean() {
            return liveStreams == 0 && liveEvents == 0 && liveDeviceAllocations == 0 && liveHostAllocations == 0
                    && liveHostRegistrations == 0;
        }
    }

    private final SimulatedCudaConfig config;
    private final ReentrantLock lock = new ReentrantLock();
    private final SimCounters counters = new SimCounters();
    private final FaultInjector faults;
    private final UseAfterFreeCheck useAfterFree = new UseAfterFreeCheck();
    private final SimulatedMemory memory;
    private final VirtualClockDriver driver;
    private final Long2ObjectHashMap<SimStream> streams = new Long2ObjectHashMap<>();
    private final Long2ObjectHashMap<SimEvent> events = new Long2ObjectHashMap<>();
    private final SimStream defaultStream;
    private long nextStreamHandle = 1;
    private long nextEventHandle = 1;
    private boolean closed;

    /** A runtime with {@link SimulatedCudaConfig#defaults()}. */
    public SimulatedCudaRuntime() {
        this(SimulatedCudaConfig.defaults());
    }

    /** A runtime with the given settings; the clock starts at 0. */
    public SimulatedCudaRuntime(SimulatedCudaConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.faults = new FaultInjector(config);
        this.memory = new SimulatedMemory(config);
        this.driver = new VirtualClockDriver(config, faults, useAfterFree, counters);
        defaultStream = new SimStream(0L, 0);
        driver.track(defaultStream);
    }

    /** The settings this runtime was built with. */
    public SimulatedCudaConfig config() {
        return config;
    }

    // ------------------------------------------------------------------ versions, devices, errors

    @Override
    public int runtimeVersion() {
        return config.runtimeVersion();
    }

    @Override
    public int driverVersion() {
        return config.driverVersion();
    }

    @Override
    public int deviceCount() {
        lock.lock();
        try {
            enter("cudaGetDeviceCount");
            return 1;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void setDevice(int device) {
        lock.lock();
        try {
            enter("cudaSetDevice");
            if (device != 0) {
                throw cudaException(CudaError.INVALID_DEVICE.code(), "cudaSetDevice(" + device + ")");
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String errorName(int code) {
        return CudaErrorTexts.name(code);
    }

    @Override
    public String errorString(int code) {
        return CudaErrorTexts.description(code);
    }

    // ------------------------------------------------------------------ streams and events

    @Override
    public CudaStream createStream(int priority) {
        lock.lock();
        try {
            enter("cudaStreamCreateWithPriority");
            SimStream s = new SimStream(nextStreamHandle++, priority);
            streams.put(s.handle, s);
            driver.track(s);
            return new CudaStream(s.handle);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void destroyStream(CudaStream stream) {
        lock.lock();
        try {
            enter("cudaStreamDestroy");
            SimStream s = stream(stream, "cudaStreamDestroy");
            if (s == defaultStream) {
                throw CallChecks.defaultStreamNotDestroyable();
            }
            streams.remove(s.handle);
            driver.destroy(s);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void synchronizeStream(CudaStream stream) {
        lock.lock();
        try {
            enter("cudaStreamSynchronize");
            SimStream s = stream(stream, "cudaStreamSynchronize");
            while (!s.queue.isEmpty()) {
                driver.stepOrDeadlock("cudaStreamSynchronize");
                checkSticky("cudaStreamSynchronize");
            }
            int code = s.syncErrorCode;
            if (code != 0) {
                s.syncErrorCode = 0;
                throw cudaException(code, "cudaStreamSynchronize");
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void streamWaitEvent(CudaStream stream, CudaEvent event) {
        lock.lock();
        try {
            enter("cudaStreamWaitEvent");
            SimStream s = stream(stream, "cudaStreamWaitEvent");
            SimEvent e = event(event, "cudaStreamWaitEvent");
            SimOp op = driver.obtainOp(OP_WAIT);
            op.waitStream = e.recordStream;
            op.waitSeq = e.recordSeq;
            driver.submit(s, op);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        lock.lock();
        try {
            enter("cudaEventCreateWithFlags");
            SimEvent e = new SimEvent(nextEventHandle++, !disableTiming);
            events.put(e.handle, e);
            return new CudaEvent(e.handle);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void destroyEvent(CudaEvent event) {
        lock.lock();
        try {
            enter("cudaEventDestroy");
            SimEvent e = event(event, "cudaEventDestroy");
            events.remove(e.handle);
            e.destroyed = true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
        lock.lock();
        try {
            enter("cudaEventRecord");
            SimEvent e = event(event, "cudaEventRecord");
            SimStream s = stream(stream, "cudaEventRecord");
            SimOp op = driver.obtainOp(OP_RECORD);
            op.event = e;
            driver.submit(s, op);
            e.recordStream = s;
            e.recordSeq = op.seq;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        lock.lock();
        try {
            checkOpenAndNotInHostFunc("cudaEventQuery");
            SimEvent e = event(event, "cudaEventQuery");
            int sticky = driver.stickyCode();
            return sticky != 0 ? sticky : e.status();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
        lock.lock();
        try {
            enter("cudaEventSynchronize");
            SimEvent e = event(event, "cudaEventSynchronize");
            while (e.status() == CudaError.NOT_READY.code()) {
                driver.stepOrDeadlock("cudaEventSynchronize");
                checkSticky("cudaEventSynchronize");
            }
            int code = e.status();
            if (code != 0) {
                throw cudaException(code, "cudaEventSynchronize");
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public float eventElapsedMs(CudaEvent start, CudaEvent end) {
        lock.lock();
        try {
            enter("cudaEventElapsedTime");
            SimEvent a = event(start, "cudaEventElapsedTime");
            SimEvent b = event(end, "cudaEventElapsedTime");
            if (!a.timing || !b.timing || a.recordSeq == 0 || b.recordSeq == 0) {
                // CUDA's answer for events created with cudaEventDisableTiming or never recorded.
                throw cudaException(CudaError.INVALID_RESOURCE_HANDLE.code(),
                        "cudaEventElapsedTime(start=" + hex(a.handle) + ", end=" + hex(b.handle)
                                + "): both events must be recorded and timing-enabled");
            }
            if (a.status() == CudaError.NOT_READY.code() || b.status() == CudaError.NOT_READY.code()) {
                throw cudaException(CudaError.NOT_READY.code(), "cudaEventElapsedTime");
            }
            return (float) ((b.completedNs - a.completedNs) / 1.0e6);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ memory

    @Override
    public long deviceMalloc(long bytes) {
        lock.lock();
        try {
            enter("cudaMalloc");
            return memory.deviceMalloc(bytes);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void deviceFree(long devicePtr) {
        lock.lock();
        try {
            enter("cudaFree");
            memory.deviceFree(devicePtr);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long hostAlloc(long bytes, int flags) {
        lock.lock();
        try {
            enter("cudaHostAlloc");
            return memory.hostAlloc(bytes);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostFree(long hostPtr) {
        lock.lock();
        try {
            enter("cudaFreeHost");
            memory.hostFree(hostPtr);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostRegister(long hostPtr, long bytes, int flags) {
        lock.lock();
        try {
            enter("cudaHostRegister");
            memory.hostRegister(hostPtr, bytes);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostUnregister(long hostPtr) {
        lock.lock();
        try {
            enter("cudaHostUnregister");
            memory.hostUnregister(hostPtr);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public MemorySegment hostMemory(long hostPtr, long bytes) {
        lock.lock();
        try {
            checkOpen("hostMemory");
            return memory.hostMemory(hostPtr, bytes);
        } finally {
            lock.unlock();
        }
    }

    /**
     * A view of {@code bytes} of simulated device memory at {@code devicePtr}, for tests and engine models
     * to write KV and check copied bytes. CPU writes through it are immediate (not ordered with streams).
     * Valid until the allocation is freed or the runtime closed.
     *
     * @throws IllegalArgumentException when the range is not inside one live device allocation
     */
    public MemorySegment deviceMemory(long devicePtr, long bytes) {
        lock.lock();
        try {
            checkOpen("deviceMemory");
            return memory.deviceMemory(devicePtr, bytes);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ copies and work

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        lock.lock();
        try {
            enter("cudaMemcpyAsync");
            SimStream s = stream(stream, "cudaMemcpyAsync");
            submitCopy(s, dst, 0, src, 0, bytes, 1, kind, "cudaMemcpyAsync");
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        lock.lock();
        try {
            enter("cudaMemcpy2DAsync");
            SimStream s = stream(stream, "cudaMemcpy2DAsync");
            if (widthBytes < 0 || height < 0 || dstPitch < widthBytes || srcPitch < widthBytes) {
                throw new IllegalArgumentException("cudaMemcpy2DAsync: need widthBytes >= 0, height >= 0 and pitches >= "
                        + "widthBytes; got widthBytes=" + widthBytes + ", height=" + height + ", dstPitch=" + dstPitch
                        + ", srcPitch=" + srcPitch);
            }
            submitCopy(s, dst, dstPitch, src, srcPitch, widthBytes, height, kind, "cudaMemcpy2DAsync");
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean supportsBatchedCopy() {
        return config.batchedCopySupported();
    }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        lock.lock();
        try {
            enter("cudaMemcpyBatchAsync");
            SimStream s = stream(stream, "cudaMemcpyBatchAsync");
            CallChecks.requireBatch(dsts, srcs, sizes, count, "cudaMemcpyBatchAsync");
            if (count == 0) {
                return;
            }
            SimOp op = driver.obtainOp(OP_COPY);
            try {
                op.ensureSegments(count);
                for (int i = 0; i < count; i++) {
                    memory.resolve(op, i, dsts[i], 0, srcs[i], 0, sizes[i], 1, kind, "cudaMemcpyBatchAsync");
                }
            } catch (RuntimeException ex) {
                driver.recycle(op);
                throw ex;
            }
            if (config.batchedCopySupported() || count == 1) {
                driver.submitCopy(s, op);
                return;
            }
            // Unsupported: one copy per range, as count memcpyAsync calls would issue; all validated above.
            for (int i = 0; i < count; i++) {
                SimOp single = driver.obtainOp(OP_COPY);
                single.ensureSegments(1);
                single.copySegmentFrom(op, i, 0);
                single.segCount = 1;
                single.direction = op.direction;
                driver.submitCopy(s, single);
            }
            driver.recycle(op);
        } finally {
            lock.unlock();
        }
    }

    /** Validates one copy range (nothing changes if it is rejected), then times and queues it. */
    private void submitCopy(SimStream s, long dst, long dstPitch, long src, long srcPitch, long width, long height,
                            CopyKind kind, String call) {
        SimOp op = driver.obtainOp(OP_COPY);
        try {
            op.ensureSegments(1);
            memory.resolve(op, 0, dst, dstPitch, src, srcPitch, width, height, kind, call);
        } catch (RuntimeException ex) {
            driver.recycle(op);
            throw ex;
        }
        driver.submitCopy(s, op);
    }

    /**
     * Queues {@code nanos} of compute on {@code stream}: it runs on the single compute unit (kernels of
     * different streams serialize) and overlaps with copies. Counts as a work operation for
     * {@link #failWorkOp}.
     */
    public void simulateKernel(CudaStream stream, long nanos) {
        lock.lock();
        try {
            enter("simulateKernel");
            SimStream s = stream(stream, "simulateKernel");
            if (nanos < 0) {
                throw new IllegalArgumentException("simulateKernel: nanos must be >= 0, was " + nanos);
            }
            driver.submitKernel(s, nanos);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void launchHostFunc(CudaStream stream, Runnable fn) {
        Objects.requireNonNull(fn, "fn");
        lock.lock();
        try {
            enter("cudaLaunchHostFunc");
            SimStream s = stream(stream, "cudaLaunchHostFunc");
            SimOp op = driver.obtainOp(OP_HOST_FUNC);
            op.fn = fn;
            driver.submit(s, op);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ discrete-event driver

    /** The virtual clock, in nanoseconds since creation. */
    public long nowNs() {
        lock.lock();
        try {
            return driver.nowNs();
        } finally {
            lock.unlock();
        }
    }

    /** When the next queued operation completes, or {@link Long#MAX_VALUE} when nothing is running. */
    public long nextEventTimeNs() {
        lock.lock();
        try {
            return driver.nextEventTimeNs();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Completes, in time order (ties in submission order), every operation due at or before {@code tNs},
     * then sets the clock to {@code tNs}. Host functions run inside this call.
     *
     * @throws IllegalArgumentException when {@code tNs} is before {@link #nowNs()}
     */
    public void advanceTo(long tNs) {
        lock.lock();
        try {
            checkOpenAndNotInHostFunc("advanceTo");
            driver.advanceTo(tNs);
        } finally {
            lock.unlock();
        }
    }

    /** Advances to {@link #nextEventTimeNs()} and completes what is due then; false when nothing was running. */
    public boolean advanceToNextEvent() {
        lock.lock();
        try {
            checkOpenAndNotInHostFunc("advanceToNextEvent");
            return driver.advanceToNextEvent();
        } finally {
            lock.unlock();
        }
    }

    /** Advances until every stream is empty; true when any operation completed. */
    public boolean runUntilIdle() {
        lock.lock();
        try {
            checkOpenAndNotInHostFunc("runUntilIdle");
            return driver.runUntilIdle();
        } finally {
            lock.unlock();
        }
    }

    /** True when no stream has queued work. */
    public boolean idle() {
        lock.lock();
        try {
            return driver.idle();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ faults

    /**
     * Fails the {@code workOpNumber}-th work operation (copies and kernels, counted from 1 since creation;
     * the next one is {@link #workOpsIssued()} + 1) with {@code error}.
     */
    public void failWorkOp(long workOpNumber, CudaError error) {
        lock.lock();
        try {
            checkOpen("failWorkOp");
            faults.failWorkOp(workOpNumber, error, counters.get(SimCounter.WORK_OPS_ISSUED));
        } finally {
            lock.unlock();
        }
    }

    /** Fails every later copy with a range {@code predicate} selects with {@code error}; null clears it. */
    public void failCopiesMatching(CopyFaultPredicate predicate, CudaError error) {
        lock.lock();
        try {
            checkOpen("failCopiesMatching");
            faults.failCopiesMatching(predicate, error);
        } finally {
            lock.unlock();
        }
    }

    /** Replaces the random fault settings taken from {@link SimulatedCudaConfig}. */
    public void setRandomFaults(double copyFailureProbability, CudaError error, double delayProbability,
                                long maxExtraDelayNs) {
        lock.lock();
        try {
            checkOpen("setRandomFaults");
            faults.setRandomFaults(copyFailureProbability, error, delayProbability, maxExtraDelayNs);
        } finally {
            lock.unlock();
        }
    }

    /** Poisons the context now with a sticky {@code error}, dropping all queued work. */
    public void injectStickyError(CudaError error) {
        lock.lock();
        try {
            checkOpen("injectStickyError");
            if (!error.sticky()) {
                throw new IllegalArgumentException("injectStickyError: " + error + " is not a sticky error");
            }
            if (driver.stickyCode() == 0) {
                driver.poison(error.code());
            }
        } finally {
            lock.unlock();
        }
    }

    /** The sticky error poisoning the context, or 0. */
    public int stickyErrorCode() {
        lock.lock();
        try {
            return driver.stickyCode();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Turns the use-after-free check on or off (default off). While on, {@link #retire} records ranges that were
     * freed or handed to a new owner, and a copy issued before a retirement that runs after it and reads or writes
     * the retired range is reported ({@link #useAfterFreeCount()}, {@link #useAfterFreeReports()}): the copy touched
     * memory its issuer no longer owned. Its bytes still move, as they would on a real device.
     */
    public void checkUseAfterFree(boolean on) {
        lock.lock();
        try {
            useAfterFree.enable(on);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean tracksRetiredMemory() {
        return useAfterFree.enabled(); // a plain read, as before: set the check before the copies it should see
    }

    /**
     * Declares {@code [address, address + bytes)} freed or handed to a new owner as of now (no-op unless
     * {@link #checkUseAfterFree} is on). Copies issued from now on may use it freely; copies issued before that
     * are still queued must not touch it.
     */
    @Override
    public void retire(long address, long bytes) {
        lock.lock();
        try {
            useAfterFree.retire(address, bytes, counters.get(SimCounter.OPS_ISSUED),
                    counters.get(SimCounter.QUEUED_COPIES));
        } finally {
            lock.unlock();
        }
    }

    /** Copies that touched a range retired after they were issued (see {@link #checkUseAfterFree}). */
    public long useAfterFreeCount() {
        lock.lock();
        try {
            return useAfterFree.count();
        } finally {
            lock.unlock();
        }
    }

    /** Descriptions of the first use-after-free copies (at most 16). */
    public List<String> useAfterFreeReports() {
        lock.lock();
        try {
            return useAfterFree.reports();
        } finally {
            lock.unlock();
        }
    }

    /** Sets (or, with null, removes) the observer of completed operations. */
    public void setOpListener(OpListener listener) {
        lock.lock();
        try {
            driver.setListener(listener);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ counters

    /** Streams created and not destroyed (the default stream not counted). */
    public int liveStreams() {
        return leakReport().liveStreams();
    }

    /** Events created and not destroyed. */
    public int liveEvents() {
        return leakReport().liveEvents();
    }

    /** Device allocations not freed. */
    public int liveDeviceAllocations() {
        return leakReport().liveDeviceAllocations();
    }

    /** {@code hostAlloc} allocations not freed (registrations are counted by {@link #leakReport()}). */
    public int liveHostAllocations() {
        return leakReport().liveHostAllocations();
    }

    /** Everything still live. */
    public LeakReport leakReport() {
        lock.lock();
        try {
            return new LeakReport(streams.size(), events.size(), memory.liveDeviceAllocations(),
                    memory.liveDeviceBytes(), memory.liveHostAllocations(), memory.liveHostRegistrations());
        } finally {
            lock.unlock();
        }
    }

    /** Operations issued (copies, kernels, records, waits, host functions); a batch counts once. */
    public long opsIssued() {
        return counter(SimCounter.OPS_ISSUED);
    }

    /** Work operations (copies and kernels) issued; see {@link #failWorkOp}. */
    public long workOpsIssued() {
        return counter(SimCounter.WORK_OPS_ISSUED);
    }

    /** Operations completed, failed ones included. */
    public long opsCompleted() {
        return counter(SimCounter.OPS_COMPLETED);
    }

    /** Operations that completed with an error. */
    public long opsFailed() {
        return counter(SimCounter.OPS_FAILED);
    }

    /** Operations dropped unfinished by a sticky error or {@link #close()}. */
    public long opsDropped() {
        return counter(SimCounter.OPS_DROPPED);
    }

    /** Bytes moved by successfully completed copies of one direction ({@code DEFAULT} is not a direction: 0). */
    public long bytesCopied(CopyKind kind) {
        return kind == CopyKind.DEFAULT ? 0 : counter(SimCounter.bytesCopied(kind.value()));
    }

    private long counter(SimCounter c) {
        lock.lock();
        try {
            return counters.get(c);
        } finally {
            lock.unlock();
        }
    }

    /** Frees all device and pinned memory exactly once and drops queued work. Idempotent. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            if (driver.inHostFunc()) {
                throw new IllegalStateException("close() from inside a host function: cudaLaunchHostFunc forbids CUDA calls");
            }
            driver.dropAllWork();
            closed = true;
            memory.closeAll();
            streams.clear();
            events.clear();
            driver.forgetStreams();
        } finally {
            lock.unlock();
        }
    }

    /** Exact {@code ceil(bytes * 1e9 / bytesPerSecond)}: a copy's transfer time. */
    static long transferNs(long bytes, long bytesPerSecond) {
        return VirtualClockDriver.transferNs(bytes, bytesPerSecond);
    }

    // ================================================================== call checks (all under the lock)

    /** Every CUDA call: open, not from a host function, context not poisoned. */
    private void enter(String call) {
        checkOpenAndNotInHostFunc(call);
        checkSticky(call);
    }

    private void checkOpen(String call) {
        if (closed) {
            throw CallChecks.closed(call, "SimulatedCudaRuntime");
        }
    }

    private void checkOpenAndNotInHostFunc(String call) {
        checkOpen(call);
        if (driver.inHostFunc()) {
            throw new IllegalStateException(call + " called from inside a host function: cudaLaunchHostFunc forbids "
                    + "CUDA calls and clock changes there");
        }
    }

    private void checkSticky(String call) {
        int sticky = driver.stickyCode();
        if (sticky != 0) {
            throw cudaException(sticky, call);
        }
    }

    private SimStream stream(CudaStream stream, String call) {
        long handle = stream.handle();
        if (handle == 0) {
            return defaultStream;
        }
        SimStream s = streams.get(handle);
        if (s == null) {
            throw CallChecks.unknownStream(call, handle);
        }
        return s;
    }

    private SimEvent event(CudaEvent event, String call) {
        SimEvent e = events.get(event.handle());
        if (e == null) {
            throw CallChecks.unknownEvent(call, event.handle());
        }
        return e;
    }
}
