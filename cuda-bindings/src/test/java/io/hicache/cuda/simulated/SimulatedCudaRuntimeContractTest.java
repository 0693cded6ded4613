package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Bad use, memory rules, leak counters, identity calls, close and threads of {@link SimulatedCudaRuntime}. */
class SimulatedCudaRuntimeContractTest {

    private final SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaRuntimeTimingTest.simple().build());

    @AfterEach
    void close() {
        rt.close();
    }

    private String fingerprint() {
        return rt.leakReport() + " issued=" + rt.opsIssued() + " work=" + rt.workOpsIssued() + " now=" + rt.nowNs()
                + " next=" + rt.nextEventTimeNs() + " idle=" + rt.idle() + " done=" + rt.opsCompleted();
    }

    private void assertRejectedWithoutStateChange(Class<? extends Throwable> type, String messagePart, Executable call) {
        String before = fingerprint();
        Throwable thrown = catchThrowableOfType(Throwable.class, call::execute);
        assertThat(thrown).isInstanceOf(type);
        assertThat(thrown.getMessage()).contains(messagePart);
        assertThat(fingerprint()).isEqualTo(before);
    }

    @Test
    void identityCalls() {
        assertThat(rt.runtimeVersion()).isEqualTo(13000);
        assertThat(rt.driverVersion()).isEqualTo(13000);
        assertThat(rt.deviceCount()).isEqualTo(1);
        rt.setDevice(0);
        assertThat(catchThrowableOfType(CudaException.class, () -> rt.setDevice(1)).error())
                .isEqualTo(CudaError.INVALID_DEVICE);
        assertThat(rt.errorName(35)).isEqualTo("cudaErrorInsufficientDriver");
        assertThat(rt.errorString(35)).isEqualTo("CUDA driver version is insufficient for CUDA runtime version");
        assertThat(rt.errorName(0)).isEqualTo("cudaSuccess");
        assertThat(rt.errorName(600)).isEqualTo("cudaErrorNotReady");
        assertThat(rt.errorString(700)).isEqualTo("an illegal memory access was encountered");
        for (CudaError e : CudaError.values()) {
            if (e != CudaError.UNKNOWN_CODE) {
                assertThat(rt.errorName(e.code())).as("%s", e).startsWith("cuda").isNotEqualTo("unrecognized error code");
                assertThat(rt.errorString(e.code())).as("%s", e).isNotEqualTo("unrecognized error code");
            }
        }
        assertThat(rt.errorName(123456)).isEqualTo("unrecognized error code");
        assertThat(rt.supportsBatchedCopy()).isTrue();
    }

    @Test
    void badHandlesAreRejectedByName() {
        CudaStream s = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.destroyStream(s);
        rt.destroyEvent(e);
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "stream 0x1 is not live",
                () -> rt.simulateKernel(s, 1));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "stream 0x1 is not live",
                () -> rt.destroyStream(s));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "event 0x1 is not live",
                () -> rt.recordEvent(e, CudaStream.DEFAULT));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "event 0x1 is not live",
                () -> rt.queryEventStatus(e));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "event 0x99 is not live",
                () -> rt.streamWaitEvent(CudaStream.DEFAULT, new CudaEvent(0x99)));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "default stream",
                () -> rt.destroyStream(CudaStream.DEFAULT));
    }

    @Test
    void badCopiesAreRejectedWithoutStateChange() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        rt.simulateKernel(s, 10); // some queued state to preserve
        try (Arena foreign = Arena.ofConfined()) {
            long unregistered = foreign.allocate(4096).address();
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "destination",
                    () -> rt.memcpyAsync(dev + 4000, host, 200, CopyKind.HOST_TO_DEVICE, s));
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "source",
                    () -> rt.memcpyAsync(dev, unregistered, 200, CopyKind.HOST_TO_DEVICE, s));
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "does not match",
                    () -> rt.memcpyAsync(dev, host, 200, CopyKind.DEVICE_TO_HOST, s));
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "does not match",
                    () -> rt.memcpyAsync(host, dev, 200, CopyKind.DEVICE_TO_DEVICE, s));
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "bytes must be >= 0",
                    () -> rt.memcpyAsync(dev, host, -1, CopyKind.HOST_TO_DEVICE, s));
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "destination",
                    () -> rt.memcpy2DAsync(dev, 1024, host, 16, 16, 5, CopyKind.HOST_TO_DEVICE, s));
            // A batch with one bad range queues nothing, even when batches are split.
            long[] dsts = {dev, dev + 100, dev + 5000};
            long[] srcs = {host, host, host};
            long[] sizes = {10, 10, 10};
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "destination",
                    () -> rt.memcpyBatchAsync(dsts, srcs, sizes, 3, CopyKind.HOST_TO_DEVICE, s));
            long[] mixedDsts = {dev, host + 100};
            long[] mixedSrcs = {host, dev};
            assertRejectedWithoutStateChange(IllegalArgumentException.class, "one direction",
                    () -> rt.memcpyBatchAsync(mixedDsts, mixedSrcs, sizes, 2, CopyKind.DEFAULT, s));
        }
        // DEFAULT infers the direction from the pointers.
        rt.memcpyAsync(host, dev, 10, CopyKind.DEFAULT, s);
        rt.runUntilIdle();
        assertThat(rt.bytesCopied(CopyKind.DEVICE_TO_HOST)).isEqualTo(10);
    }

    @Test
    void memoryMisuseIsRejectedWithoutStateChange() {
        long dev = rt.deviceMalloc(4096);
        long host = rt.hostAlloc(4096, 0);
        rt.deviceFree(dev);
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "double free", () -> rt.deviceFree(dev));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "not inside",
                () -> rt.deviceMemory(dev, 1));
        assertRejectedWithoutStateChange(IllegalArgumentException.class, "double free", () -> rt.hostFree(host + 1));
        long dev2 = rt.deviceMalloc(4096);
        rt.memcpyAsync(dev2, host, 100, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
        assertRejectedWithoutStateChange(IllegalStateException.class, "still use", () -> rt.deviceFree(dev2));
        assertRejectedWithoutStateChange(IllegalStateException.class, "still use", () -> rt.hostFree(host));
        rt.runUntilIdle();
        rt.deviceFree(dev2);
        rt.hostFree(host);
        assertThat(catchThrowableOfType(CudaException.class, () -> rt.deviceMalloc(1L << 50)).error())
                .isEqualTo(CudaError.MEMORY_ALLOCATION);
        assertThat(catchThrowableOfType(CudaException.class, () -> rt.hostUnregister(12345)).error())
                .isEqualTo(CudaError.HOST_MEMORY_NOT_REGISTERED);
        assertThat(rt.leakReport().clean()).isTrue();
    }

    @Test
    void hostRegisterMakesCallerMemoryUsableForCopies() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment mine = arena.allocate(8192, 4096);
            mine.fill((byte) 4);
            rt.hostRegister(mine.address(), 8192, CudaRuntime.HOST_REGISTER_DEFAULT);
            assertThat(catchThrowableOfType(CudaException.class,
                    () -> rt.hostRegister(mine.address() + 4096, 10, 0)).error())
                    .isEqualTo(CudaError.HOST_MEMORY_ALREADY_REGISTERED);
            long dev = rt.deviceMalloc(8192);
            rt.memcpyAsync(dev, mine.address() + 100, 1000, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
            rt.deviceMemory(dev + 4096, 8).fill((byte) 6);
            rt.memcpyAsync(mine.address(), dev + 4096, 8, CopyKind.DEVICE_TO_HOST, CudaStream.DEFAULT);
            rt.synchronizeStream(CudaStream.DEFAULT);
            assertThat(rt.deviceMemory(dev, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 4);
            assertThat(mine.get(ValueLayout.JAVA_BYTE, 7)).isEqualTo((byte) 6);
            assertThat(rt.hostMemory(mine.address() + 7, 1).get(ValueLayout.JAVA_BYTE, 0)).isEqualTo((byte) 6);
            assertThat(rt.leakReport().liveHostRegistrations()).isEqualTo(1);
            rt.hostUnregister(mine.address());
            assertThatThrownBy(() -> rt.memcpyAsync(dev, mine.address(), 8, CopyKind.HOST_TO_DEVICE,
                    CudaStream.DEFAULT)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("source");
            rt.deviceFree(dev);
        }
    }

    @Test
    void leakCountersFollowCreateAndDestroy() {
        CudaStream s = rt.createStream(-1);
        CudaEvent e = rt.createEvent(false);
        long dev = rt.deviceMalloc(1000);
        long host = rt.hostAlloc(1000, CudaRuntime.HOST_ALLOC_PORTABLE);
        assertThat(rt.leakReport()).isEqualTo(new SimulatedCudaRuntime.LeakReport(1, 1, 1, 1000, 1, 0));
        assertThat(rt.liveStreams()).isEqualTo(1);
        assertThat(rt.liveEvents()).isEqualTo(1);
        assertThat(rt.liveDeviceAllocations()).isEqualTo(1);
        assertThat(rt.liveHostAllocations()).isEqualTo(1);
        rt.destroyStream(s);
        rt.destroyEvent(e);
        rt.deviceFree(dev);
        rt.hostFree(host);
        assertThat(rt.leakReport().clean()).isTrue();
    }

    @Test
    void closeFreesEverythingOnceAndLaterUseThrows() {
        long host = rt.hostAlloc(4096, 0);
        rt.deviceMalloc(4096);
        rt.createStream(0);
        MemorySegment view = rt.hostMemory(host, 16);
        rt.simulateKernel(CudaStream.DEFAULT, 100);
        rt.close();
        rt.close();
        assertThat(rt.leakReport().clean()).isTrue();
        assertThat(rt.opsDropped()).isEqualTo(1);
        assertThatThrownBy(() -> view.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> rt.createEvent(false)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> rt.advanceTo(1_000)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> rt.hostMemory(host, 1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void hostFunctionMustNotCallTheRuntime() {
        AtomicReference<Throwable> seen = new AtomicReference<>();
        rt.launchHostFunc(CudaStream.DEFAULT, () -> {
            try {
                rt.createEvent(false);
            } catch (IllegalStateException ex) {
                seen.set(ex);
            }
        });
        rt.launchHostFunc(CudaStream.DEFAULT, () -> {
            throw new IllegalArgumentException("boom");
        });
        rt.simulateKernel(CudaStream.DEFAULT, 10);
        assertThatThrownBy(rt::runUntilIdle).hasMessage("boom");
        assertThat(seen.get()).hasMessageContaining("host function");
        assertThat(rt.runUntilIdle()).isTrue(); // the rest still runs
        assertThat(rt.nowNs()).isEqualTo(10);
    }

    @Test
    void concurrentRecordQueryAndAdvanceIsSafe() throws Exception {
        long host = rt.hostAlloc(1 << 16, 0);
        long dev = rt.deviceMalloc(1 << 16);
        CudaStream compute = rt.createStream(0);
        CudaStream backup = rt.createStream(0);
        int rounds = 2_000;
        CudaEvent[] events = new CudaEvent[rounds];
        for (int i = 0; i < rounds; i++) {
            events[i] = rt.createEvent(true);
        }
        AtomicLong published = new AtomicLong();
        CountDownLatch start = new CountDownLatch(1);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread forward = new Thread(() -> {
            try {
                start.await();
                for (int i = 0; i < rounds; i++) {
                    rt.simulateKernel(compute, 1_000);
                    rt.recordEvent(events[i], compute);
                    rt.streamWaitEvent(backup, events[i]);
                    rt.memcpyAsync(host + (i % 16) * 1024L, dev + (i % 16) * 1024L, 1024, CopyKind.DEVICE_TO_HOST, backup);
                    published.set(i + 1);
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        });
        Thread agent = new Thread(() -> {
            try {
                start.await();
                int next = 0;
                while (next < rounds) {
                    if (next < published.get() && rt.queryEvent(events[next])) {
                        next++;
                    }
                    Thread.onSpinWait();
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        });
        forward.start();
        agent.start();
        start.countDown();
        while (forward.isAlive() || agent.isAlive()) {
            rt.advanceToNextEvent();
            if (failure.get() != null) {
                break;
            }
            Thread.onSpinWait();
        }
        forward.join();
        agent.join();
        assertThat(failure.get()).isNull();
        rt.runUntilIdle();
        assertThat(rt.opsCompleted()).isEqualTo(rt.opsIssued()).isEqualTo(4L * rounds);
        assertThat(rt.bytesCopied(CopyKind.DEVICE_TO_HOST)).isEqualTo(1024L * rounds);
    }
}
