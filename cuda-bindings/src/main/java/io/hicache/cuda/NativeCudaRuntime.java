package io.hicache.cuda;

import io.hicache.cuda.ffi.CudartLibrary;
import io.hicache.cuda.ffi.cudaMemcpyAttributes;
import io.hicache.cuda.ffi.cuda_runtime_api_h;

import java.lang.foreign.AddressLayout;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * {@link CudaRuntime} over {@code libcudart} through the FFM bindings in {@link cuda_runtime_api_h}.
 *
 * <p><b>Threads.</b> Thread-safe, as the CUDA runtime is. Calls that pass or return pointers on cold
 * paths (create, allocate, versions) use a confined arena per call on the calling thread. The hot
 * calls ({@link #recordEvent}, {@link #queryEventStatus}, {@link #streamWaitEvent},
 * {@link #memcpyAsync}) pass handles and addresses as 64-bit words (the same ABI class as a pointer
 * on every 64-bit CUDA host), so they allocate nothing. {@link #memcpyBatchAsync} fills native
 * arrays preallocated in this runtime's shared arena under a lock held for the call only; the arrays
 * grow (doubling) when a batch is larger than any before, and never shrink.
 *
 * <p><b>Critical downcalls.</b> Only calls that never block are bound with
 * {@link Linker.Option#critical(boolean) Linker.Option.critical(false)} ({@link #CRITICAL_CALLS}: {@code
 * cudaEventQuery}): the call skips the thread-state transition, which saves tens of nanoseconds but holds off
 * safepoints (GC) while it runs. Calls that enqueue work on a stream ({@code cudaEventRecord},
 * {@code cudaStreamWaitEvent}, {@code cudaMemcpyAsync}) can block when the device's launch queue is full (and a
 * copy from pageable memory can block anyway), so they are ordinary downcalls: a thread blocked there must not
 * stall every other thread's safepoint. {@code -D}{@value #CRITICAL_PROPERTY}{@code =false} turns the critical
 * binding off altogether.
 *
 * <p><b>Batched copies.</b> {@code cudaMemcpyBatchAsync} is used where the runtime reports 12.8 or
 * newer and exports it: CUDA 12.8/12.9 take an extra {@code failIdx} argument that 13.0 dropped, and
 * the form is chosen from {@link #runtimeVersion()}. Otherwise, and on the legacy default stream
 * (which the batch API rejects), a batch is issued as single copies.
 *
 * <p><b>Failures.</b> A non-zero {@code cudaError_t} becomes {@link CudaException} with the code,
 * {@code cudaGetErrorName}, {@code cudaGetErrorString} and the call's name; the runtime's last-error
 * slot is cleared first so a recoverable error does not resurface later. Bad arguments throw
 * {@link IllegalArgumentException} before any native call. After {@link #close()} every call throws
 * {@link IllegalStateException}.
 */
@SuppressWarnings("restricted")
public final class NativeCudaRuntime implements CudaRuntime {

    /** The only calls bound as critical downcalls (when enabled): those that never block. */
    static final java.util.Set<String> CRITICAL_CALLS = java.util.Set.of("cudaEventQuery");

    /** System property: {@code false} binds no call with {@code Linker.Option.critical}. Default {@code true}. */
    public static final String CRITICAL_PROPERTY = "hicache.cuda.criticalDowncalls";

    private static final int STREAM_NON_BLOCKING = 0x01;
    private static final int EVENT_DEFAULT = 0x00;
    private static final int EVENT_DISABLE_TIMING = 0x02;
    private static final int BATCH_FORM_NONE = 0;
    private static final int BATCH_FORM_12_8 = 12080;
    private static final int BATCH_FORM_13_0 = 13000;
    private static final int MIN_BATCH_CAPACITY = 64;

    private final boolean criticalDowncalls;
    private final int runtimeVersion;
    private final MethodHandle eventRecord;      // (long event, long stream) -> int
    private final MethodHandle eventQuery;       // (long event) -> int
    private final MethodHandle streamWaitEvent;  // (long stream, long event, int flags) -> int
    private final MethodHandle memcpyAsync;      // (long dst, long src, long bytes, int kind, long stream) -> int
    private final MethodHandle memcpyBatch;      // word form of the batch call, or null
    private final int batchForm;

    private final Arena scratchArena = Arena.ofShared();
    private final Object batchLock = new Object();
    /** Attributes (one entry), its index array {0} and the 12.8 failIdx out-slot; guarded by batchLock. */
    private final MemorySegment batchAttrs;
    private final MemorySegment batchAttrIdx;
    private final MemorySegment batchFailIdx;
    /** dsts | srcs | sizes, each {@code batchCapacity} words; guarded by batchLock. */
    private MemorySegment batchArrays;
    private int batchCapacity;
    private volatile boolean closed;

    private NativeCudaRuntime(boolean criticalDowncalls) {
        CudartLibrary.lookup(); // fail first with the list of candidates tried
        if (ValueLayout.ADDRESS.byteSize() != Long.BYTES) {
            throw new UnsupportedOperationException("NativeCudaRuntime needs a 64-bit JVM; address size is "
                    + ValueLayout.ADDRESS.byteSize() + " bytes");
        }
        this.criticalDowncalls = criticalDowncalls;
        this.runtimeVersion = queryRuntimeVersion();
        this.eventRecord = wordHandle(cuda_runtime_api_h.cudaEventRecord$address(),
                cuda_runtime_api_h.cudaEventRecord$descriptor(), critical("cudaEventRecord"));
        this.eventQuery = wordHandle(cuda_runtime_api_h.cudaEventQuery$address(),
                cuda_runtime_api_h.cudaEventQuery$descriptor(), critical("cudaEventQuery"));
        this.streamWaitEvent = wordHandle(cuda_runtime_api_h.cudaStreamWaitEvent$address(),
                cuda_runtime_api_h.cudaStreamWaitEvent$descriptor(), critical("cudaStreamWaitEvent"));
        this.memcpyAsync = wordHandle(cuda_runtime_api_h.cudaMemcpyAsync$address(),
                cuda_runtime_api_h.cudaMemcpyAsync$descriptor(), critical("cudaMemcpyAsync"));

        int form = batchFormFor(runtimeVersion);
        if (form != BATCH_FORM_NONE && !cuda_runtime_api_h.hasSymbol("cudaMemcpyBatchAsync")) {
            form = BATCH_FORM_NONE;
        }
        this.batchForm = form;
        if (form == BATCH_FORM_13_0) {
            this.memcpyBatch = wordHandle(cuda_runtime_api_h.cudaMemcpyBatchAsync$address(),
                    cuda_runtime_api_h.cudaMemcpyBatchAsync$descriptor(), false);
        } else if (form == BATCH_FORM_12_8) {
            this.memcpyBatch = wordHandle(cuda_runtime_api_h.cudaMemcpyBatchAsync_v12_8$address(),
                    cuda_runtime_api_h.cudaMemcpyBatchAsync_v12_8$descriptor(), false);
        } else {
            this.memcpyBatch = null;
        }
        this.batchAttrs = scratchArena.allocate(cudaMemcpyAttributes.layout());
        cudaMemcpyAttributes.srcAccessOrder(batchAttrs, cudaMemcpyAttributes.SRC_ACCESS_ORDER_STREAM);
        this.batchAttrIdx = scratchArena.allocate(JAVA_LONG); // zero-filled: attrs[0] applies from copy 0
        this.batchFailIdx = scratchArena.allocate(JAVA_LONG);
        this.batchCapacity = MIN_BATCH_CAPACITY;
        this.batchArrays = scratchArena.allocate(JAVA_LONG, 3L * MIN_BATCH_CAPACITY);
    }

    /**
     * Loads {@code libcudart} (see {@link CudartLibrary}) and binds it; critical downcalls per
     * {@value #CRITICAL_PROPERTY} (default on). Works without a GPU or driver: the calls then fail
     * with {@link CudaException} ({@code cudaErrorInsufficientDriver} or {@code cudaErrorNoDevice}).
     *
     * @throws UnsatisfiedLinkError when no {@code libcudart} loads; the message names every candidate tried
     */
    public static NativeCudaRuntime load() {
        return load(!"false".equalsIgnoreCase(System.getProperty(CRITICAL_PROPERTY, "true").strip()));
    }

    /** As {@link #load()}, choosing whether the hot calls are critical downcalls. */
    public static NativeCudaRuntime load(boolean criticalDowncalls) {
        return new NativeCudaRuntime(criticalDowncalls);
    }

    /** True when a {@code libcudart} loads (says nothing about a driver or device). Never throws. */
    public static boolean isLibraryAvailable() {
        return CudartLibrary.isAvailable();
    }

    /** Whether {@code call} is bound as a critical downcall in this runtime. */
    boolean critical(String call) {
        return criticalDowncalls && CRITICAL_CALLS.contains(call);
    }

    /** True when the non-blocking calls ({@link #CRITICAL_CALLS}) are bound with {@code Linker.Option.critical(false)}. */
    public boolean criticalDowncalls() {
        return criticalDowncalls;
    }

    /**
     * The {@code cudaMemcpyBatchAsync} signature in use: 13000 (CUDA 13 form), 12080 (CUDA 12.8/12.9
     * form with {@code failIdx}) or 0 (not available; batches are issued as single copies).
     */
    public int batchedCopyForm() {
        return batchForm;
    }

    /** The batch form for a runtime version; see {@link #batchedCopyForm()}. */
    static int batchFormFor(int runtimeVersion) {
        if (runtimeVersion >= BATCH_FORM_13_0) {
            return BATCH_FORM_13_0;
        }
        return runtimeVersion >= BATCH_FORM_12_8 ? BATCH_FORM_12_8 : BATCH_FORM_NONE;
    }

    /** The same function with every pointer parameter passed as a 64-bit word (identical ABI class). */
    static FunctionDescriptor wordDescriptor(FunctionDescriptor descriptor) {
        MemoryLayout[] args = descriptor.argumentLayouts().toArray(new MemoryLayout[0]);
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof AddressLayout) {
                args[i] = JAVA_LONG;
            }
        }
        MemoryLayout ret = descriptor.returnLayout().orElseThrow();
        return FunctionDescriptor.of(ret instanceof AddressLayout ? JAVA_LONG : ret, args);
    }

    private static MethodHandle wordHandle(MemorySegment address, FunctionDescriptor descriptor, boolean critical) {
        FunctionDescriptor words = wordDescriptor(descriptor);
        return critical
                ? Linker.nativeLinker().downcallHandle(address, words, Linker.Option.critical(false))
                : Linker.nativeLinker().downcallHandle(address, words);
    }

    // ---- errors ----

    private CudaException failure(int code, String call) {
        cuda_runtime_api_h.cudaGetLastError(); // clears the slot for recoverable errors
        return new CudaException(code, errorName(code), errorString(code), call);
    }

    private void check(int code, String call) {
        if (code != 0) {
            throw failure(code, call);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("NativeCudaRuntime is closed");
        }
    }

    private static AssertionError unexpected(Throwable t) {
        return new AssertionError("downcall failed unexpectedly", t);
    }

    // ---- versions and devices ----

    private static int queryRuntimeVersion() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int code = cuda_runtime_api_h.cudaRuntimeGetVersion(out);
            if (code != 0) {
                String name = cuda_runtime_api_h.cudaGetErrorName(code).getString(0);
                String text = cuda_runtime_api_h.cudaGetErrorString(code).getString(0);
                throw new CudaException(code, name, text, "cudaRuntimeGetVersion");
            }
            return out.get(JAVA_INT, 0);
        }
    }

    @Override
    public int runtimeVersion() {
        ensureOpen();
        return runtimeVersion;
    }

    @Override
    public int driverVersion() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check(cuda_runtime_api_h.cudaDriverGetVersion(out), "cudaDriverGetVersion");
            return out.get(JAVA_INT, 0);
        }
    }

    @Override
    public int deviceCount() {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check(cuda_runtime_api_h.cudaGetDeviceCount(out), "cudaGetDeviceCount");
            return out.get(JAVA_INT, 0);
        }
    }

    @Override
    public void setDevice(int device) {
        ensureOpen();
        if (device < 0) {
            throw new IllegalArgumentException("device must be >= 0, was " + device);
        }
        check(cuda_runtime_api_h.cudaSetDevice(device), "cudaSetDevice");
    }

    @Override
    public String errorName(int code) {
        return cuda_runtime_api_h.cudaGetErrorName(code).getString(0);
    }

    @Override
    public String errorString(int code) {
        return cuda_runtime_api_h.cudaGetErrorString(code).getString(0);
    }

    // ---- streams and events ----

    @Override
    public CudaStream createStream(int priority) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check(cuda_runtime_api_h.cudaStreamCreateWithPriority(out, STREAM_NON_BLOCKING, priority),
                    "cudaStreamCreateWithPriority");
            return new CudaStream(out.get(JAVA_LONG, 0));
        }
    }

    @Override
    public void destroyStream(CudaStream stream) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaStreamDestroy(MemorySegment.ofAddress(stream.handle())), "cudaStreamDestroy");
    }

    @Override
    public void synchronizeStream(CudaStream stream) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaStreamSynchronize(MemorySegment.ofAddress(stream.handle())),
                "cudaStreamSynchronize");
    }

    @Override
    public void streamWaitEvent(CudaStream stream, CudaEvent event) {
        ensureOpen();
        int code;
        try {
            code = (int) streamWaitEvent.invokeExact(stream.handle(), event.handle(), 0);
        } catch (Throwable t) {
            throw unexpected(t);
        }
        if (code != 0) {
            throw failure(code, "cudaStreamWaitEvent");
        }
    }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check(cuda_runtime_api_h.cudaEventCreateWithFlags(out, disableTiming ? EVENT_DISABLE_TIMING : EVENT_DEFAULT),
                    "cudaEventCreateWithFlags");
            return new CudaEvent(out.get(JAVA_LONG, 0));
        }
    }

    @Override
    public void destroyEvent(CudaEvent event) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaEventDestroy(MemorySegment.ofAddress(event.handle())), "cudaEventDestroy");
    }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
        ensureOpen();
        int code;
        try {
            code = (int) eventRecord.invokeExact(event.handle(), stream.handle());
        } catch (Throwable t) {
            throw unexpected(t);
        }
        if (code != 0) {
            throw failure(code, "cudaEventRecord");
        }
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        ensureOpen();
        try {
            return (int) eventQuery.invokeExact(event.handle());
        } catch (Throwable t) {
            throw unexpected(t);
        }
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaEventSynchronize(MemorySegment.ofAddress(event.handle())),
                "cudaEventSynchronize");
    }

    @Override
    public float eventElapsedMs(CudaEvent start, CudaEvent end) {
        ensureOpen();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_FLOAT);
            check(cuda_runtime_api_h.cudaEventElapsedTime(out, MemorySegment.ofAddress(start.handle()),
                    MemorySegment.ofAddress(end.handle())), "cudaEventElapsedTime");
            return out.get(JAVA_FLOAT, 0);
        }
    }

    // ---- memory ----

    @Override
    public long deviceMalloc(long bytes) {
        ensureOpen();
        requireNonNegative(bytes, "bytes");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check(cuda_runtime_api_h.cudaMalloc(out, bytes), "cudaMalloc");
            return out.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void deviceFree(long devicePtr) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaFree(MemorySegment.ofAddress(devicePtr)), "cudaFree");
    }

    @Override
    public long hostAlloc(long bytes, int flags) {
        ensureOpen();
        requireNonNegative(bytes, "bytes");
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            check(cuda_runtime_api_h.cudaHostAlloc(out, bytes, flags), "cudaHostAlloc");
            return out.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void hostFree(long hostPtr) {
        ensureOpen();
        check(cuda_runtime_api_h.cudaFreeHost(MemorySegment.ofAddress(hostPtr)), "cudaFreeHost");
    }

    @Override
    public void hostRegister(long hostPtr, long bytes, int flags) {
        ensureOpen();
        requireNonZero(hostPtr, "hostPtr");
        requireNonNegative(bytes, "bytes");
        check(cuda_runtime_api_h.cudaHostRegister(MemorySegment.ofAddress(hostPtr), bytes, flags), "cudaHostRegister");
    }

    @Override
    public void hostUnregister(long hostPtr) {
        ensureOpen();
        requireNonZero(hostPtr, "hostPtr");
        check(cuda_runtime_api_h.cudaHostUnregister(MemorySegment.ofAddress(hostPtr)), "cudaHostUnregister");
    }

    @Override
    public MemorySegment hostMemory(long hostPtr, long bytes) {
        requireNonZero(hostPtr, "hostPtr");
        requireNonNegative(bytes, "bytes");
        return MemorySegment.ofAddress(hostPtr).reinterpret(bytes);
    }

    // ---- copies ----

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        ensureOpen();
        requireNonNegative(bytes, "bytes");
        int code;
        try {
            code = (int) memcpyAsync.invokeExact(dst, src, bytes, kind.value(), stream.handle());
        } catch (Throwable t) {
            throw unexpected(t);
        }
        if (code != 0) {
            throw failure(code, "cudaMemcpyAsync");
        }
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        ensureOpen();
        requireNonNegative(widthBytes, "widthBytes");
        requireNonNegative(height, "height");
        if (dstPitch < widthBytes || srcPitch < widthBytes) {
            throw new IllegalArgumentException("pitches must be >= widthBytes " + widthBytes
                    + ", were dstPitch " + dstPitch + " and srcPitch " + srcPitch);
        }
        check(cuda_runtime_api_h.cudaMemcpy2DAsync(MemorySegment.ofAddress(dst), dstPitch,
                MemorySegment.ofAddress(src), srcPitch, widthBytes, height, kind.value(),
                MemorySegment.ofAddress(stream.handle())), "cudaMemcpy2DAsync");
    }

    @Override
    public boolean supportsBatchedCopy() {
        return batchForm != BATCH_FORM_NONE;
    }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind,
                                 CudaStream stream) {
        ensureOpen();
        if (count < 0 || count > dsts.length || count > srcs.length || count > sizes.length) {
            throw new IllegalArgumentException("count must be in [0, min array length], was " + count
                    + " for lengths " + dsts.length + "/" + srcs.length + "/" + sizes.length);
        }
        for (int i = 0; i < count; i++) {
            if (sizes[i] < 0) {
                throw new IllegalArgumentException("sizes[" + i + "] must be >= 0, was " + sizes[i]);
            }
        }
        if (count == 0) {
            return;
        }
        if (memcpyBatch == null || stream.handle() == 0L) {
            for (int i = 0; i < count; i++) {
                memcpyAsync(dsts[i], srcs[i], sizes[i], kind, stream);
            }
            return;
        }
        int code;
        synchronized (batchLock) {
            ensureOpen();
            if (count > batchCapacity) {
                growBatchArrays(count);
            }
            long words = batchCapacity;
            MemorySegment.copy(dsts, 0, batchArrays, JAVA_LONG, 0L, count);
            MemorySegment.copy(srcs, 0, batchArrays, JAVA_LONG, words * Long.BYTES, count);
            MemorySegment.copy(sizes, 0, batchArrays, JAVA_LONG, 2L * words * Long.BYTES, count);
            long base = batchArrays.address();
            try {
                if (batchForm == BATCH_FORM_13_0) {
                    code = (int) memcpyBatch.invokeExact(base, base + words * Long.BYTES,
                            base + 2L * words * Long.BYTES, (long) count, batchAttrs.address(),
                            batchAttrIdx.address(), 1L, stream.handle());
                } else {
                    code = (int) memcpyBatch.invokeExact(base, base + words * Long.BYTES,
                            base + 2L * words * Long.BYTES, (long) count, batchAttrs.address(),
                            batchAttrIdx.address(), 1L, batchFailIdx.address(), stream.handle());
                }
            } catch (Throwable t) {
                throw unexpected(t);
            }
        }
        if (code != 0) {
            throw failure(code, "cudaMemcpyBatchAsync");
        }
    }

    private void growBatchArrays(int count) {
        int capacity = batchCapacity;
        while (capacity < count) {
            capacity = capacity > (1 << 29) ? count : capacity * 2;
        }
        batchArrays = scratchArena.allocate(JAVA_LONG, 3L * capacity);
        batchCapacity = capacity;
    }

    // ---- host functions ----

    @Override
    public void launchHostFunc(CudaStream stream, Runnable fn) {
        ensureOpen();
        if (fn == null) {
            throw new IllegalArgumentException("fn must not be null");
        }
        long token = HostFunctions.NEXT_TOKEN.getAndIncrement();
        HostFunctions.PENDING.put(token, fn);
        int code = cuda_runtime_api_h.cudaLaunchHostFunc(MemorySegment.ofAddress(stream.handle()),
                HostFunctions.STUB, MemorySegment.ofAddress(token));
        if (code != 0) {
            HostFunctions.PENDING.remove(token);
            throw failure(code, "cudaLaunchHostFunc");
        }
    }

    /** Host functions queued and not yet run, over every runtime in the process. */
    public static int pendingHostFunctions() {
        return HostFunctions.PENDING.size();
    }

    /**
     * One process-wide upcall stub for every {@code cudaLaunchHostFunc}; {@code userData} carries a
     * token for the pending {@link Runnable}. A stub per call could not be freed safely: the callback
     * cannot know when native code has returned out of the stub that runs it. The single stub lives
     * in the global arena, so a callback queued before {@link #close()} still runs after it.
     */
    private static final class HostFunctions {
        static final Map<Long, Runnable> PENDING = new ConcurrentHashMap<>();
        static final AtomicLong NEXT_TOKEN = new AtomicLong(1);
        static final MemorySegment STUB;

        static {
            try {
                MethodHandle target = MethodHandles.lookup().findStatic(HostFunctions.class, "onHostFn",
                        MethodType.methodType(void.class, MemorySegment.class));
                STUB = Linker.nativeLinker().upcallStub(target, FunctionDescriptor.ofVoid(ValueLayout.ADDRESS),
                        Arena.global());
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        private HostFunctions() {
        }

        /** Runs on a CUDA runtime thread. Must not throw: an exception escaping an upcall ends the JVM. */
        @SuppressWarnings("UnusedMethod") // the upcall target, found by name through MethodHandles.lookup() above
        private static void onHostFn(MemorySegment userData) {
            Runnable fn = PENDING.remove(userData.address());
            if (fn == null) {
                return;
            }
            try {
                fn.run();
            } catch (Throwable t) {
                Thread current = Thread.currentThread();
                try {
                    current.getUncaughtExceptionHandler().uncaughtException(current, t);
                } catch (Throwable ignored) {
                    // the handler itself failed; nothing safe is left to do inside an upcall
                }
            }
        }
    }

    // ---- lifecycle ----

    /** Frees the batch scratch memory. Idempotent; does not touch device state or pending host functions. */
    @Override
    public void close() {
        synchronized (batchLock) {
            if (closed) {
                return;
            }
            closed = true;
            scratchArena.close();
        }
    }

    private static void requireNonNegative(long value, String name) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must be >= 0, was " + value);
        }
    }

    private static void requireNonZero(long value, String name) {
        if (value == 0L) {
            throw new IllegalArgumentException(name + " must not be 0 (NULL)");
        }
    }
}
