package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;
import java.util.concurrent.locks.ReentrantLock;

import org.agrona.collections.Long2LongHashMap;
import org.agrona.collections.Long2ObjectHashMap;

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
 */
public final class SimulatedCudaRuntime implements CudaRuntime {

    /** First simulated device address: above every user-space host address on x86-64 and arm64. */
    static final long DEVICE_BASE_ADDRESS = 1L << 60;
    /** Alignment of device allocations (cudaMalloc guarantees 256 bytes). */
    static final long DEVICE_ALIGNMENT_BYTES = 256;
    /** Unmapped gap between device allocations, so off-by-one pointers do not land in a neighbour. */
    static final long DEVICE_GUARD_BYTES = 1L << 20;
    private static final long HOST_ALIGNMENT_BYTES = 4096;

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

    private static final int HEAD_IDLE = 0;
    private static final int HEAD_WAITING_ENGINE = 1;
    private static final int HEAD_BLOCKED = 2;
    private static final int HEAD_IN_FLIGHT = 3;

    private static final int ENGINE_COMPUTE = 0;
    private static final int ENGINE_H2D = 1;
    private static final int ENGINE_D2H = 2;
    private static final int ENGINE_D2D = 3;

    private static final int MEM_DEVICE = 1;
    private static final int MEM_HOST_ALLOC = 2;
    private static final int MEM_HOST_REGISTERED = 3;

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
    /** {@link SimulatedCudaConfig#moveBytes()}, read on every copy completion. */
    private final boolean moveBytes;
    private final ReentrantLock lock = new ReentrantLock();
    // use-after-free check: retired ranges with the last op issued before each retirement (guarded by lock)
    private boolean uafCheck;
    private long[] retiredFrom = new long[64];
    private long[] retiredTo = new long[64];
    private long[] retiredSeq = new long[64];
    private int retiredCount;
    private long queuedCopies;
    private long useAfterFree;
    private final ArrayList<String> uafReports = new ArrayList<>();
    private final SplittableRandom random;

    private final Long2ObjectHashMap<StreamState> streams = new Long2ObjectHashMap<>();
    private final Long2ObjectHashMap<EventState> events = new Long2ObjectHashMap<>();
    /** Streams with queued work or live handles (the default stream, live ones, destroyed ones draining). */
    private final ArrayList<StreamState> activeStreams = new ArrayList<>();
    private final StreamState defaultStream;
    private final AllocTable deviceTable = new AllocTable();
    private final AllocTable hostTable = new AllocTable();
    private final Engine[] engines = new Engine[4];
    private final ArrayDeque<Op> opPool = new ArrayDeque<>();
    private StreamState[] heap = new StreamState[16];
    private int heapSize;

    private long nowNs;
    private long lastSeq;
    private long workOpsIssued;
    private long nextStreamHandle = 1;
    private long nextEventHandle = 1;
    private long nextDevicePtr = DEVICE_BASE_ADDRESS;
    private long liveDeviceBytes;
    private int liveHostAllocations;
    private int liveHostRegistrations;
    private int stickyCode;
    private boolean closed;
    private boolean inHostFunc;

    private long opsCompleted;
    private long opsFailed;
    private long opsDropped;
    private final long[] bytesCopiedByKind = new long[4];

    private final Long2LongHashMap failAtWorkOp = new Long2LongHashMap(0L);
    private CopyFaultPredicate copyFaultPredicate;
    private int copyFaultCode;
    private double copyFailureProbability;
    private int randomFailureCode;
    private double delayProbability;
    private long maxExtraDelayNs;
    private OpListener listener;

    /** A runtime with {@link SimulatedCudaConfig#defaults()}. */
    public SimulatedCudaRuntime() {
        this(SimulatedCudaConfig.defaults());
    }

    /** A runtime with the given settings; the clock starts at 0. */
    public SimulatedCudaRuntime(SimulatedCudaConfig config) {
        this.config = Objects.requireNonNull(config, "config");
        this.moveBytes = config.moveBytes();
        this.random = new SplittableRandom(config.seed());
        this.copyFailureProbability = config.copyFailureProbability();
        this.randomFailureCode = config.randomFailureError().code();
        this.delayProbability = config.delayProbability();
        this.maxExtraDelayNs = config.maxExtraDelayNs();
        for (int i = 0; i < engines.length; i++) {
            engines[i] = new Engine();
        }
        defaultStream = new StreamState(0L, 0);
        activeStreams.add(defaultStream);
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
            StreamState s = new StreamState(nextStreamHandle++, priority);
            streams.put(s.handle, s);
            activeStreams.add(s);
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
            StreamState s = stream(stream, "cudaStreamDestroy");
            if (s == defaultStream) {
                throw new IllegalArgumentException("cudaStreamDestroy: the default stream (handle 0) cannot be destroyed");
            }
            streams.remove(s.handle);
            s.destroyed = true;
            if (s.queue.isEmpty()) {
                activeStreams.remove(s);
            }
            // Otherwise its queued work still runs, as in CUDA, and kick() retires it once drained.
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void synchronizeStream(CudaStream stream) {
        lock.lock();
        try {
            enterAdvancing("cudaStreamSynchronize");
            StreamState s = stream(stream, "cudaStreamSynchronize");
            while (!s.queue.isEmpty()) {
                stepOrDeadlock("cudaStreamSynchronize");
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
            StreamState s = stream(stream, "cudaStreamWaitEvent");
            EventState e = event(event, "cudaStreamWaitEvent");
            Op op = obtainOp(OP_WAIT);
            op.waitStream = e.recordStream;
            op.waitSeq = e.recordSeq;
            submit(s, op);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        lock.lock();
        try {
            enter("cudaEventCreateWithFlags");
            EventState e = new EventState(nextEventHandle++, !disableTiming);
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
            EventState e = event(event, "cudaEventDestroy");
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
            EventState e = event(event, "cudaEventRecord");
            StreamState s = stream(stream, "cudaEventRecord");
            Op op = obtainOp(OP_RECORD);
            op.event = e;
            submit(s, op);
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
            EventState e = event(event, "cudaEventQuery");
            if (stickyCode != 0) {
                return stickyCode;
            }
            return status(e);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
        lock.lock();
        try {
            enterAdvancing("cudaEventSynchronize");
            EventState e = event(event, "cudaEventSynchronize");
            while (status(e) == CudaError.NOT_READY.code()) {
                stepOrDeadlock("cudaEventSynchronize");
                checkSticky("cudaEventSynchronize");
            }
            int code = status(e);
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
            EventState a = event(start, "cudaEventElapsedTime");
            EventState b = event(end, "cudaEventElapsedTime");
            if (!a.timing || !b.timing || a.recordSeq == 0 || b.recordSeq == 0) {
                // CUDA's answer for events created with cudaEventDisableTiming or never recorded.
                throw cudaException(CudaError.INVALID_RESOURCE_HANDLE.code(),
                        "cudaEventElapsedTime(start=" + hex(a.handle) + ", end=" + hex(b.handle)
                                + "): both events must be recorded and timing-enabled");
            }
            if (status(a) == CudaError.NOT_READY.code() || status(b) == CudaError.NOT_READY.code()) {
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
            if (bytes <= 0) {
                throw new IllegalArgumentException("cudaMalloc: bytes must be > 0, was " + bytes);
            }
            if (bytes > config.deviceMemoryBytes() - liveDeviceBytes) {
                throw cudaException(CudaError.MEMORY_ALLOCATION.code(), "cudaMalloc(" + bytes + " bytes; "
                        + liveDeviceBytes + " of " + config.deviceMemoryBytes() + " in use)");
            }
            Arena arena = Arena.ofShared();
            MemorySegment segment = arena.allocate(bytes, DEVICE_ALIGNMENT_BYTES);
            if (config.deviceMemoryFill() != 0) {
                segment.fill(config.deviceMemoryFill());
            }
            long ptr = nextDevicePtr;
            long span = (bytes + DEVICE_ALIGNMENT_BYTES - 1) / DEVICE_ALIGNMENT_BYTES * DEVICE_ALIGNMENT_BYTES;
            nextDevicePtr = ptr + span + DEVICE_GUARD_BYTES;
            deviceTable.insert(new Alloc(ptr, bytes, segment, arena, MEM_DEVICE));
            liveDeviceBytes += bytes;
            return ptr;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void deviceFree(long devicePtr) {
        lock.lock();
        try {
            enter("cudaFree");
            Alloc a = deviceTable.findStart(devicePtr);
            if (a == null) {
                throw new IllegalArgumentException("cudaFree(" + hex(devicePtr)
                        + "): not the start of a live device allocation (double free, or never returned by deviceMalloc)");
            }
            requireNoPendingOps(a, "cudaFree");
            deviceTable.remove(a);
            liveDeviceBytes -= a.bytes;
            a.arena.close();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long hostAlloc(long bytes, int flags) {
        lock.lock();
        try {
            enter("cudaHostAlloc");
            if (bytes <= 0) {
                throw new IllegalArgumentException("cudaHostAlloc: bytes must be > 0, was " + bytes);
            }
            Arena arena = Arena.ofShared();
            MemorySegment segment = arena.allocate(bytes, HOST_ALIGNMENT_BYTES);
            long ptr = segment.address();
            if (hostTable.overlaps(ptr, bytes)) {
                arena.close();
                throw new IllegalStateException("cudaHostAlloc: new memory at " + hex(ptr)
                        + " overlaps a registered range; was registered memory freed without hostUnregister?");
            }
            hostTable.insert(new Alloc(ptr, bytes, segment, arena, MEM_HOST_ALLOC));
            liveHostAllocations++;
            return ptr;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostFree(long hostPtr) {
        lock.lock();
        try {
            enter("cudaFreeHost");
            Alloc a = hostTable.findStart(hostPtr);
            if (a == null || a.memKind != MEM_HOST_ALLOC) {
                throw new IllegalArgumentException("cudaFreeHost(" + hex(hostPtr)
                        + "): not the start of a live hostAlloc allocation (double free, or never returned by hostAlloc)");
            }
            requireNoPendingOps(a, "cudaFreeHost");
            hostTable.remove(a);
            liveHostAllocations--;
            a.arena.close();
        } finally {
            lock.unlock();
        }
    }

    @Override
    @SuppressWarnings("restricted") // reinterpret: the caller vouches for [hostPtr, hostPtr + bytes), as with cudaHostRegister
    public void hostRegister(long hostPtr, long bytes, int flags) {
        lock.lock();
        try {
            enter("cudaHostRegister");
            if (hostPtr == 0 || bytes <= 0) {
                throw new IllegalArgumentException("cudaHostRegister(" + hex(hostPtr) + ", " + bytes
                        + "): pointer must be non-null and bytes > 0");
            }
            if (hostPtr >= DEVICE_BASE_ADDRESS || deviceTable.find(hostPtr) != null) {
                throw new IllegalArgumentException("cudaHostRegister(" + hex(hostPtr) + "): a device pointer");
            }
            if (hostTable.overlaps(hostPtr, bytes)) {
                throw cudaException(CudaError.HOST_MEMORY_ALREADY_REGISTERED.code(),
                        "cudaHostRegister(" + hex(hostPtr) + ", " + bytes + ")");
            }
            MemorySegment segment = MemorySegment.ofAddress(hostPtr).reinterpret(bytes);
            hostTable.insert(new Alloc(hostPtr, bytes, segment, null, MEM_HOST_REGISTERED));
            liveHostRegistrations++;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostUnregister(long hostPtr) {
        lock.lock();
        try {
            enter("cudaHostUnregister");
            Alloc a = hostTable.findStart(hostPtr);
            if (a == null || a.memKind != MEM_HOST_REGISTERED) {
                throw cudaException(CudaError.HOST_MEMORY_NOT_REGISTERED.code(),
                        "cudaHostUnregister(" + hex(hostPtr) + ")");
            }
            requireNoPendingOps(a, "cudaHostUnregister");
            hostTable.remove(a);
            liveHostRegistrations--;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public MemorySegment hostMemory(long hostPtr, long bytes) {
        lock.lock();
        try {
            checkOpen("hostMemory");
            Alloc a = hostTable.containing(hostPtr, bytes);
            if (a == null) {
                throw new IllegalArgumentException("hostMemory(" + hex(hostPtr) + ", " + bytes
                        + "): range is not inside one hostAlloc allocation or registered range");
            }
            return a.segment.asSlice(hostPtr - a.base, bytes);
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
            Alloc a = deviceTable.containing(devicePtr, bytes);
            if (a == null) {
                throw new IllegalArgumentException("deviceMemory(" + hex(devicePtr) + ", " + bytes
                        + "): range is not inside one live device allocation");
            }
            return a.segment.asSlice(devicePtr - a.base, bytes);
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
            StreamState s = stream(stream, "cudaMemcpyAsync");
            Op op = obtainOp(OP_COPY);
            try {
                op.ensureSegments(1);
                resolveSegment(op, 0, dst, 0, src, 0, bytes, 1, kind, "cudaMemcpyAsync");
            } catch (RuntimeException ex) {
                recycle(op);
                throw ex;
            }
            finishCopy(s, op);
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
            StreamState s = stream(stream, "cudaMemcpy2DAsync");
            if (widthBytes < 0 || height < 0 || dstPitch < widthBytes || srcPitch < widthBytes) {
                throw new IllegalArgumentException("cudaMemcpy2DAsync: need widthBytes >= 0, height >= 0 and pitches >= "
                        + "widthBytes; got widthBytes=" + widthBytes + ", height=" + height + ", dstPitch=" + dstPitch
                        + ", srcPitch=" + srcPitch);
            }
            Op op = obtainOp(OP_COPY);
            try {
                op.ensureSegments(1);
                resolveSegment(op, 0, dst, dstPitch, src, srcPitch, widthBytes, height, kind, "cudaMemcpy2DAsync");
            } catch (RuntimeException ex) {
                recycle(op);
                throw ex;
            }
            finishCopy(s, op);
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
            StreamState s = stream(stream, "cudaMemcpyBatchAsync");
            if (count < 0 || count > dsts.length || count > srcs.length || count > sizes.length) {
                throw new IllegalArgumentException("cudaMemcpyBatchAsync: count " + count
                        + " must be >= 0 and <= every array's length (" + dsts.length + ", " + srcs.length + ", "
                        + sizes.length + ")");
            }
            if (count == 0) {
                return;
            }
            Op op = obtainOp(OP_COPY);
            try {
                op.ensureSegments(count);
                for (int i = 0; i < count; i++) {
                    resolveSegment(op, i, dsts[i], 0, srcs[i], 0, sizes[i], 1, kind, "cudaMemcpyBatchAsync");
                }
            } catch (RuntimeException ex) {
                recycle(op);
                throw ex;
            }
            if (config.batchedCopySupported() || count == 1) {
                finishCopy(s, op);
                return;
            }
            // Unsupported: one copy per range, as count memcpyAsync calls would issue; all validated above.
            for (int i = 0; i < count; i++) {
                Op single = obtainOp(OP_COPY);
                single.ensureSegments(1);
                single.copySegmentFrom(op, i, 0);
                single.segCount = 1;
                single.kindValue = op.kindValue;
                finishCopy(s, single);
            }
            recycle(op);
        } finally {
            lock.unlock();
        }
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
            StreamState s = stream(stream, "simulateKernel");
            if (nanos < 0) {
                throw new IllegalArgumentException("simulateKernel: nanos must be >= 0, was " + nanos);
            }
            Op op = obtainOp(OP_KERNEL);
            op.engine = ENGINE_COMPUTE;
            op.durationNs = nanos;
            op.failCode = (int) failAtWorkOp.remove(++workOpsIssued);
            submit(s, op);
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
            StreamState s = stream(stream, "cudaLaunchHostFunc");
            Op op = obtainOp(OP_HOST_FUNC);
            op.fn = fn;
            submit(s, op);
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ discrete-event driver

    /** The virtual clock, in nanoseconds since creation. */
    public long nowNs() {
        lock.lock();
        try {
            return nowNs;
        } finally {
            lock.unlock();
        }
    }

    /** When the next queued operation completes, or {@link Long#MAX_VALUE} when nothing is running. */
    public long nextEventTimeNs() {
        lock.lock();
        try {
            return heapSize == 0 ? Long.MAX_VALUE : heap[0].queue.peekFirst().endNs;
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
            enterDriver("advanceTo");
            if (tNs < nowNs) {
                throw new IllegalArgumentException("advanceTo(" + tNs + "): the clock only moves forward; now is " + nowNs);
            }
            while (heapSize > 0 && heap[0].queue.peekFirst().endNs <= tNs) {
                completeNext();
            }
            nowNs = tNs;
        } finally {
            lock.unlock();
        }
    }

    /** Advances to {@link #nextEventTimeNs()} and completes what is due then; false when nothing was running. */
    public boolean advanceToNextEvent() {
        lock.lock();
        try {
            enterDriver("advanceToNextEvent");
            if (heapSize == 0) {
                return false;
            }
            long t = heap[0].queue.peekFirst().endNs;
            while (heapSize > 0 && heap[0].queue.peekFirst().endNs <= t) {
                completeNext();
            }
            nowNs = t;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Advances until every stream is empty; true when any operation completed. */
    public boolean runUntilIdle() {
        lock.lock();
        try {
            enterDriver("runUntilIdle");
            boolean any = false;
            while (heapSize > 0) {
                completeNext();
                any = true;
            }
            return any;
        } finally {
            lock.unlock();
        }
    }

    /** True when no stream has queued work. */
    public boolean idle() {
        lock.lock();
        try {
            for (int i = 0, n = activeStreams.size(); i < n; i++) {
                if (!activeStreams.get(i).queue.isEmpty()) {
                    return false;
                }
            }
            return true;
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
            requireFailureCode(error);
            if (workOpNumber <= workOpsIssued) {
                throw new IllegalArgumentException("failWorkOp(" + workOpNumber + "): work op already issued; next is "
                        + (workOpsIssued + 1));
            }
            failAtWorkOp.put(workOpNumber, error.code());
        } finally {
            lock.unlock();
        }
    }

    /** Fails every later copy with a range {@code predicate} selects with {@code error}; null clears it. */
    public void failCopiesMatching(CopyFaultPredicate predicate, CudaError error) {
        lock.lock();
        try {
            checkOpen("failCopiesMatching");
            if (predicate != null) {
                requireFailureCode(error);
                copyFaultCode = error.code();
            }
            copyFaultPredicate = predicate;
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
            SimulatedCudaConfig checked = config.toBuilder().copyFailureProbability(copyFailureProbability, error)
                    .delayedCompletions(delayProbability, maxExtraDelayNs).build();
            this.copyFailureProbability = checked.copyFailureProbability();
            this.randomFailureCode = checked.randomFailureError().code();
            this.delayProbability = checked.delayProbability();
            this.maxExtraDelayNs = checked.maxExtraDelayNs();
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
            if (stickyCode == 0) {
                poison(error.code());
            }
        } finally {
            lock.unlock();
        }
    }

    /** The sticky error poisoning the context, or 0. */
    public int stickyErrorCode() {
        lock.lock();
        try {
            return stickyCode;
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
            this.uafCheck = on;
            if (!on) {
                retiredCount = 0;
            }
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean tracksRetiredMemory() {
        return uafCheck;
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
            if (!uafCheck || bytes <= 0) {
                return;
            }
            if (queuedCopies == 0) {
                retiredCount = 0; // nothing issued before can run any more
                return;
            }
            if (retiredCount == retiredFrom.length) {
                int cap = retiredCount * 2;
                retiredFrom = java.util.Arrays.copyOf(retiredFrom, cap);
                retiredTo = java.util.Arrays.copyOf(retiredTo, cap);
                retiredSeq = java.util.Arrays.copyOf(retiredSeq, cap);
            }
            retiredFrom[retiredCount] = address;
            retiredTo[retiredCount] = address + bytes;
            retiredSeq[retiredCount] = lastSeq;
            retiredCount++;
        } finally {
            lock.unlock();
        }
    }

    /** Copies that touched a range retired after they were issued (see {@link #checkUseAfterFree}). */
    public long useAfterFreeCount() {
        lock.lock();
        try {
            return useAfterFree;
        } finally {
            lock.unlock();
        }
    }

    /** Descriptions of the first use-after-free copies (at most 16). */
    public List<String> useAfterFreeReports() {
        lock.lock();
        try {
            return List.copyOf(uafReports);
        } finally {
            lock.unlock();
        }
    }

    /** Sets (or, with null, removes) the observer of completed operations. */
    public void setOpListener(OpListener listener) {
        lock.lock();
        try {
            this.listener = listener;
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ counters

    /** Streams created and not destroyed (the default stream not counted). */
    public int liveStreams() {
        lock.lock();
        try {
            return streams.size();
        } finally {
            lock.unlock();
        }
    }

    /** Events created and not destroyed. */
    public int liveEvents() {
        lock.lock();
        try {
            return events.size();
        } finally {
            lock.unlock();
        }
    }

    /** Device allocations not freed. */
    public int liveDeviceAllocations() {
        lock.lock();
        try {
            return deviceTable.size;
        } finally {
            lock.unlock();
        }
    }

    /** {@code hostAlloc} allocations not freed (registrations are counted by {@link #leakReport()}). */
    public int liveHostAllocations() {
        lock.lock();
        try {
            return liveHostAllocations;
        } finally {
            lock.unlock();
        }
    }

    /** Everything still live. */
    public LeakReport leakReport() {
        lock.lock();
        try {
            return new LeakReport(streams.size(), events.size(), deviceTable.size, liveDeviceBytes,
                    liveHostAllocations, liveHostRegistrations);
        } finally {
            lock.unlock();
        }
    }

    /** Operations issued (copies, kernels, records, waits, host functions); a batch counts once. */
    public long opsIssued() {
        lock.lock();
        try {
            return lastSeq;
        } finally {
            lock.unlock();
        }
    }

    /** Work operations (copies and kernels) issued; see {@link #failWorkOp}. */
    public long workOpsIssued() {
        lock.lock();
        try {
            return workOpsIssued;
        } finally {
            lock.unlock();
        }
    }

    /** Operations completed, failed ones included. */
    public long opsCompleted() {
        lock.lock();
        try {
            return opsCompleted;
        } finally {
            lock.unlock();
        }
    }

    /** Operations that completed with an error. */
    public long opsFailed() {
        lock.lock();
        try {
            return opsFailed;
        } finally {
            lock.unlock();
        }
    }

    /** Operations dropped unfinished by a sticky error or {@link #close()}. */
    public long opsDropped() {
        lock.lock();
        try {
            return opsDropped;
        } finally {
            lock.unlock();
        }
    }

    /** Bytes moved by successfully completed copies of one direction ({@code DEFAULT} is not a direction: 0). */
    public long bytesCopied(CopyKind kind) {
        lock.lock();
        try {
            return kind == CopyKind.DEFAULT ? 0 : bytesCopiedByKind[kind.value()];
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
            if (inHostFunc) {
                throw new IllegalStateException("close() from inside a host function: cudaLaunchHostFunc forbids CUDA calls");
            }
            dropAllWork();
            closed = true;
            for (int i = 0; i < deviceTable.size; i++) {
                deviceTable.allocs[i].arena.close();
            }
            for (int i = 0; i < hostTable.size; i++) {
                Alloc a = hostTable.allocs[i];
                if (a.arena != null) {
                    a.arena.close();
                }
            }
            deviceTable.clear();
            hostTable.clear();
            streams.clear();
            events.clear();
            activeStreams.clear();
            liveDeviceBytes = 0;
            liveHostAllocations = 0;
            liveHostRegistrations = 0;
        } finally {
            lock.unlock();
        }
    }

    // ================================================================== internals (all under the lock)

    private void enter(String call) {
        checkOpenAndNotInHostFunc(call);
        checkSticky(call);
    }

    private void enterAdvancing(String call) {
        enter(call);
    }

    private void enterDriver(String call) {
        checkOpenAndNotInHostFunc(call);
    }

    private void checkOpen(String call) {
        if (closed) {
            throw new IllegalStateException(call + ": this SimulatedCudaRuntime is closed (no call is valid after close())");
        }
    }

    private void checkOpenAndNotInHostFunc(String call) {
        checkOpen(call);
        if (inHostFunc) {
            throw new IllegalStateException(call + " called from inside a host function: cudaLaunchHostFunc forbids "
                    + "CUDA calls and clock changes there");
        }
    }

    private void checkSticky(String call) {
        if (stickyCode != 0) {
            throw cudaException(stickyCode, call);
        }
    }

    private CudaException cudaException(int code, String call) {
        return new CudaException(code, CudaErrorTexts.name(code), CudaErrorTexts.description(code), call);
    }

    private static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }

    private static void requireFailureCode(CudaError error) {
        Objects.requireNonNull(error, "error");
        if (error == CudaError.SUCCESS || error == CudaError.NOT_READY || error == CudaError.UNKNOWN_CODE) {
            throw new IllegalArgumentException("a fault needs a failure code, was " + error);
        }
    }

    private void requireNoPendingOps(Alloc a, String call) {
        if (a.pendingOps != 0) {
            throw new IllegalStateException(call + "(" + hex(a.base) + "): " + a.pendingOps
                    + " queued copy range(s) still use this memory; synchronize before freeing it");
        }
    }

    private StreamState stream(CudaStream stream, String call) {
        long handle = stream.handle();
        if (handle == 0) {
            return defaultStream;
        }
        StreamState s = streams.get(handle);
        if (s == null) {
            throw new IllegalArgumentException(call + ": stream " + hex(handle)
                    + " is not live on this runtime (destroyed, or never created by it); a stream handle is valid "
                    + "from createStream until destroyStream");
        }
        return s;
    }

    private EventState event(CudaEvent event, String call) {
        long handle = event.handle();
        EventState e = events.get(handle);
        if (e == null) {
            throw new IllegalArgumentException(call + ": event " + hex(handle)
                    + " is not live on this runtime (destroyed, or never created by it); an event handle is valid "
                    + "from createEvent until destroyEvent");
        }
        return e;
    }

    private static int status(EventState e) {
        if (e.recordSeq == 0) {
            return 0;
        }
        if (e.recordStream.lastCompletedSeq < e.recordSeq) {
            return CudaError.NOT_READY.code();
        }
        return e.status;
    }

    private void stepOrDeadlock(String call) {
        if (heapSize == 0) {
            throw new IllegalStateException(call + ": waits for work that can never complete (nothing is running)");
        }
        long t = heap[0].queue.peekFirst().endNs;
        while (heapSize > 0 && heap[0].queue.peekFirst().endNs <= t) {
            completeNext();
        }
        nowNs = Math.max(nowNs, t);
    }

    /**
     * Resolves copy range {@code i} of {@code op}: both ends inside one allocation each, of the kind the
     * copy kind demands. Sets {@code op.kindValue} (all ranges of an op must share it). Changes no state.
     */
    private void resolveSegment(Op op, int i, long dst, long dstPitch, long src, long srcPitch, long width,
                                long height, CopyKind kind, String call) {
        Objects.requireNonNull(kind, "kind");
        if (width < 0) {
            throw new IllegalArgumentException(call + ": bytes must be >= 0, was " + width);
        }
        long dstSpan;
        long srcSpan;
        try {
            dstSpan = height == 0 ? 0 : Math.addExact(Math.multiplyExact(dstPitch, height - 1), width);
            srcSpan = height == 0 ? 0 : Math.addExact(Math.multiplyExact(srcPitch, height - 1), width);
        } catch (ArithmeticException overflow) {
            throw new IllegalArgumentException(call + ": copy extent overflows a long (pitch * height)");
        }
        Alloc dstDevice = deviceTable.containing(dst, dstSpan);
        Alloc dstHost = dstDevice == null ? hostTable.containing(dst, dstSpan) : null;
        Alloc srcDevice = deviceTable.containing(src, srcSpan);
        Alloc srcHost = srcDevice == null ? hostTable.containing(src, srcSpan) : null;
        if (dstDevice == null && dstHost == null) {
            throw new IllegalArgumentException(call + ": destination [" + hex(dst) + ", +" + dstSpan
                    + ") is not inside one device allocation, hostAlloc allocation or registered host range");
        }
        if (srcDevice == null && srcHost == null) {
            throw new IllegalArgumentException(call + ": source [" + hex(src) + ", +" + srcSpan
                    + ") is not inside one device allocation, hostAlloc allocation or registered host range");
        }
        int inferred = dstDevice != null
                ? (srcDevice != null ? CopyKind.DEVICE_TO_DEVICE.value() : CopyKind.HOST_TO_DEVICE.value())
                : (srcDevice != null ? CopyKind.DEVICE_TO_HOST.value() : CopyKind.HOST_TO_HOST.value());
        if (kind != CopyKind.DEFAULT && kind.value() != inferred) {
            throw new IllegalArgumentException(call + ": kind " + kind + " does not match the pointers: destination "
                    + hex(dst) + " is " + (dstDevice != null ? "device" : "host") + " memory, source " + hex(src)
                    + " is " + (srcDevice != null ? "device" : "host") + " memory");
        }
        if (i > 0 && op.kindValue != inferred) {
            throw new IllegalArgumentException(call + ": range " + i + " is " + kindName(inferred)
                    + " but range 0 is " + kindName(op.kindValue) + "; one batch has one direction");
        }
        op.kindValue = inferred;
        op.dst[i] = dstDevice != null ? dstDevice : dstHost;
        op.dstOff[i] = dst - op.dst[i].base;
        op.dstPitch[i] = dstPitch;
        op.src[i] = srcDevice != null ? srcDevice : srcHost;
        op.srcOff[i] = src - op.src[i].base;
        op.srcPitch[i] = srcPitch;
        op.width[i] = width;
        op.height[i] = height;
        op.segCount = i + 1;
    }

    private static String kindName(int kindValue) {
        return switch (kindValue) {
            case 0 -> "HOST_TO_HOST";
            case 1 -> "HOST_TO_DEVICE";
            case 2 -> "DEVICE_TO_HOST";
            default -> "DEVICE_TO_DEVICE";
        };
    }

    /** Times, fault-decides and queues a validated copy. Only now does state change. */
    private void finishCopy(StreamState s, Op op) {
        long bytes = 0;
        for (int i = 0; i < op.segCount; i++) {
            bytes += op.width[i] * op.height[i];
        }
        op.bytes = bytes;
        long bandwidth;
        switch (op.kindValue) {
            case 1 -> {
                op.engine = ENGINE_H2D;
                bandwidth = config.hostToDeviceBytesPerSecond();
            }
            case 2 -> {
                op.engine = config.sharedPcieLink() ? ENGINE_H2D : ENGINE_D2H;
                bandwidth = config.deviceToHostBytesPerSecond();
            }
            default -> {
                op.engine = ENGINE_D2D;
                bandwidth = config.deviceToDeviceBytesPerSecond();
            }
        }
        long durationNs = saturatingAdd(config.copyLaunchLatencyNs(), transferNs(bytes, bandwidth));
        int failCode = (int) failAtWorkOp.remove(++workOpsIssued);
        if (failCode == 0 && copyFaultPredicate != null) {
            CopyKind kind = kindOf(op.kindValue);
            for (int i = 0; i < op.segCount; i++) {
                if (copyFaultPredicate.test(op.dst[i].base + op.dstOff[i], op.src[i].base + op.srcOff[i],
                        op.width[i] * op.height[i], kind)) {
                    failCode = copyFaultCode;
                    break;
                }
            }
        }
        if (copyFailureProbability > 0 && random.nextDouble() < copyFailureProbability && failCode == 0) {
            failCode = randomFailureCode;
        }
        if (delayProbability > 0 && random.nextDouble() < delayProbability) {
            durationNs = saturatingAdd(durationNs, random.nextLong(maxExtraDelayNs + 1));
        }
        op.durationNs = durationNs;
        op.failCode = failCode;
        for (int i = 0; i < op.segCount; i++) {
            op.dst[i].pendingOps++;
            op.src[i].pendingOps++;
        }
        submit(s, op);
    }

    private static CopyKind kindOf(int kindValue) {
        return switch (kindValue) {
            case 0 -> CopyKind.HOST_TO_HOST;
            case 1 -> CopyKind.HOST_TO_DEVICE;
            case 2 -> CopyKind.DEVICE_TO_HOST;
            default -> CopyKind.DEVICE_TO_DEVICE;
        };
    }

    /** Exact {@code ceil(bytes * 1e9 / bytesPerSecond)}. */
    static long transferNs(long bytes, long bytesPerSecond) {
        if (bytes <= Long.MAX_VALUE / 1_000_000_000L) {
            return Math.ceilDiv(bytes * 1_000_000_000L, bytesPerSecond);
        }
        double ns = Math.ceil(bytes * 1.0e9 / bytesPerSecond);
        return ns >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) ns;
    }

    private static long saturatingAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private Op obtainOp(int type) {
        Op op = opPool.pollFirst();
        if (op == null) {
            op = new Op();
        }
        op.type = type;
        op.engine = -1;
        return op;
    }

    private void recycle(Op op) {
        op.reset();
        opPool.addFirst(op);
    }

    private void submit(StreamState s, Op op) {
        op.seq = ++lastSeq;
        if (op.type == OP_COPY) {
            queuedCopies++;
        }
        op.stream = s;
        s.queue.addLast(op);
        if (s.queue.size() == 1) {
            kick(s);
        }
    }

    /** Starts the head of {@code s} if it is not started: on its engine, blocked on a wait, or zero-time. */
    private void kick(StreamState s) {
        if (s.headState != HEAD_IDLE) {
            return;
        }
        Op op = s.queue.peekFirst();
        if (op == null) {
            if (s.destroyed) {
                activeStreams.remove(s);
            }
            return;
        }
        switch (op.type) {
            case OP_COPY, OP_KERNEL -> {
                Engine engine = engines[op.engine];
                if (engine.current == null) {
                    startOnEngine(engine, s, op);
                } else {
                    engine.waiting.addLast(s);
                    s.headState = HEAD_WAITING_ENGINE;
                }
            }
            case OP_WAIT -> {
                StreamState w = op.waitStream;
                if (w == null || w.lastCompletedSeq >= op.waitSeq) {
                    startZeroTime(s, op);
                } else {
                    w.waiters.add(s);
                    s.headState = HEAD_BLOCKED;
                }
            }
            default -> startZeroTime(s, op);
        }
    }

    private void startOnEngine(Engine engine, StreamState s, Op op) {
        engine.current = op;
        op.startNs = nowNs;
        op.endNs = saturatingAdd(nowNs, op.durationNs);
        s.headState = HEAD_IN_FLIGHT;
        heapPush(s);
    }

    private void startZeroTime(StreamState s, Op op) {
        op.startNs = nowNs;
        op.endNs = nowNs;
        s.headState = HEAD_IN_FLIGHT;
        heapPush(s);
    }

    /** Completes the earliest due operation and starts what it unblocks. */
    private void completeNext() {
        StreamState s = heapPop();
        Op op = s.queue.pollFirst();
        nowNs = Math.max(nowNs, op.endNs);
        s.headState = HEAD_IDLE;
        s.lastCompletedSeq = op.seq;
        opsCompleted++;
        Throwable hostFuncFailure = null;
        int failCode = op.failCode;
        switch (op.type) {
            case OP_COPY -> {
                queuedCopies--;
                if (retiredCount > 0) {
                    checkRetired(op);
                    if (queuedCopies == 0) {
                        retiredCount = 0;
                    }
                }
                if (moveBytes) {
                    copyBytes(op, failCode == 0 ? op.bytes : op.bytes / 2);
                }
                if (failCode == 0) {
                    bytesCopiedByKind[op.kindValue] += op.bytes;
                }
            }
            case OP_RECORD -> {
                EventState e = op.event;
                if (!e.destroyed && e.recordSeq == op.seq) {
                    e.completedNs = nowNs;
                    e.status = s.errorCode != 0 && op.seq <= s.errorCoversUpToSeq ? s.errorCode : 0;
                }
            }
            case OP_HOST_FUNC -> {
                inHostFunc = true;
                try {
                    op.fn.run();
                } catch (RuntimeException | Error ex) {
                    hostFuncFailure = ex;
                } finally {
                    inHostFunc = false;
                }
            }
            default -> {
                // kernels and waits have no effect beyond time
            }
        }
        if (failCode != 0) {
            opsFailed++;
            s.errorCode = failCode;
            s.errorCoversUpToSeq = lastSeq;
            s.syncErrorCode = failCode;
        }
        OpListener l = listener;
        if (l != null) {
            l.onComplete(op.seq, op.type, s.handle, op.startNs, op.endNs, failCode);
        }
        if (op.engine >= 0) {
            Engine engine = engines[op.engine];
            engine.current = null;
            StreamState next = engine.waiting.pollFirst();
            if (next != null) {
                startOnEngine(engine, next, next.queue.peekFirst());
            }
        }
        releaseRefs(op);
        recycle(op);
        if (failCode != 0 && CudaError.of(failCode).sticky()) {
            poison(failCode);
        } else {
            ArrayList<StreamState> waiters = s.waiters;
            for (int i = 0; i < waiters.size(); ) {
                StreamState w = waiters.get(i);
                Op head = w.queue.peekFirst();
                if (s.lastCompletedSeq >= head.waitSeq) {
                    int last = waiters.size() - 1;
                    waiters.set(i, waiters.get(last));
                    waiters.remove(last);
                    startZeroTime(w, head);
                } else {
                    i++;
                }
            }
            kick(s);
        }
        if (hostFuncFailure instanceof RuntimeException re) {
            throw re;
        }
        if (hostFuncFailure instanceof Error err) {
            throw err;
        }
    }

    /** Reports {@code op} if any row it reads or writes lies in a range retired after it was issued. */
    private void checkRetired(Op op) {
        for (int i = 0; i < op.segCount; i++) {
            long width = op.width[i];
            for (long row = 0; row < op.height[i] && width > 0; row++) {
                long dst = op.dst[i].base + op.dstOff[i] + row * op.dstPitch[i];
                long src = op.src[i].base + op.srcOff[i] + row * op.srcPitch[i];
                for (int r = 0; r < retiredCount; r++) {
                    if (retiredSeq[r] < op.seq) {
                        continue; // retired before the copy was issued: the issuer may own it again
                    }
                    boolean dstHit = dst < retiredTo[r] && retiredFrom[r] < dst + width;
                    boolean srcHit = src < retiredTo[r] && retiredFrom[r] < src + width;
                    if (dstHit || srcHit) {
                        useAfterFree++;
                        if (uafReports.size() < 16) {
                            uafReports.add("copy op " + op.seq + " " + kindName(op.kindValue) + " ran at " + nowNs
                                + " ns and " + (dstHit ? "wrote " + hex(dst) : "read " + hex(src)) + " +" + width
                                + " inside [" + hex(retiredFrom[r]) + ", " + hex(retiredTo[r])
                                + "), retired after op " + retiredSeq[r] + " while the copy was queued");
                        }
                        return;
                    }
                }
            }
        }
    }

    /** Copies the first {@code budgetBytes} of the op's ranges, row by row, in range order. */
    private static void copyBytes(Op op, long budgetBytes) {
        long left = budgetBytes;
        for (int i = 0; i < op.segCount && left > 0; i++) {
            MemorySegment dst = op.dst[i].segment;
            MemorySegment src = op.src[i].segment;
            long width = op.width[i];
            long dstOff = op.dstOff[i];
            long srcOff = op.srcOff[i];
            if (width == 0) {
                continue;
            }
            if (op.height[i] == 1 || (op.dstPitch[i] == width && op.srcPitch[i] == width)) {
                long n = Math.min(left, width * op.height[i]);
                MemorySegment.copy(src, srcOff, dst, dstOff, n);
                left -= n;
                continue;
            }
            for (long row = 0; row < op.height[i] && left > 0; row++) {
                long n = Math.min(left, width);
                MemorySegment.copy(src, srcOff + row * op.srcPitch[i], dst, dstOff + row * op.dstPitch[i], n);
                left -= n;
            }
        }
    }

    private static void releaseRefs(Op op) {
        if (op.type == OP_COPY) {
            for (int i = 0; i < op.segCount; i++) {
                op.dst[i].pendingOps--;
                op.src[i].pendingOps--;
            }
        }
    }

    private void poison(int code) {
        stickyCode = code;
        dropAllWork();
    }

    /** Drops every queued operation unfinished: no bytes move, no events complete. */
    private void dropAllWork() {
        for (int i = 0, n = activeStreams.size(); i < n; i++) {
            StreamState s = activeStreams.get(i);
            Op op;
            while ((op = s.queue.pollFirst()) != null) {
                opsDropped++;
                if (op.type == OP_COPY) {
                    queuedCopies--;
                }
                releaseRefs(op);
                recycle(op);
            }
            s.headState = HEAD_IDLE;
            s.heapIndex = -1;
            s.waiters.clear();
        }
        for (int i = activeStreams.size() - 1; i >= 0; i--) {
            if (activeStreams.get(i).destroyed) {
                activeStreams.remove(i);
            }
        }
        for (Engine engine : engines) {
            engine.current = null;
            engine.waiting.clear();
        }
        for (int i = 0; i < heapSize; i++) {
            heap[i] = null;
        }
        heapSize = 0;
    }

    // ---- binary min-heap of streams whose head op is in flight, keyed by (endNs, seq)

    private static boolean before(StreamState a, StreamState b) {
        Op x = a.queue.peekFirst();
        Op y = b.queue.peekFirst();
        return x.endNs < y.endNs || (x.endNs == y.endNs && x.seq < y.seq);
    }

    private void heapPush(StreamState s) {
        if (heapSize == heap.length) {
            heap = java.util.Arrays.copyOf(heap, heapSize * 2);
        }
        int i = heapSize++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            StreamState p = heap[parent];
            if (!before(s, p)) {
                break;
            }
            heap[i] = p;
            p.heapIndex = i;
            i = parent;
        }
        heap[i] = s;
        s.heapIndex = i;
    }

    private StreamState heapPop() {
        StreamState top = heap[0];
        StreamState last = heap[--heapSize];
        heap[heapSize] = null;
        top.heapIndex = -1;
        if (heapSize > 0) {
            int i = 0;
            while (true) {
                int child = 2 * i + 1;
                if (child >= heapSize) {
                    break;
                }
                if (child + 1 < heapSize && before(heap[child + 1], heap[child])) {
                    child++;
                }
                if (!before(heap[child], last)) {
                    break;
                }
                heap[i] = heap[child];
                heap[i].heapIndex = i;
                i = child;
            }
            heap[i] = last;
            last.heapIndex = i;
        }
        return top;
    }

    // ---- state records

    private static final class StreamState {
        final long handle;
        final int priority;
        final ArrayDeque<Op> queue = new ArrayDeque<>();
        /** Streams whose head is a wait blocked on an op of this stream. */
        final ArrayList<StreamState> waiters = new ArrayList<>(2);
        int headState = HEAD_IDLE;
        int heapIndex = -1;
        long lastCompletedSeq;
        /** Code of the last failed op, reported by records with seq <= errorCoversUpToSeq. */
        int errorCode;
        long errorCoversUpToSeq;
        /** Failure not yet reported by synchronizeStream. */
        int syncErrorCode;
        boolean destroyed;

        StreamState(long handle, int priority) {
            this.handle = handle;
            this.priority = priority;
        }
    }

    private static final class EventState {
        final long handle;
        final boolean timing;
        /** Stream and op seq of the newest record; seq 0 = never recorded. */
        StreamState recordStream;
        long recordSeq;
        long completedNs;
        int status;
        boolean destroyed;

        EventState(long handle, boolean timing) {
            this.handle = handle;
            this.timing = timing;
        }
    }

    private static final class Engine {
        Op current;
        final ArrayDeque<StreamState> waiting = new ArrayDeque<>();
    }

    private static final class Alloc {
        final long base;
        final long bytes;
        final MemorySegment segment;
        final Arena arena;
        final int memKind;
        int pendingOps;

        Alloc(long base, long bytes, MemorySegment segment, Arena arena, int memKind) {
            this.base = base;
            this.bytes = bytes;
            this.segment = segment;
            this.arena = arena;
            this.memKind = memKind;
        }
    }

    /** A pooled operation record; copy ranges live in parallel arrays that grow and are kept. */
    private static final class Op {
        int type;
        long seq;
        int engine = -1;
        long durationNs;
        long startNs;
        long endNs;
        int failCode;
        int kindValue;
        long bytes;
        StreamState stream;
        EventState event;
        StreamState waitStream;
        long waitSeq;
        Runnable fn;
        int segCount;
        Alloc[] dst = new Alloc[1];
        long[] dstOff = new long[1];
        long[] dstPitch = new long[1];
        Alloc[] src = new Alloc[1];
        long[] srcOff = new long[1];
        long[] srcPitch = new long[1];
        long[] width = new long[1];
        long[] height = new long[1];

        void ensureSegments(int n) {
            if (dst.length < n) {
                int cap = Math.max(n, dst.length * 2);
                dst = java.util.Arrays.copyOf(dst, cap);
                dstOff = java.util.Arrays.copyOf(dstOff, cap);
                dstPitch = java.util.Arrays.copyOf(dstPitch, cap);
                src = java.util.Arrays.copyOf(src, cap);
                srcOff = java.util.Arrays.copyOf(srcOff, cap);
                srcPitch = java.util.Arrays.copyOf(srcPitch, cap);
                width = java.util.Arrays.copyOf(width, cap);
                height = java.util.Arrays.copyOf(height, cap);
            }
        }

        void copySegmentFrom(Op other, int from, int to) {
            dst[to] = other.dst[from];
            dstOff[to] = other.dstOff[from];
            dstPitch[to] = other.dstPitch[from];
            src[to] = other.src[from];
            srcOff[to] = other.srcOff[from];
            srcPitch[to] = other.srcPitch[from];
            width[to] = other.width[from];
            height[to] = other.height[from];
        }

        void reset() {
            for (int i = 0; i < segCount; i++) {
                dst[i] = null;
                src[i] = null;
            }
            segCount = 0;
            stream = null;
            event = null;
            waitStream = null;
            fn = null;
            failCode = 0;
            bytes = 0;
            waitSeq = 0;
            durationNs = 0;
        }
    }

    /** Allocations sorted by base address; binary search lookups, O(n) insert and remove (cold path). */
    private static final class AllocTable {
        long[] bases = new long[16];
        Alloc[] allocs = new Alloc[16];
        int size;

        /** Index of the last base <= ptr, or -1. */
        private int floorIndex(long ptr) {
            int lo = 0;
            int hi = size - 1;
            int found = -1;
            while (lo <= hi) {
                int mid = (lo + hi) >>> 1;
                if (bases[mid] <= ptr) {
                    found = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            return found;
        }

        Alloc find(long ptr) {
            int i = floorIndex(ptr);
            if (i < 0) {
                return null;
            }
            Alloc a = allocs[i];
            return ptr - a.base < a.bytes ? a : null;
        }

        /** The allocation holding all of [ptr, ptr + len), or null. */
        Alloc containing(long ptr, long len) {
            if (len < 0) {
                return null;
            }
            Alloc a = find(ptr);
            if (a == null) {
                return null;
            }
            return len <= a.bytes - (ptr - a.base) ? a : null;
        }

        Alloc findStart(long ptr) {
            int i = floorIndex(ptr);
            return i >= 0 && bases[i] == ptr ? allocs[i] : null;
        }

        boolean overlaps(long ptr, long len) {
            int i = floorIndex(ptr + len - 1);
            if (i < 0) {
                return false;
            }
            Alloc a = allocs[i];
            return a.base + a.bytes > ptr;
        }

        void insert(Alloc a) {
            if (size == bases.length) {
                bases = java.util.Arrays.copyOf(bases, size * 2);
                allocs = java.util.Arrays.copyOf(allocs, size * 2);
            }
            int i = floorIndex(a.base) + 1;
            System.arraycopy(bases, i, bases, i + 1, size - i);
            System.arraycopy(allocs, i, allocs, i + 1, size - i);
            bases[i] = a.base;
            allocs[i] = a;
            size++;
        }

        void remove(Alloc a) {
            int i = floorIndex(a.base);
            System.arraycopy(bases, i + 1, bases, i, size - i - 1);
            System.arraycopy(allocs, i + 1, allocs, i, size - i - 1);
            size--;
            allocs[size] = null;
        }

        void clear() {
            java.util.Arrays.fill(allocs, 0, size, null);
            size = 0;
        }
    }
}
