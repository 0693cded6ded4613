package io.hicache.cuda;

import io.hicache.cuda.ffi.CudartLibrary;
import io.hicache.cuda.ffi.cuda_runtime_api_h;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link NativeCudaRuntime} against the real {@code libcudart} where no GPU driver is installed:
 * versions work, every device call fails with {@code cudaErrorInsufficientDriver} (35). Where a
 * driver is present the driver-dependent tests are skipped (the {@code gpu} tag covers them); where
 * {@code libcudart} is absent, everything is skipped.
 */
class NativeCudaRuntimeWithoutDriverTest {

    private static final int INSUFFICIENT_DRIVER = 35;
    private static NativeCudaRuntime cuda;
    private static boolean noDriver;

    @BeforeAll
    static void load() {
        assumeTrue(NativeCudaRuntime.isLibraryAvailable(),
                "libcudart not found (tried " + CudartLibrary.candidates() + ")");
        cuda = NativeCudaRuntime.load();
        noDriver = cuda.driverVersion() == 0;
    }

    @AfterAll
    static void close() {
        if (cuda != null) {
            cuda.close();
        }
    }

    private static void assumeNoDriver() {
        assumeTrue(noDriver, "a CUDA driver is installed; this test checks the no-driver failure path");
    }

    @Test
    void runtime_version_works_without_a_driver() {
        assertThat(cuda.runtimeVersion()).isBetween(12000, 99999);
        assertThat(CudartLibrary.loadedFrom()).contains("libcudart");
    }

    @Test
    void driver_version_is_zero_without_a_driver() {
        assumeNoDriver();
        assertThat(cuda.driverVersion()).isZero();
    }

    @Test
    void error_texts_come_from_the_runtime() {
        assertThat(cuda.errorName(INSUFFICIENT_DRIVER)).isEqualTo("cudaErrorInsufficientDriver");
        assertThat(cuda.errorString(INSUFFICIENT_DRIVER)).isNotBlank();
        assertThat(cuda.errorName(0)).isEqualTo("cudaSuccess");
        assertThat(cuda.errorName(600)).isEqualTo("cudaErrorNotReady");
    }

    @Test
    void every_device_call_fails_with_insufficient_driver() {
        assumeNoDriver();
        CudaStream bogusStream = new CudaStream(0x1000L);
        CudaEvent bogusEvent = new CudaEvent(0x2000L);
        expectInsufficientDriver(cuda::deviceCount, "cudaGetDeviceCount");
        expectInsufficientDriver(() -> cuda.setDevice(0), "cudaSetDevice");
        expectInsufficientDriver(() -> cuda.createStream(0), "cudaStreamCreateWithPriority");
        expectInsufficientDriver(() -> cuda.createEvent(true), "cudaEventCreateWithFlags");
        expectInsufficientDriver(() -> cuda.deviceMalloc(4096), "cudaMalloc");
        expectInsufficientDriver(() -> cuda.hostAlloc(4096, CudaRuntime.HOST_ALLOC_PORTABLE), "cudaHostAlloc");
        expectInsufficientDriver(() -> cuda.recordEvent(bogusEvent, bogusStream), "cudaEventRecord");
        expectInsufficientDriver(() -> cuda.streamWaitEvent(bogusStream, bogusEvent), "cudaStreamWaitEvent");
        expectInsufficientDriver(() -> cuda.memcpyAsync(0x3000L, 0x4000L, 64, CopyKind.HOST_TO_DEVICE, bogusStream),
                "cudaMemcpyAsync");
        expectInsufficientDriver(() -> cuda.synchronizeStream(bogusStream), "cudaStreamSynchronize");
        expectInsufficientDriver(() -> cuda.launchHostFunc(bogusStream, () -> { }), "cudaLaunchHostFunc");
        assertThat(NativeCudaRuntime.pendingHostFunctions()).as("a failed launch leaves nothing pending").isZero();
    }

    @Test
    void query_event_status_returns_the_code_and_query_event_throws() {
        assumeNoDriver();
        CudaEvent bogus = new CudaEvent(0x2000L);
        assertThat(cuda.queryEventStatus(bogus)).isEqualTo(INSUFFICIENT_DRIVER);
        expectInsufficientDriver(() -> cuda.queryEvent(bogus), "cudaEventQuery");
    }

    @Test
    void batched_copy_picks_the_form_of_the_loaded_runtime_and_fails_like_a_single_copy() {
        assumeNoDriver();
        int version = cuda.runtimeVersion();
        assertThat(cuda.supportsBatchedCopy()).isEqualTo(version >= 12080);
        assertThat(cuda.batchedCopyForm()).isEqualTo(version >= 13000 ? 13000 : version >= 12080 ? 12080 : 0);
        long[] dsts = {0x3000L, 0x5000L};
        long[] srcs = {0x4000L, 0x6000L};
        long[] sizes = {64, 64};
        ThrowingCallable call = () -> cuda.memcpyBatchAsync(dsts, srcs, sizes, 2, CopyKind.HOST_TO_DEVICE,
                new CudaStream(0x1000L));
        assertThatThrownBy(call).isInstanceOf(CudaException.class)
                .satisfies(e -> assertThat(((CudaException) e).code()).isEqualTo(INSUFFICIENT_DRIVER));
        // a batch larger than the preallocated arrays grows them and fails the same way
        long[] many = new long[1000];
        java.util.Arrays.fill(many, 0x3000L);
        assertThatThrownBy(() -> cuda.memcpyBatchAsync(many, many, new long[1000], 1000, CopyKind.DEFAULT,
                new CudaStream(0x1000L))).isInstanceOf(CudaException.class);
    }

    @Test
    void bad_arguments_throw_before_any_native_call() {
        long[] one = {1L};
        assertThatThrownBy(() -> cuda.memcpyBatchAsync(one, one, one, 2, CopyKind.DEFAULT, CudaStream.DEFAULT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("count").hasMessageContaining("2");
        assertThatThrownBy(() -> cuda.memcpyBatchAsync(one, one, new long[] {-1}, 1, CopyKind.DEFAULT,
                CudaStream.DEFAULT)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("sizes[0]");
        assertThatThrownBy(() -> cuda.deviceMalloc(-1)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bytes").hasMessageContaining("-1");
        assertThatThrownBy(() -> cuda.memcpy2DAsync(1, 8, 2, 16, 32, 1, CopyKind.DEFAULT, CudaStream.DEFAULT))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("widthBytes 32");
        assertThatThrownBy(() -> cuda.hostMemory(0, 8)).isInstanceOf(IllegalArgumentException.class);
        // an empty batch is a no-op, not a native call
        cuda.memcpyBatchAsync(one, one, one, 0, CopyKind.DEFAULT, CudaStream.DEFAULT);
    }

    @Test
    void host_memory_is_a_view_of_the_given_range() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment block = arena.allocate(64);
            block.set(JAVA_LONG, 8, 0x1234_5678_9ABCL);
            MemorySegment view = cuda.hostMemory(block.address(), 64);
            assertThat(view.byteSize()).isEqualTo(64);
            assertThat(view.get(JAVA_LONG, 8)).isEqualTo(0x1234_5678_9ABCL);
        }
    }

    @Test
    void query_event_status_allocates_nothing_in_steady_state() {
        assumeNoDriver();
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        assumeTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
                "per-thread allocation counting is not available on this JVM");
        CudaEvent bogus = new CudaEvent(0x2000L);
        int sink = 0;
        for (int i = 0; i < 50_000; i++) {
            sink += cuda.queryEventStatus(bogus);
        }
        long tid = Thread.currentThread().threadId();
        // steady state: the least of a few rounds, so a JIT recompilation during one round does not count
        long allocated = Long.MAX_VALUE;
        for (int round = 0; round < 5 && allocated >= 1024; round++) {
            long before = threads.getThreadAllocatedBytes(tid);
            for (int i = 0; i < 10_000; i++) {
                sink += cuda.queryEventStatus(bogus);
            }
            allocated = Math.min(allocated, threads.getThreadAllocatedBytes(tid) - before);
        }
        assertThat(sink).isNotZero();
        assertThat(allocated).as("bytes allocated by 10k queryEventStatus calls").isLessThan(1024);
    }

    @Test
    void word_descriptors_replace_pointers_only() {
        FunctionDescriptor words = NativeCudaRuntime.wordDescriptor(cuda_runtime_api_h.cudaMemcpyAsync$descriptor());
        assertThat(words.argumentLayouts()).containsExactly(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_LONG);
        assertThat(words.returnLayout()).contains(JAVA_INT);
        assertThat(NativeCudaRuntime.wordDescriptor(FunctionDescriptor.of(ADDRESS, JAVA_INT)).returnLayout())
                .contains(JAVA_LONG);
    }

    @Test
    void batch_form_follows_the_runtime_version() {
        assertThat(NativeCudaRuntime.batchFormFor(12060)).isZero();
        assertThat(NativeCudaRuntime.batchFormFor(12080)).isEqualTo(12080);
        assertThat(NativeCudaRuntime.batchFormFor(12090)).isEqualTo(12080);
        assertThat(NativeCudaRuntime.batchFormFor(13000)).isEqualTo(13000);
        assertThat(NativeCudaRuntime.batchFormFor(13020)).isEqualTo(13000);
    }

    @Test
    void critical_downcalls_can_be_turned_off_and_close_is_idempotent() {
        NativeCudaRuntime plain = NativeCudaRuntime.load(false);
        assertThat(plain.criticalDowncalls()).isFalse();
        if (noDriver) {
            assertThat(plain.queryEventStatus(new CudaEvent(0x2000L))).isEqualTo(INSUFFICIENT_DRIVER);
        }
        plain.close();
        plain.close();
        assertThatThrownBy(() -> plain.queryEventStatus(new CudaEvent(1L))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> plain.memcpyBatchAsync(new long[1], new long[1], new long[1], 1,
                CopyKind.DEFAULT, new CudaStream(1L))).isInstanceOf(IllegalStateException.class);
        assertThat(cuda.criticalDowncalls()).isTrue();
    }

    @Test
    void only_calls_that_never_block_are_critical_downcalls() {
        // enqueueing calls block when the launch queue is full: a critical downcall there would hold off safepoints
        for (String call : new String[] {"cudaMemcpyAsync", "cudaEventRecord", "cudaStreamWaitEvent"}) {
            assertThat(cuda.critical(call)).as(call).isFalse();
        }
        assertThat(cuda.critical("cudaEventQuery")).isTrue();
        NativeCudaRuntime plain = NativeCudaRuntime.load(false);
        assertThat(plain.critical("cudaEventQuery")).isFalse();
        plain.close();
    }

    private static void expectInsufficientDriver(ThrowingCallable call, String callName) {
        assertThatThrownBy(call).as(callName).isInstanceOfSatisfying(CudaException.class, e -> {
            assertThat(e.code()).isEqualTo(INSUFFICIENT_DRIVER);
            assertThat(e.error()).isEqualTo(CudaError.INSUFFICIENT_DRIVER);
            assertThat(e.errorName()).isEqualTo("cudaErrorInsufficientDriver");
            assertThat(e.errorString()).isNotBlank();
            assertThat(e.call()).isEqualTo(callName);
            assertThat(e.sticky()).isFalse();
            assertThat(e.getMessage()).contains(callName).contains("cudaErrorInsufficientDriver").contains("35");
        });
    }
}
