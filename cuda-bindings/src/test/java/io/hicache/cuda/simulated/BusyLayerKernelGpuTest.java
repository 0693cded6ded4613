package io.hicache.cuda.simulated;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.NativeCudaRuntime;

import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** Loads and launches the committed PTX on a real device; the words it writes match the host mirror. */
@Tag("gpu")
class BusyLayerKernelGpuTest {

    @Test
    void kernelWritesThePatternAfterSpinning() {
        try (NativeCudaRuntime cuda = NativeCudaRuntime.load()) {
            cuda.setDevice(0);
            long words = 1 << 20;
            long dev = cuda.deviceMalloc(words * 4);
            long host = cuda.hostAlloc(words * 4, CudaRuntime.HOST_ALLOC_PORTABLE);
            CudaStream s = cuda.createStream(0);
            CudaEvent start = cuda.createEvent(false);
            CudaEvent end = cuda.createEvent(false);
            try (BusyLayerKernel k = BusyLayerKernel.load(cuda)) {
                cuda.recordEvent(start, s);
                k.launch(s, dev, words, 7, 2_000_000L, 132, 256);
                cuda.recordEvent(end, s);
                cuda.memcpyAsync(host, dev, words * 4, CopyKind.DEVICE_TO_HOST, s);
                cuda.synchronizeStream(s);
                assertThat(cuda.eventElapsedMs(start, end)).as("kernel time (ms) for 2M cycles").isGreaterThan(0.1f);
                MemorySegment m = cuda.hostMemory(host, words * 4);
                for (long w = 0; w < words; w++) {
                    if (m.getAtIndex(JAVA_INT, w) != BusyLayerKernel.expectedWord(7, w)) {
                        throw new AssertionError("word " + w + " differs from the pattern");
                    }
                }
            } finally {
                cuda.destroyEvent(start);
                cuda.destroyEvent(end);
                cuda.destroyStream(s);
                cuda.hostFree(host);
                cuda.deviceFree(dev);
            }
        }
    }
}
