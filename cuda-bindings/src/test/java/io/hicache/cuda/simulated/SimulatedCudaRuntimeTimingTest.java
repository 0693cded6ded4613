package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Ordering, cross-stream waits, overlap and the timing model of {@link SimulatedCudaRuntime}. */
class SimulatedCudaRuntimeTimingTest {

    /** 1 us launch latency, 1 byte per ns on every link: a copy of n bytes takes 1000 + n ns. */
    static SimulatedCudaConfig.Builder simple() {
        return SimulatedCudaConfig.builder().copyLaunchLatencyNs(1_000).pcieBytesPerSecond(1_000_000_000L)
                .deviceToDeviceBytesPerSecond(1_000_000_000L);
    }

    private SimulatedCudaRuntime rt = new SimulatedCudaRuntime(simple().build());

    @AfterEach
    void close() {
        rt.close();
    }

    private static void fill(MemorySegment seg, byte value) {
        seg.fill(value);
    }

    @Test
    void copyTakesLatencyPlusBytesOverBandwidth() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(dev, host, 4000, CopyKind.HOST_TO_DEVICE, s);
        assertThat(rt.nextEventTimeNs()).isEqualTo(5_000);
        assertThat(SimulatedCudaRuntime.transferNs(1_000_000, 50_000_000_000L)).isEqualTo(20_000);
        assertThat(SimulatedCudaRuntime.transferNs(1, 3_000_000_000L)).isEqualTo(1); // rounds up
        assertThat(SimulatedCudaRuntime.transferNs(20_000_000_000L, 1_000_000_000L)).isEqualTo(20_000_000_000L);
    }

    @Test
    void withoutMovingBytesACopyOnlyTakesItsTime() {
        SimulatedCudaRuntime timing = new SimulatedCudaRuntime(simple().moveBytes(false).build());
        try {
            long host = timing.hostAlloc(1024, 0);
            long dev = timing.deviceMalloc(1024);
            fill(timing.hostMemory(host, 1024), (byte) 7);
            CudaStream s = timing.createStream(0);
            timing.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
            assertThat(timing.nextEventTimeNs()).isEqualTo(2_000);
            timing.advanceTo(2_000);
            assertThat(timing.opsCompleted()).isEqualTo(1);
            assertThat(timing.deviceMemory(dev, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
            timing.destroyStream(s);
            timing.deviceFree(dev);
            timing.hostFree(host);
        } finally {
            timing.close();
        }
        assertThat(simple().build().moveBytes()).isTrue();
    }

    @Test
    void bytesMoveOnlyWhenTheCopyCompletes() {
        long host = rt.hostAlloc(1024, 0);
        long dev = rt.deviceMalloc(1024);
        fill(rt.hostMemory(host, 1024), (byte) 7);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        // The host changes after submission but before completion: the device must see the new bytes.
        rt.advanceTo(1_999);
        assertThat(rt.deviceMemory(dev, 1).get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 0);
        fill(rt.hostMemory(host, 1024), (byte) 9);
        rt.advanceTo(2_000);
        assertThat(rt.deviceMemory(dev, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 9);
        assertThat(rt.deviceMemory(dev + 1000, 24).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
        assertThat(rt.bytesCopied(CopyKind.HOST_TO_DEVICE)).isEqualTo(1000);
    }

    @Test
    void streamIsFifoAndEventCoversPriorWork() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.memcpyAsync(host + 2048, dev, 1000, CopyKind.DEVICE_TO_HOST, s);
        rt.recordEvent(e, s);
        assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.NOT_READY.code());
        rt.advanceTo(2_000);
        // First copy done; the D2H one runs only now, although its engine was free all along.
        assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.NOT_READY.code());
        assertThat(rt.nextEventTimeNs()).isEqualTo(4_000);
        rt.advanceTo(4_000);
        assertThat(rt.queryEventStatus(e)).isZero();
        assertThat(rt.queryEvent(e)).isTrue();
    }

    @Test
    void neverRecordedEventIsComplete() {
        CudaEvent e = rt.createEvent(true);
        assertThat(rt.queryEventStatus(e)).isZero();
    }

    @Test
    void recordOnIdleStreamCompletesAtTheNextAdvance() {
        CudaEvent e = rt.createEvent(false);
        rt.recordEvent(e, CudaStream.DEFAULT);
        assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.NOT_READY.code());
        assertThat(rt.nextEventTimeNs()).isEqualTo(rt.nowNs());
        rt.advanceTo(rt.nowNs());
        assertThat(rt.queryEventStatus(e)).isZero();
    }

    @Test
    void reRecordingRearmsTheEvent() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.recordEvent(e, s);
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(e)).isZero();
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(e, s);
        assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.NOT_READY.code());
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(e)).isZero();
    }

    @Test
    void waitOrdersAcrossStreamsAndCapturesTheRecordAtCallTime() {
        long host = rt.hostAlloc(8192, 0);
        long dev = rt.deviceMalloc(8192);
        CudaStream a = rt.createStream(0);
        CudaStream b = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, a); // 0..2000
        rt.recordEvent(e, a);
        rt.streamWaitEvent(b, e);
        rt.memcpyAsync(host + 4096, dev, 1000, CopyKind.DEVICE_TO_HOST, b); // must start at 2000, not 0
        // Re-record after the wait: the wait keeps the first record.
        rt.memcpyAsync(dev + 4096, host, 3000, CopyKind.HOST_TO_DEVICE, a); // 2000..6000
        rt.recordEvent(e, a);
        List<long[]> log = new ArrayList<>();
        rt.setOpListener((seq, type, stream, startNs, endNs, err) -> {
            if (type == SimulatedCudaRuntime.OP_COPY) {
                log.add(new long[] {stream, startNs, endNs});
            }
        });
        rt.runUntilIdle();
        assertThat(log).extracting(x -> x[0] + ":" + x[1] + "-" + x[2])
                .containsExactly(a.handle() + ":0-2000", b.handle() + ":2000-4000", a.handle() + ":2000-6000");
        assertThat(rt.nowNs()).isEqualTo(6_000);
    }

    @Test
    void waitOnNeverRecordedEventIsANoOp() {
        CudaStream b = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.streamWaitEvent(b, e);
        rt.simulateKernel(b, 10);
        rt.runUntilIdle();
        assertThat(rt.nowNs()).isEqualTo(10);
    }

    @Test
    void copyOverlapsKernelOnAnotherStream() {
        long host = rt.hostAlloc(1 << 20, 0);
        long dev = rt.deviceMalloc(1 << 20);
        CudaStream compute = rt.createStream(0);
        CudaStream copy = rt.createStream(0);
        rt.simulateKernel(compute, 100_000);
        rt.memcpyAsync(host, dev, 99_000, CopyKind.DEVICE_TO_HOST, copy); // 100_000 ns
        rt.runUntilIdle();
        assertThat(rt.nowNs()).isEqualTo(100_000).isLessThan(200_000);
    }

    @Test
    void copiesOfOneDirectionSerializeAcrossStreamsButDirectionsOverlap() {
        long host = rt.hostAlloc(1 << 16, 0);
        long dev = rt.deviceMalloc(1 << 16);
        CudaStream s1 = rt.createStream(0);
        CudaStream s2 = rt.createStream(0);
        CudaStream s3 = rt.createStream(0);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s1);
        rt.memcpyAsync(dev + 1000, host, 1000, CopyKind.HOST_TO_DEVICE, s2);
        rt.memcpyAsync(host + 8192, dev + 8192, 1000, CopyKind.DEVICE_TO_HOST, s3);
        rt.runUntilIdle();
        assertThat(rt.nowNs()).isEqualTo(4_000); // two H2D back to back; D2H alongside
    }

    @Test
    void sharedPcieLinkSerializesBothDirections() {
        try (SimulatedCudaRuntime shared = new SimulatedCudaRuntime(simple().sharedPcieLink(true).build())) {
            long host = shared.hostAlloc(1 << 16, 0);
            long dev = shared.deviceMalloc(1 << 16);
            CudaStream s1 = shared.createStream(0);
            CudaStream s2 = shared.createStream(0);
            shared.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s1);
            shared.memcpyAsync(host + 8192, dev + 8192, 1000, CopyKind.DEVICE_TO_HOST, s2);
            shared.runUntilIdle();
            assertThat(shared.nowNs()).isEqualTo(4_000);
        }
    }

    @Test
    void batchedCopyPaysOneLaunchLatencyWhenSupported() {
        long host = rt.hostAlloc(1 << 16, 0);
        long dev = rt.deviceMalloc(1 << 16);
        fill(rt.hostMemory(host, 1 << 16), (byte) 3);
        long[] dsts = {dev, dev + 1000, dev + 5000};
        long[] srcs = {host, host + 2000, host + 3000};
        long[] sizes = {100, 200, 300};
        rt.memcpyBatchAsync(dsts, srcs, sizes, 3, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
        assertThat(rt.opsIssued()).isEqualTo(1);
        rt.runUntilIdle();
        assertThat(rt.nowNs()).isEqualTo(1_000 + 600);
        assertThat(rt.deviceMemory(dev + 5000, 300).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 3);
        try (SimulatedCudaRuntime unbatched = new SimulatedCudaRuntime(simple().batchedCopySupported(false).build())) {
            long h = unbatched.hostAlloc(1 << 16, 0);
            long d = unbatched.deviceMalloc(1 << 16);
            long[] ds = {d, d + 1000, d + 5000};
            long[] ss = {h, h + 2000, h + 3000};
            assertThat(unbatched.supportsBatchedCopy()).isFalse();
            unbatched.memcpyBatchAsync(ds, ss, sizes, 3, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
            assertThat(unbatched.opsIssued()).isEqualTo(3);
            unbatched.runUntilIdle();
            assertThat(unbatched.nowNs()).isEqualTo(3 * 1_000 + 600);
        }
    }

    @Test
    void copy2DMovesPitchedRows() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        MemorySegment h = rt.hostMemory(host, 4096);
        for (int i = 0; i < 4096; i++) {
            h.set(ValueLayout.JAVA_BYTE, i, (byte) i);
        }
        // 4 rows of 16 bytes from pitch 100 to pitch 32.
        rt.memcpy2DAsync(dev, 32, host, 100, 16, 4, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
        rt.runUntilIdle();
        assertThat(rt.nowNs()).isEqualTo(1_000 + 64);
        MemorySegment d = rt.deviceMemory(dev, 4096);
        for (int row = 0; row < 4; row++) {
            for (int col = 0; col < 32; col++) {
                byte expected = col < 16 ? (byte) (row * 100 + col) : 0;
                assertThat(d.get(ValueLayout.JAVA_BYTE, row * 32 + col)).isEqualTo(expected);
            }
        }
    }

    @Test
    void hostFuncRunsWhenTheStreamReachesIt() {
        CudaStream s = rt.createStream(0);
        long[] ranAt = {-1};
        rt.simulateKernel(s, 500);
        rt.launchHostFunc(s, () -> ranAt[0] = rt.nowNs());
        rt.advanceTo(499);
        assertThat(ranAt[0]).isEqualTo(-1);
        rt.advanceTo(10_000);
        assertThat(ranAt[0]).isEqualTo(500);
        assertThat(rt.nowNs()).isEqualTo(10_000);
    }

    @Test
    void synchronizeAdvancesTheClockUntilDone() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream a = rt.createStream(0);
        CudaStream b = rt.createStream(0);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, a);
        rt.simulateKernel(b, 50_000);
        rt.synchronizeStream(a);
        assertThat(rt.nowNs()).isEqualTo(2_000);
        CudaEvent e = rt.createEvent(false);
        rt.recordEvent(e, b);
        rt.synchronizeEvent(e);
        assertThat(rt.nowNs()).isEqualTo(50_000);
        assertThat(rt.idle()).isTrue();
    }

    @Test
    void elapsedTimeComesFromCompletionTimes() {
        CudaStream s = rt.createStream(0);
        CudaEvent start = rt.createEvent(false);
        CudaEvent end = rt.createEvent(false);
        rt.recordEvent(start, s);
        rt.simulateKernel(s, 2_500_000);
        rt.recordEvent(end, s);
        assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(CudaException.class,
                () -> rt.eventElapsedMs(start, end)).error()).isEqualTo(CudaError.NOT_READY);
        rt.runUntilIdle();
        assertThat(rt.eventElapsedMs(start, end)).isEqualTo(2.5f);
        CudaEvent noTiming = rt.createEvent(true);
        rt.recordEvent(noTiming, s);
        rt.runUntilIdle();
        assertThat(org.assertj.core.api.Assertions.catchThrowableOfType(CudaException.class,
                () -> rt.eventElapsedMs(start, noTiming)).error()).isEqualTo(CudaError.INVALID_RESOURCE_HANDLE);
    }

    @Test
    void driverApiAdvancesInTimeOrder() {
        assertThat(rt.idle()).isTrue();
        assertThat(rt.nextEventTimeNs()).isEqualTo(Long.MAX_VALUE);
        assertThat(rt.advanceToNextEvent()).isFalse();
        assertThat(rt.runUntilIdle()).isFalse();
        CudaStream a = rt.createStream(0);
        CudaStream b = rt.createStream(0);
        rt.simulateKernel(a, 100);
        rt.simulateKernel(b, 100); // compute serializes: 100..200
        assertThat(rt.idle()).isFalse();
        assertThat(rt.advanceToNextEvent()).isTrue();
        assertThat(rt.nowNs()).isEqualTo(100);
        assertThat(rt.nextEventTimeNs()).isEqualTo(200);
        assertThat(rt.advanceToNextEvent()).isTrue();
        assertThat(rt.idle()).isTrue();
        assertThat(rt.opsCompleted()).isEqualTo(2);
        assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> rt.advanceTo(5)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("only moves forward");
    }

    @Test
    void destroyedStreamStillDrainsItsWork() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        fill(rt.hostMemory(host, 4096), (byte) 5);
        CudaStream s = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(e, s);
        rt.destroyStream(s);
        assertThat(rt.liveStreams()).isZero();
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(e)).isZero();
        assertThat(rt.deviceMemory(dev, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 5);
    }
}
