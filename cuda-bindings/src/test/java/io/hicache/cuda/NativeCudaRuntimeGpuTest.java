package io.hicache.cuda;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link NativeCudaRuntime} on a real device: allocation, copies on streams ordered by events, 2D and
 * batched copies, host functions. Tagged {@code gpu}: excluded by default, run with
 * {@code ./run-tests -pl cuda-bindings -Pgpu}. Fails (does not skip) where no device is present,
 * since running it asks for one.
 */
@Tag("gpu")
class NativeCudaRuntimeGpuTest {

    private static final int BYTES = 1 << 20;

    private NativeCudaRuntime cuda;
    private final List<Runnable> cleanup = new ArrayList<>();

    @BeforeEach
    void open() {
        cuda = NativeCudaRuntime.load();
        assertThat(cuda.driverVersion()).as("driver version").isPositive();
        assertThat(cuda.deviceCount()).as("CUDA devices").isPositive();
        cuda.setDevice(0);
    }

    @AfterEach
    void close() {
        for (int i = cleanup.size() - 1; i >= 0; i--) {
            cleanup.get(i).run();
        }
        cuda.close();
    }

    private long pinned(long bytes) {
        long ptr = cuda.hostAlloc(bytes, CudaRuntime.HOST_ALLOC_PORTABLE);
        cleanup.add(() -> cuda.hostFree(ptr));
        return ptr;
    }

    private long device(long bytes) {
        long ptr = cuda.deviceMalloc(bytes);
        cleanup.add(() -> cuda.deviceFree(ptr));
        return ptr;
    }

    private CudaStream stream() {
        CudaStream s = cuda.createStream(0);
        cleanup.add(() -> cuda.destroyStream(s));
        return s;
    }

    private CudaEvent event(boolean disableTiming) {
        CudaEvent e = cuda.createEvent(disableTiming);
        cleanup.add(() -> cuda.destroyEvent(e));
        return e;
    }

    private static void fill(MemorySegment segment, int seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            segment.set(JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    @Test
    void round_trip_on_two_streams_ordered_by_an_event() {
        long src = pinned(BYTES);
        long dst = pinned(BYTES);
        long dev = device(BYTES);
        fill(cuda.hostMemory(src, BYTES), 7);
        CudaStream upload = stream();
        CudaStream download = stream();
        CudaEvent uploaded = event(true);
        CudaEvent done = event(true);

        cuda.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, upload);
        cuda.recordEvent(uploaded, upload);
        cuda.streamWaitEvent(download, uploaded);
        cuda.memcpyAsync(dst, dev, BYTES, CopyKind.DEVICE_TO_HOST, download);
        cuda.recordEvent(done, download);
        cuda.synchronizeEvent(done);

        assertThat(cuda.queryEvent(done)).isTrue();
        assertThat(cuda.queryEventStatus(done)).isZero();
        assertThat(cuda.hostMemory(dst, BYTES).mismatch(cuda.hostMemory(src, BYTES))).isEqualTo(-1L);
    }

    @Test
    void batched_copy_moves_every_range() {
        int chunks = 100; // larger than the preallocated batch arrays, so they grow
        int chunkBytes = 4096;
        long src = pinned((long) chunks * chunkBytes);
        long back = pinned((long) chunks * chunkBytes);
        long dev = device((long) chunks * chunkBytes);
        fill(cuda.hostMemory(src, (long) chunks * chunkBytes), 3);
        long[] dsts = new long[chunks];
        long[] srcs = new long[chunks];
        long[] sizes = new long[chunks];
        for (int i = 0; i < chunks; i++) {
            int j = chunks - 1 - i; // scatter in reverse order
            srcs[i] = src + (long) i * chunkBytes;
            dsts[i] = dev + (long) j * chunkBytes;
            sizes[i] = chunkBytes;
        }
        CudaStream s = stream();
        cuda.memcpyBatchAsync(dsts, srcs, sizes, chunks, CopyKind.HOST_TO_DEVICE, s);
        for (int i = 0; i < chunks; i++) {
            long tmp = srcs[i];
            srcs[i] = dsts[i];
            dsts[i] = back + (tmp - src);
        }
        cuda.memcpyBatchAsync(dsts, srcs, sizes, chunks, CopyKind.DEVICE_TO_HOST, s);
        cuda.synchronizeStream(s);

        assertThat(cuda.hostMemory(back, (long) chunks * chunkBytes)
                .mismatch(cuda.hostMemory(src, (long) chunks * chunkBytes))).isEqualTo(-1L);
    }

    @Test
    void two_dimensional_copy_respects_pitches() {
        int rows = 64;
        int width = 256;
        int hostPitch = 512;
        long src = pinned((long) rows * hostPitch);
        long dst = pinned((long) rows * width);
        long dev = device((long) rows * width);
        fill(cuda.hostMemory(src, (long) rows * hostPitch), 11);
        CudaStream s = stream();
        cuda.memcpy2DAsync(dev, width, src, hostPitch, width, rows, CopyKind.HOST_TO_DEVICE, s);
        cuda.memcpyAsync(dst, dev, (long) rows * width, CopyKind.DEVICE_TO_HOST, s);
        cuda.synchronizeStream(s);

        MemorySegment packed = cuda.hostMemory(dst, (long) rows * width);
        MemorySegment strided = cuda.hostMemory(src, (long) rows * hostPitch);
        for (int r = 0; r < rows; r++) {
            assertThat(packed.asSlice((long) r * width, width).mismatch(strided.asSlice((long) r * hostPitch, width)))
                    .as("row %d", r).isEqualTo(-1L);
        }
    }

    @Test
    void host_function_runs_after_prior_work() throws InterruptedException {
        long src = pinned(BYTES);
        long dst = pinned(BYTES);
        long dev = device(BYTES);
        fill(cuda.hostMemory(src, BYTES), 13);
        CudaStream s = stream();
        cuda.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        cuda.memcpyAsync(dst, dev, BYTES, CopyKind.DEVICE_TO_HOST, s);
        CountDownLatch ran = new CountDownLatch(1);
        AtomicLong mismatchSeen = new AtomicLong(Long.MIN_VALUE);
        MemorySegment srcView = cuda.hostMemory(src, BYTES);
        MemorySegment dstView = cuda.hostMemory(dst, BYTES);
        // host functions must not call CUDA; reading host memory the prior copies wrote is allowed
        cuda.launchHostFunc(s, () -> {
            mismatchSeen.set(dstView.mismatch(srcView));
            ran.countDown();
        });
        assertThat(ran.await(30, TimeUnit.SECONDS)).as("host function ran").isTrue();
        cuda.synchronizeStream(s);
        assertThat(mismatchSeen.get()).as("dst already equal to src when the host function ran").isEqualTo(-1L);
        assertThat(NativeCudaRuntime.pendingHostFunctions()).isZero();
    }

    @Test
    void elapsed_time_between_timing_events() {
        long src = pinned(BYTES);
        long dev = device(BYTES);
        CudaStream s = stream();
        CudaEvent start = event(false);
        CudaEvent end = event(false);
        cuda.recordEvent(start, s);
        cuda.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        cuda.recordEvent(end, s);
        cuda.synchronizeEvent(end);
        assertThat(cuda.eventElapsedMs(start, end)).isGreaterThanOrEqualTo(0f);
    }

    @Test
    void registered_host_memory_can_be_copied() {
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment region = arena.allocate(BYTES, 4096);
            fill(region, 5);
            cuda.hostRegister(region.address(), BYTES, CudaRuntime.HOST_REGISTER_PORTABLE);
            try {
                long dev = device(BYTES);
                long back = pinned(BYTES);
                CudaStream s = stream();
                cuda.memcpyAsync(dev, region.address(), BYTES, CopyKind.HOST_TO_DEVICE, s);
                cuda.memcpyAsync(back, dev, BYTES, CopyKind.DEVICE_TO_HOST, s);
                cuda.synchronizeStream(s);
                assertThat(cuda.hostMemory(back, BYTES).mismatch(region)).isEqualTo(-1L);
            } finally {
                cuda.hostUnregister(region.address());
            }
        }
    }
}
