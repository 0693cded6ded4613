package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Real threads, real memory: ordering, bytes and errors of {@link HostThreadCudaRuntime}. */
class HostThreadCudaRuntimeTest {
    private final HostThreadCudaRuntime rt = new HostThreadCudaRuntime();

    @AfterEach
    void close() {
        rt.close();
    }

    private static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
        }
    }

    /** A host function that holds the stream until the latch opens: the stream is provably busy meanwhile. */
    private static Runnable gate(CountDownLatch open) {
        return () -> {
            try {
                if (!open.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("gate never opened");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        };
    }

    @Test
    void aStreamRunsItsWorkInOrderAndAnEventCoversWhatWasQueuedBeforeIt() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        fill(rt.hostMemory(host, 4096), 7);
        CudaStream s = rt.createStream(0);
        CudaEvent done = rt.createEvent(false);
        assertThat(rt.queryEventStatus(done)).as("never recorded").isZero();
        CountDownLatch open = new CountDownLatch(1);
        rt.launchHostFunc(s, gate(open));
        rt.memcpyAsync(dev, host, 4096, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(done, s);
        assertThat(rt.queryEventStatus(done)).isEqualTo(CudaError.NOT_READY.code());
        assertThat(rt.deviceMemory(dev, 4096).mismatch(rt.hostMemory(host, 4096))).as("copy not run yet").isNotEqualTo(-1);
        open.countDown();
        rt.synchronizeEvent(done);
        assertThat(rt.queryEventStatus(done)).isZero();
        assertThat(rt.deviceMemory(dev, 4096).mismatch(rt.hostMemory(host, 4096))).isEqualTo(-1);
        rt.destroyEvent(done);
        rt.destroyStream(s);
    }

    @Test
    void anEventOrdersAnotherStreamsLaterWork() {
        long a = rt.hostAlloc(1024, 0);
        long dev = rt.deviceMalloc(1024);
        long b = rt.hostAlloc(1024, 0);
        fill(rt.hostMemory(a, 1024), 3);
        CudaStream s1 = rt.createStream(0);
        CudaStream s2 = rt.createStream(0);
        CudaEvent up = rt.createEvent(true);
        CudaEvent down = rt.createEvent(false);
        CountDownLatch open = new CountDownLatch(1);
        rt.launchHostFunc(s1, gate(open));
        rt.memcpyAsync(dev, a, 1024, CopyKind.HOST_TO_DEVICE, s1);
        rt.recordEvent(up, s1);
        rt.streamWaitEvent(s2, up);
        rt.memcpyAsync(b, dev, 1024, CopyKind.DEVICE_TO_HOST, s2);
        rt.recordEvent(down, s2);
        assertThat(rt.queryEventStatus(down)).isEqualTo(CudaError.NOT_READY.code());
        open.countDown();
        rt.synchronizeStream(s2);
        assertThat(rt.queryEventStatus(up)).isZero();
        assertThat(rt.hostMemory(b, 1024).mismatch(rt.hostMemory(a, 1024))).isEqualTo(-1);
    }

    @Test
    void copiesMoveExactBytesForEveryKindIncluding2DAndBatches() {
        long h1 = rt.hostAlloc(8192, 0);
        long h2 = rt.hostAlloc(8192, 0);
        long d1 = rt.deviceMalloc(8192);
        long d2 = rt.deviceMalloc(8192);
        fill(rt.hostMemory(h1, 8192), 11);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(d1, h1, 8192, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(d2, d1, 8192, CopyKind.DEVICE_TO_DEVICE, s);
        rt.memcpyAsync(h2, d2, 8192, CopyKind.DEFAULT, s);
        rt.synchronizeStream(s);
        assertThat(rt.hostMemory(h2, 8192).mismatch(rt.hostMemory(h1, 8192))).isEqualTo(-1);

        // 2D: 16 rows of 100 bytes at pitch 256 into pitch 128
        rt.memcpy2DAsync(d1, 128, h1, 256, 100, 16, CopyKind.HOST_TO_DEVICE, s);
        // batch: the same rows one by one must give the same bytes
        long[] dsts = new long[16];
        long[] srcs = new long[16];
        long[] sizes = new long[16];
        for (int r = 0; r < 16; r++) {
            dsts[r] = d2 + r * 128L;
            srcs[r] = h1 + r * 256L;
            sizes[r] = 100;
        }
        rt.memcpyBatchAsync(dsts, srcs, sizes, 16, CopyKind.HOST_TO_DEVICE, s);
        rt.synchronizeStream(s);
        MemorySegment src = rt.hostMemory(h1, 8192);
        for (int r = 0; r < 16; r++) {
            MemorySegment want = src.asSlice(r * 256L, 100);
            assertThat(rt.deviceMemory(d1 + r * 128L, 100).mismatch(want)).isEqualTo(-1);
            assertThat(rt.deviceMemory(d2 + r * 128L, 100).mismatch(want)).isEqualTo(-1);
        }
        assertThat(rt.supportsBatchedCopy()).isFalse();
    }

    @Test
    void hostFunctionsRunAfterPriorWorkOnTheStreamsThread() throws InterruptedException {
        long h = rt.hostAlloc(64, 0);
        long d = rt.deviceMalloc(64);
        fill(rt.hostMemory(h, 64), 5);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(d, h, 64, CopyKind.HOST_TO_DEVICE, s);
        AtomicLong seen = new AtomicLong(-1);
        CountDownLatch ran = new CountDownLatch(1);
        rt.launchHostFunc(s, () -> {
            seen.set(rt.deviceMemory(d, 64).mismatch(rt.hostMemory(h, 64)));
            ran.countDown();
        });
        assertThat(ran.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(seen.get()).isEqualTo(-1);
    }

    @Test
    void eventsTimeRealWork() {
        CudaStream s = rt.createStream(0);
        CudaEvent a = rt.createEvent(false);
        CudaEvent b = rt.createEvent(false);
        long h = rt.hostAlloc(1 << 20, 0);
        long d = rt.deviceMalloc(1 << 20);
        rt.recordEvent(a, s);
        rt.memcpyAsync(d, h, 1 << 20, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(b, s);
        rt.synchronizeEvent(b);
        assertThat(rt.eventElapsedMs(a, b)).isGreaterThanOrEqualTo(0f);
        CudaEvent untimed = rt.createEvent(true);
        rt.recordEvent(untimed, s);
        rt.synchronizeEvent(untimed);
        assertThatThrownBy(() -> rt.eventElapsedMs(a, untimed)).isInstanceOf(CudaException.class)
            .extracting(e -> ((CudaException) e).error()).isEqualTo(CudaError.INVALID_RESOURCE_HANDLE);
    }

    @Test
    void badUseIsRejectedByNameBeforeAnythingIsQueued() {
        long h = rt.hostAlloc(64, 0);
        long d = rt.deviceMalloc(64);
        CudaStream s = rt.createStream(0);
        assertThatThrownBy(() -> rt.memcpyAsync(d, h, 65, CopyKind.HOST_TO_DEVICE, s))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not inside one live allocation");
        assertThatThrownBy(() -> rt.memcpyAsync(d, h, 64, CopyKind.DEVICE_TO_HOST, s))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("does not match the pointers");
        assertThatThrownBy(() -> rt.memcpyAsync(d, h, 64, CopyKind.HOST_TO_DEVICE, new CudaStream(99)))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stream 0x63 is not live");
        assertThatThrownBy(() -> rt.recordEvent(new CudaEvent(77), s))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("event 0x4d is not live");
        assertThatThrownBy(() -> rt.destroyStream(CudaStream.DEFAULT))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("default stream");
        assertThatThrownBy(() -> rt.deviceFree(h)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> rt.deviceMalloc(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> rt.hostMemory(d, 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> rt.setDevice(1)).isInstanceOf(CudaException.class);
        rt.synchronizeStream(s); // nothing was queued by the rejected calls
    }

    @Test
    void aCopyWhoseMemoryWasFreedWhileQueuedFailsItsStreamWithIllegalAddress() {
        long h = rt.hostAlloc(64, 0);
        long d = rt.deviceMalloc(64);
        CudaStream s = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        CountDownLatch open = new CountDownLatch(1);
        rt.launchHostFunc(s, gate(open));
        rt.memcpyAsync(d, h, 64, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(e, s);
        rt.deviceFree(d);
        open.countDown();
        assertThatThrownBy(() -> rt.synchronizeEvent(e)).isInstanceOf(CudaException.class)
            .extracting(x -> ((CudaException) x).error()).isEqualTo(CudaError.ILLEGAL_ADDRESS);
        assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.ILLEGAL_ADDRESS.code());
        assertThatThrownBy(() -> rt.synchronizeStream(s)).isInstanceOf(CudaException.class);
    }

    @Test
    void registeredHostRangesCopyAndEveryCallAfterCloseThrows() {
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            MemorySegment mine = arena.allocate(256, 64);
            fill(mine, 9);
            rt.hostRegister(mine.address(), 256, 0);
            assertThatThrownBy(() -> rt.hostRegister(mine.address(), 256, 0)).isInstanceOf(CudaException.class);
            long d = rt.deviceMalloc(256);
            rt.memcpyAsync(d, mine.address(), 256, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
            rt.synchronizeStream(CudaStream.DEFAULT);
            assertThat(rt.deviceMemory(d, 256).mismatch(mine)).isEqualTo(-1);
            rt.hostUnregister(mine.address());
            assertThatThrownBy(() -> rt.hostUnregister(mine.address())).isInstanceOf(CudaException.class);
        }
        assertThat(rt.liveAllocations()).extracting(HostThreadCudaRuntime.Allocation::kind)
            .containsExactly(HostThreadCudaRuntime.MemoryKind.DEVICE);
        rt.close();
        rt.close();
        assertThatThrownBy(() -> rt.createStream(0)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("closed");
    }
}
