package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaStream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The simulated device's use-after-free check: a copy issued before a range was retired (freed, or handed to a new
 * owner) and run after it is reported, whether it reads or writes the range; copies issued after the retirement,
 * copies that ran before it, and ranges beside it are not.
 */
class SimulatedUseAfterFreeTest {

    private final SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaRuntimeTimingTest.simple().build());

    @AfterEach
    void close() {
        rt.close();
    }

    @Test
    void aQueuedCopyThatRunsAfterItsDestinationOrSourceWasRetiredIsReported() {
        rt.checkUseAfterFree(true);
        assertThat(rt.tracksRetiredMemory()).isTrue();
        long host = rt.hostAlloc(8192, 0);
        long dev = rt.deviceMalloc(8192);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(host, dev, 1024, CopyKind.DEVICE_TO_HOST, s); // writes host [0, 1024)
        rt.memcpyAsync(host + 4096, dev + 4096, 1024, CopyKind.DEVICE_TO_HOST, s); // reads dev [4096, 5120)
        rt.retire(host + 512, 64);      // inside the first copy's destination
        rt.retire(dev + 5000, 200);     // overlaps the second copy's source
        rt.retire(host + 2048, 1024);   // touched by neither
        rt.memcpyAsync(host + 512, dev, 64, CopyKind.DEVICE_TO_HOST, s); // issued after: the new owner's copy
        rt.runUntilIdle();
        assertThat(rt.useAfterFreeCount()).isEqualTo(2);
        assertThat(rt.useAfterFreeReports()).hasSize(2);
        assertThat(rt.useAfterFreeReports().get(0)).contains("wrote").contains("retired after op");
        assertThat(rt.useAfterFreeReports().get(1)).contains("read");
    }

    @Test
    void copiesThatRanBeforeTheRetirementAndUncheckedRuntimesAreNotReported() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        rt.memcpyAsync(host, dev, 1024, CopyKind.DEVICE_TO_HOST, s);
        rt.retire(host, 1024); // check off: ignored
        rt.runUntilIdle();
        assertThat(rt.useAfterFreeCount()).isZero();
        rt.checkUseAfterFree(true);
        rt.memcpyAsync(host, dev, 1024, CopyKind.DEVICE_TO_HOST, s);
        rt.runUntilIdle();
        rt.retire(host, 1024); // drained before: nothing queued can touch it
        rt.memcpyAsync(host, dev, 1024, CopyKind.DEVICE_TO_HOST, s);
        rt.runUntilIdle();
        assertThat(rt.useAfterFreeCount()).isZero();
    }

    @Test
    void stridedCopiesAreCheckedRowByRowNotByTheirSpan() {
        rt.checkUseAfterFree(true);
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        // 4 rows of 16 bytes, 64 bytes apart on the host: the gaps belong to someone else
        rt.memcpy2DAsync(host, 64, dev, 16, 16, 4, CopyKind.DEVICE_TO_HOST, s);
        rt.retire(host + 16, 48);       // the gap after row 0
        rt.runUntilIdle();
        assertThat(rt.useAfterFreeCount()).isZero();
        rt.memcpy2DAsync(host, 64, dev, 16, 16, 4, CopyKind.DEVICE_TO_HOST, s);
        rt.retire(host + 192, 8);       // inside row 3
        rt.runUntilIdle();
        assertThat(rt.useAfterFreeCount()).isEqualTo(1);
    }
}
