package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaStream;

import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

/** The hot path (copy, record, wait, query, advance) allocates nothing in steady state. */
class SimulatedCudaRuntimeAllocationTest {

    private static long allocatedBytes() {
        return ((com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean()).getCurrentThreadAllocatedBytes();
    }

    @Test
    void steadyStateSubmissionAndCompletionDoNotAllocate() {
        try (SimulatedCudaRuntime rt = new SimulatedCudaRuntime()) {
            long host = rt.hostAlloc(1 << 20, 0);
            long dev = rt.deviceMalloc(1 << 20);
            CudaStream compute = rt.createStream(0);
            CudaStream backup = rt.createStream(0);
            CudaEvent[] layerEvents = {rt.createEvent(true), rt.createEvent(true), rt.createEvent(true)};
            long[] dsts = new long[8];
            long[] srcs = new long[8];
            long[] sizes = new long[8];
            for (int i = 0; i < 8; i++) {
                dsts[i] = host + i * 4096L;
                srcs[i] = dev + i * 4096L;
                sizes[i] = 4096;
            }
            run(rt, compute, backup, layerEvents, dsts, srcs, sizes, host, dev, 50_000);
            long before = allocatedBytes();
            long opsBefore = rt.opsCompleted();
            run(rt, compute, backup, layerEvents, dsts, srcs, sizes, host, dev, 200_000);
            long allocated = allocatedBytes() - before;
            assertThat(rt.opsCompleted() - opsBefore).isEqualTo(200_000L * 6);
            assertThat(allocated).as("bytes allocated for 1.2M ops").isLessThan(64 * 1024);
        }
    }

    private static void run(SimulatedCudaRuntime rt, CudaStream compute, CudaStream backup, CudaEvent[] events,
                            long[] dsts, long[] srcs, long[] sizes, long host, long dev, int rounds) {
        for (int i = 0; i < rounds; i++) {
            CudaEvent e = events[i % events.length];
            rt.simulateKernel(compute, 10_000); // longer than the backup work per round: bounded backlog
            rt.recordEvent(e, compute);
            rt.streamWaitEvent(backup, e);
            rt.memcpyAsync(host, dev, 4096, CopyKind.DEVICE_TO_HOST, backup);
            rt.memcpyBatchAsync(dsts, srcs, sizes, 8, CopyKind.DEVICE_TO_HOST, backup);
            rt.memcpyAsync(dev, host, 4096, CopyKind.HOST_TO_DEVICE, backup);
            rt.queryEventStatus(e);
            if ((i & 7) == 7) {
                rt.advanceTo(rt.nowNs() + 8 * 10_000);
            }
        }
        rt.runUntilIdle();
    }
}
