package io.hicache.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What every {@link CudaRuntime} must do, written once against the interface: streams order work,
 * events order streams, copies move exact bytes for every {@link CopyKind}, a batched copy equals the
 * same copies one by one, host functions run after the work queued before them, and failures are
 * reported as the documented {@link CudaError} values.
 *
 * <p>A subclass supplies the runtime. Only interface calls are used, so "device" bytes are seen by
 * copying them back to pinned host memory; waiting is {@code cudaStreamSynchronize} /
 * {@code cudaEventSynchronize} (a simulated runtime advances its clock there, a real one blocks).
 *
 * <p>Known differences that are tested where they apply, not here: the simulated runtime rejects an
 * unknown or destroyed handle with {@link IllegalArgumentException} before any state changes (CUDA
 * returns {@code cudaErrorInvalidResourceHandle} or crashes), and its injected copy faults are
 * reported per event and are not sticky unless injected as sticky (on CUDA a failed copy is usually an
 * illegal address, which is sticky). See {@code docs/GPU.md}.
 */
public abstract class CudaRuntimeContract {

    /** For the subclass that names the runtime under test. */
    protected CudaRuntimeContract() {
    }

    /** Bytes of each test buffer: one page of a small layer, not a multiple of anything in particular. */
    protected static final int BYTES = 64 * 1024 + 96;

    protected CudaRuntime rt;
    private final List<Runnable> cleanup = new ArrayList<>();

    /** A fresh runtime with device 0 selected. */
    protected abstract CudaRuntime open();

    @BeforeEach
    final void openRuntime() {
        rt = open();
    }

    @AfterEach
    final void closeRuntime() {
        for (int i = cleanup.size() - 1; i >= 0; i--) {
            cleanup.get(i).run();
        }
        cleanup.clear();
        rt.close();
    }

    // ------------------------------------------------------------------ helpers

    protected final long pinned(long bytes) {
        long ptr = rt.hostAlloc(bytes, CudaRuntime.HOST_ALLOC_PORTABLE);
        cleanup.add(() -> rt.hostFree(ptr));
        return ptr;
    }

    protected final long device(long bytes) {
        long ptr = rt.deviceMalloc(bytes);
        cleanup.add(() -> rt.deviceFree(ptr));
        return ptr;
    }

    protected final CudaStream stream() {
        CudaStream s = rt.createStream(0);
        cleanup.add(() -> rt.destroyStream(s));
        return s;
    }

    protected final CudaEvent event(boolean disableTiming) {
        CudaEvent e = rt.createEvent(disableTiming);
        cleanup.add(() -> rt.destroyEvent(e));
        return e;
    }

    protected final MemorySegment host(long ptr, long bytes) {
        return rt.hostMemory(ptr, bytes);
    }

    /** Fills {@code bytes} at {@code ptr} with a pattern that differs per {@code seed} and per offset. */
    protected final void fill(long ptr, long bytes, int seed) {
        MemorySegment m = host(ptr, bytes);
        for (long i = 0; i < bytes; i++) {
            m.set(JAVA_BYTE, i, pattern(seed, i));
        }
    }

    protected static byte pattern(int seed, long offset) {
        long x = (offset + 1) * 0x9E3779B97F4A7C15L ^ (seed * 0xBF58476D1CE4E5B9L);
        return (byte) (x ^ (x >>> 29) ^ (x >>> 47));
    }

    protected final void assertPattern(long ptr, long offset, long bytes, int seed, long patternOffset) {
        MemorySegment m = host(ptr + offset, bytes);
        for (long i = 0; i < bytes; i++) {
            if (m.get(JAVA_BYTE, i) != pattern(seed, patternOffset + i)) {
                throw new AssertionError("byte " + (offset + i) + " differs from pattern " + seed + " at "
                        + (patternOffset + i));
            }
        }
    }

    protected final void assertZero(long ptr, long offset, long bytes) {
        MemorySegment m = host(ptr + offset, bytes);
        for (long i = 0; i < bytes; i++) {
            if (m.get(JAVA_BYTE, i) != 0) {
                throw new AssertionError("byte " + (offset + i) + " was written, expected untouched (0)");
            }
        }
    }

    /** Copies {@code bytes} of device memory back to a new pinned buffer and returns it. */
    protected final long readBack(long dev, long bytes, CudaStream s) {
        long h = pinned(bytes);
        host(h, bytes).fill((byte) 0);
        rt.memcpyAsync(h, dev, bytes, CopyKind.DEVICE_TO_HOST, s);
        rt.synchronizeStream(s);
        return h;
    }

    // ------------------------------------------------------------------ identity

    @Test
    void identityCallsAnswer() {
        assertThat(rt.runtimeVersion()).as("runtime version").isGreaterThanOrEqualTo(12000);
        assertThat(rt.driverVersion()).as("driver version").isPositive();
        assertThat(rt.deviceCount()).as("devices").isPositive();
        assertThat(rt.errorName(0)).isEqualTo("cudaSuccess");
        assertThat(rt.errorName(CudaError.NOT_READY.code())).isEqualTo("cudaErrorNotReady");
        assertThat(rt.errorName(CudaError.INSUFFICIENT_DRIVER.code())).isEqualTo("cudaErrorInsufficientDriver");
        assertThat(rt.errorString(CudaError.ILLEGAL_ADDRESS.code()))
                .isEqualTo("an illegal memory access was encountered");
    }

    // ------------------------------------------------------------------ copies

    @Test
    void everyCopyKindMovesExactBytes() {
        CudaStream s = stream();
        long src = pinned(BYTES);
        long dst = pinned(BYTES);
        long devA = device(BYTES);
        long devB = device(BYTES);
        fill(src, BYTES, 1);
        host(dst, BYTES).fill((byte) 0);

        int off = 96;
        int len = BYTES - 2 * off;
        rt.memcpyAsync(dst + off, src + off, len, CopyKind.HOST_TO_HOST, s);
        rt.synchronizeStream(s);
        assertZero(dst, 0, off);
        assertPattern(dst, off, len, 1, off);
        assertZero(dst, off + len, off);

        rt.memcpyAsync(devA, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(devB, devA, BYTES, CopyKind.DEVICE_TO_DEVICE, s);
        long back = readBack(devB, BYTES, s);
        assertPattern(back, 0, BYTES, 1, 0);

        // DEFAULT infers the direction from the pointers (unified addressing).
        fill(src, BYTES, 2);
        rt.memcpyAsync(devA, src, BYTES, CopyKind.DEFAULT, s);
        long h = pinned(BYTES);
        rt.memcpyAsync(h, devA, BYTES, CopyKind.DEFAULT, s);
        rt.synchronizeStream(s);
        assertPattern(h, 0, BYTES, 2, 0);
    }

    @Test
    void pitchedCopyMovesRowsAndLeavesTheGapsAlone() {
        CudaStream s = stream();
        int rows = 8;
        int width = 1000;
        int srcPitch = 1024;
        int dstPitch = 1536;
        long src = pinned((long) srcPitch * rows);
        long dev = device((long) dstPitch * rows);
        long zeros = pinned((long) dstPitch * rows);
        host(zeros, (long) dstPitch * rows).fill((byte) 0);
        rt.memcpyAsync(dev, zeros, (long) dstPitch * rows, CopyKind.HOST_TO_DEVICE, s);
        fill(src, (long) srcPitch * rows, 3);
        rt.memcpy2DAsync(dev, dstPitch, src, srcPitch, width, rows, CopyKind.HOST_TO_DEVICE, s);
        long back = readBack(dev, (long) dstPitch * rows, s);
        for (int r = 0; r < rows; r++) {
            assertPattern(back, (long) r * dstPitch, width, 3, (long) r * srcPitch);
            assertZero(back, (long) r * dstPitch + width, dstPitch - width);
        }
    }

    @Test
    void batchedCopyEqualsTheSameCopiesOneByOne() {
        CudaStream s = stream();
        int pages = 7;
        int page = 4096 + 64;
        long src = pinned((long) page * pages);
        fill(src, (long) page * pages, 4);
        long devBatch = device((long) page * pages);
        long devSingle = device((long) page * pages);
        long[] dsts = new long[pages];
        long[] srcs = new long[pages];
        long[] sizes = new long[pages];
        long[] dsts2 = new long[pages];
        for (int i = 0; i < pages; i++) {
            int to = (i * 3) % pages; // a permutation: scattered destinations
            dsts[i] = devBatch + (long) to * page;
            dsts2[i] = devSingle + (long) to * page;
            srcs[i] = src + (long) i * page;
            sizes[i] = page - (i % 2) * 64L; // ragged sizes
        }
        long zeros = pinned((long) page * pages);
        host(zeros, (long) page * pages).fill((byte) 0);
        rt.memcpyAsync(devBatch, zeros, (long) page * pages, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(devSingle, zeros, (long) page * pages, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyBatchAsync(dsts, srcs, sizes, pages, CopyKind.HOST_TO_DEVICE, s);
        for (int i = 0; i < pages; i++) {
            rt.memcpyAsync(dsts2[i], srcs[i], sizes[i], CopyKind.HOST_TO_DEVICE, s);
        }
        long a = readBack(devBatch, (long) page * pages, s);
        long b = readBack(devSingle, (long) page * pages, s);
        assertThat(host(a, (long) page * pages).mismatch(host(b, (long) page * pages))).isEqualTo(-1L);
        assertPattern(a, (long) ((3) % pages) * page, page - 64, 4, page); // source page 1 went to slot 3
    }

    // ------------------------------------------------------------------ ordering

    @Test
    void aStreamRunsItsWorkInOrder() {
        CudaStream s = stream();
        long first = pinned(BYTES);
        long second = pinned(BYTES);
        fill(first, BYTES, 5);
        fill(second, BYTES, 6);
        long dev = device(BYTES);
        rt.memcpyAsync(dev, first, BYTES, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(dev, second, BYTES, CopyKind.HOST_TO_DEVICE, s);
        long back = readBack(dev, BYTES, s);
        assertPattern(back, 0, BYTES, 6, 0);
    }

    @Test
    void anEventOrdersWorkAcrossStreams() {
        CudaStream producer = stream();
        CudaStream consumer = stream();
        CudaEvent done = event(true);
        long src = pinned(BYTES);
        fill(src, BYTES, 7);
        long dev = device(BYTES);
        long dst = pinned(BYTES);
        host(dst, BYTES).fill((byte) 0);
        rt.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, producer);
        rt.recordEvent(done, producer);
        rt.streamWaitEvent(consumer, done);
        rt.memcpyAsync(dst, dev, BYTES, CopyKind.DEVICE_TO_HOST, consumer);
        rt.synchronizeStream(consumer);
        assertPattern(dst, 0, BYTES, 7, 0);
        assertThat(rt.queryEventStatus(done)).isZero();
        assertThat(rt.queryEvent(done)).isTrue();
    }

    @Test
    void anEventCompletesWithTheWorkBeforeItAndTimesIt() {
        CudaStream s = stream();
        CudaEvent start = event(false);
        CudaEvent end = event(false);
        long src = pinned(BYTES);
        long dev = device(BYTES);
        rt.recordEvent(start, s);
        rt.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(end, s);
        int status = rt.queryEventStatus(end);
        assertThat(status).isIn(0, CudaError.NOT_READY.code());
        rt.synchronizeEvent(end);
        assertThat(rt.queryEventStatus(end)).isZero();
        assertThat(rt.queryEventStatus(start)).isZero();
        assertThat(rt.eventElapsedMs(start, end)).isGreaterThanOrEqualTo(0f);
    }

    @Test
    void aHostFunctionRunsAfterTheWorkBeforeIt() {
        CudaStream s = stream();
        long src = pinned(BYTES);
        fill(src, BYTES, 8);
        long dev = device(BYTES);
        long dst = pinned(BYTES);
        host(dst, BYTES).fill((byte) 0);
        MemorySegment view = host(dst, BYTES);
        AtomicReference<Long> mismatch = new AtomicReference<>();
        AtomicInteger runs = new AtomicInteger();
        rt.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(dst, dev, BYTES, CopyKind.DEVICE_TO_HOST, s);
        rt.launchHostFunc(s, () -> {
            mismatch.set(view.mismatch(host(src, BYTES)));
            runs.incrementAndGet();
        });
        rt.synchronizeStream(s);
        assertThat(runs.get()).isEqualTo(1);
        assertThat(mismatch.get()).as("first differing byte seen by the host function").isEqualTo(-1L);
    }

    // ------------------------------------------------------------------ failures

    @Test
    void failuresAreReportedAsDocumentedCodes() {
        CudaException noDevice = catchThrowableOfType(CudaException.class, () -> rt.setDevice(rt.deviceCount() + 7));
        assertThat(noDevice).isNotNull();
        assertThat(noDevice.error()).isEqualTo(CudaError.INVALID_DEVICE);
        assertThat(noDevice.sticky()).isFalse();

        CudaException oom = catchThrowableOfType(CudaException.class, () -> rt.deviceMalloc(1L << 56));
        assertThat(oom).isNotNull();
        assertThat(oom.error()).isEqualTo(CudaError.MEMORY_ALLOCATION);
        assertThat(oom.sticky()).isFalse();

        // Neither failure poisons the context: work still runs.
        CudaStream s = stream();
        long src = pinned(BYTES);
        fill(src, BYTES, 9);
        long dev = device(BYTES);
        rt.memcpyAsync(dev, src, BYTES, CopyKind.HOST_TO_DEVICE, s);
        assertPattern(readBack(dev, BYTES, s), 0, BYTES, 9, 0);
    }

    @Test
    void anUnknownCodeStillHasANameAndText() {
        assertThat(rt.errorName(123456)).isNotBlank();
        assertThat(rt.errorString(123456)).isNotBlank();
        assertThat(CudaError.of(123456)).isEqualTo(CudaError.UNKNOWN_CODE);
    }
}
