package io.hicache.bench;

import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.NativeCudaRuntime;
import io.hicache.cuda.ffi.CudartLibrary;
import io.hicache.cuda.ffi.cuda_runtime_api_h;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

/**
 * Cost of the hot CUDA downcalls through FFM: {@code cudaEventRecord}, {@code cudaEventQuery} and a
 * 4 KiB pinned {@code cudaMemcpyAsync}, each bound from {@link cuda_runtime_api_h} with and without
 * {@code Linker.Option.critical(false)} ({@code critical} parameter), plus the same calls through
 * {@link NativeCudaRuntime}. Run with {@code -prof gc} to see that none allocates.
 *
 * <p>Record and copy enqueue work; to keep the stream's queue from filling (which would make the
 * call block), every {@value #SYNC_EVERY}th call also synchronises the stream, so their scores
 * include that amortised cost. Needs a CUDA device: without one {@link #setUp()} throws with the
 * reason and JMH reports it and moves on to the next benchmark.
 *
 * <p>One instance per benchmark thread; not thread-safe.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class NativeDowncallBenchmark {

    static final int SYNC_EVERY = 256;
    static final int COPY_BYTES = 4096;

    /** Whether the raw handles (and the runtime) use {@code Linker.Option.critical(false)}. */
    @Param({"true", "false"})
    public boolean critical;

    private NativeCudaRuntime cuda;
    private CudaStream stream;
    private CudaEvent event;
    private long hostPtr;
    private long devicePtr;
    private MemorySegment streamSeg;
    private MemorySegment eventSeg;
    private MemorySegment hostSeg;
    private MemorySegment deviceSeg;
    private MethodHandle eventRecord;
    private MethodHandle eventQuery;
    private MethodHandle memcpyAsync;
    private int calls;

    /** Loads the runtime and creates a stream, an event and the copy buffers; throws why when no GPU is usable. */
    @Setup(Level.Trial)
    public void setUp() {
        if (!NativeCudaRuntime.isLibraryAvailable()) {
            throw new IllegalStateException("NativeDowncallBenchmark skipped: libcudart not found (tried "
                    + CudartLibrary.candidates() + "); set HICACHE_CUDART");
        }
        cuda = NativeCudaRuntime.load(critical);
        int devices;
        try {
            devices = cuda.deviceCount();
        } catch (RuntimeException e) {
            cuda.close();
            throw new IllegalStateException("NativeDowncallBenchmark skipped: no usable CUDA device ("
                    + e.getMessage() + ")", e);
        }
        if (devices == 0) {
            cuda.close();
            throw new IllegalStateException("NativeDowncallBenchmark skipped: cudaGetDeviceCount reports 0 devices");
        }
        cuda.setDevice(0);
        stream = cuda.createStream(0);
        event = cuda.createEvent(true);
        hostPtr = cuda.hostAlloc(COPY_BYTES, CudaRuntime.HOST_ALLOC_PORTABLE);
        devicePtr = cuda.deviceMalloc(COPY_BYTES);
        streamSeg = MemorySegment.ofAddress(stream.handle());
        eventSeg = MemorySegment.ofAddress(event.handle());
        hostSeg = MemorySegment.ofAddress(hostPtr);
        deviceSeg = MemorySegment.ofAddress(devicePtr);
        eventRecord = bind(cuda_runtime_api_h.cudaEventRecord$address(), cuda_runtime_api_h.cudaEventRecord$descriptor());
        eventQuery = bind(cuda_runtime_api_h.cudaEventQuery$address(), cuda_runtime_api_h.cudaEventQuery$descriptor());
        memcpyAsync = bind(cuda_runtime_api_h.cudaMemcpyAsync$address(), cuda_runtime_api_h.cudaMemcpyAsync$descriptor());
        cuda.recordEvent(event, stream);
        cuda.synchronizeStream(stream);
    }

    @SuppressWarnings("restricted")
    private MethodHandle bind(MemorySegment address, FunctionDescriptor descriptor) {
        return critical
                ? Linker.nativeLinker().downcallHandle(address, descriptor, Linker.Option.critical(false))
                : Linker.nativeLinker().downcallHandle(address, descriptor);
    }

    /** Frees what {@link #setUp()} created. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (cuda == null || stream == null) {
            return;
        }
        cuda.synchronizeStream(stream);
        cuda.deviceFree(devicePtr);
        cuda.hostFree(hostPtr);
        cuda.destroyEvent(event);
        cuda.destroyStream(stream);
        cuda.close();
    }

    private void drainSometimes() {
        if (++calls == SYNC_EVERY) {
            calls = 0;
            cuda.synchronizeStream(stream);
        }
    }

    /** Raw {@code cudaEventRecord} through the header's descriptor. */
    @Benchmark
    public int ffmEventRecord() throws Throwable {
        int code = (int) eventRecord.invokeExact(eventSeg, streamSeg);
        drainSometimes();
        return code;
    }

    /** Raw {@code cudaEventQuery} through the header's descriptor. */
    @Benchmark
    public int ffmEventQuery() throws Throwable {
        return (int) eventQuery.invokeExact(eventSeg);
    }

    /** Raw 4 KiB pinned host-to-device {@code cudaMemcpyAsync}. */
    @Benchmark
    public int ffmMemcpyAsync() throws Throwable {
        int code = (int) memcpyAsync.invokeExact(deviceSeg, hostSeg, (long) COPY_BYTES,
                CopyKind.HOST_TO_DEVICE.value(), streamSeg);
        drainSometimes();
        return code;
    }

    /** {@link NativeCudaRuntime#recordEvent}: checks the code and throws on failure. */
    @Benchmark
    public void runtimeEventRecord() {
        cuda.recordEvent(event, stream);
        drainSometimes();
    }

    /** {@link NativeCudaRuntime#queryEventStatus}. */
    @Benchmark
    public int runtimeEventQuery() {
        return cuda.queryEventStatus(event);
    }

    /** {@link NativeCudaRuntime#memcpyAsync}, 4 KiB pinned host to device. */
    @Benchmark
    public void runtimeMemcpyAsync() {
        cuda.memcpyAsync(devicePtr, hostPtr, COPY_BYTES, CopyKind.HOST_TO_DEVICE, stream);
        drainSometimes();
    }
}
