package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Injected faults, sticky errors and their effect on events and bytes. */
class SimulatedCudaRuntimeFaultTest {

    private final SimulatedCudaRuntime rt = new SimulatedCudaRuntime(SimulatedCudaRuntimeTimingTest.simple().build());

    @AfterEach
    void close() {
        rt.close();
    }

    @Test
    void failedCopyWritesOnlyPartOfItsBytesAndTheCoveringEventsReportIt() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        rt.hostMemory(host, 4096).fill((byte) 1);
        CudaStream s = rt.createStream(0);
        CudaEvent layer = rt.createEvent(false);
        CudaEvent seal = rt.createEvent(false);
        CudaEvent later = rt.createEvent(false);
        rt.failWorkOp(rt.workOpsIssued() + 1, CudaError.LAUNCH_OUT_OF_RESOURCES);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(layer, s);
        rt.memcpyAsync(dev + 2000, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.recordEvent(seal, s);
        rt.advanceTo(2_000);
        // The failure happened; a record issued after it does not cover it.
        rt.recordEvent(later, s);
        rt.runUntilIdle();
        int code = CudaError.LAUNCH_OUT_OF_RESOURCES.code();
        assertThat(rt.queryEventStatus(layer)).isEqualTo(code);
        assertThat(rt.queryEventStatus(seal)).isEqualTo(code);
        assertThat(rt.queryEventStatus(later)).isZero();
        assertThatThrownBy(() -> rt.queryEvent(layer)).isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaErrorLaunchOutOfResources");
        assertThat(rt.deviceMemory(dev, 500).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 1);
        assertThat(rt.deviceMemory(dev + 500, 500).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
        assertThat(rt.deviceMemory(dev + 2000, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 1);
        assertThat(rt.opsFailed()).isEqualTo(1);
        assertThat(rt.bytesCopied(CopyKind.HOST_TO_DEVICE)).isEqualTo(1000);
        // synchronizeStream reports the failure once; the stream is usable afterwards (not sticky).
        assertThat(catchThrowableOfType(CudaException.class, () -> rt.synchronizeStream(s)).code()).isEqualTo(code);
        rt.synchronizeStream(s);
        assertThat(rt.stickyErrorCode()).isZero();
    }

    @Test
    void predicateSelectsCopiesToFail() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream s = rt.createStream(0);
        CudaEvent ok = rt.createEvent(false);
        CudaEvent bad = rt.createEvent(false);
        rt.failCopiesMatching((dst, src, bytes, kind) -> kind == CopyKind.DEVICE_TO_HOST && bytes == 77,
                CudaError.INVALID_VALUE);
        rt.memcpyAsync(host, dev, 76, CopyKind.DEVICE_TO_HOST, s);
        rt.recordEvent(ok, s);
        rt.runUntilIdle();
        rt.memcpyAsync(host, dev, 77, CopyKind.DEVICE_TO_HOST, s);
        rt.recordEvent(bad, s);
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(ok)).isZero();
        assertThat(rt.queryEventStatus(bad)).isEqualTo(CudaError.INVALID_VALUE.code());
        rt.failCopiesMatching(null, null);
        rt.memcpyAsync(host, dev, 77, CopyKind.DEVICE_TO_HOST, s);
        rt.recordEvent(bad, s);
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(bad)).isZero();
    }

    @Test
    void failedOpDoesNotAffectEventsOnOtherStreams() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        CudaStream a = rt.createStream(0);
        CudaStream b = rt.createStream(0);
        CudaEvent ea = rt.createEvent(false);
        CudaEvent eb = rt.createEvent(false);
        rt.failWorkOp(1, CudaError.INVALID_VALUE);
        rt.memcpyAsync(dev, host, 10, CopyKind.HOST_TO_DEVICE, a);
        rt.recordEvent(ea, a);
        rt.streamWaitEvent(b, ea);
        rt.recordEvent(eb, b);
        rt.runUntilIdle();
        assertThat(rt.queryEventStatus(ea)).isEqualTo(CudaError.INVALID_VALUE.code());
        assertThat(rt.queryEventStatus(eb)).isZero();
    }

    @Test
    void stickyErrorPoisonsTheContext() {
        long host = rt.hostAlloc(4096, 0);
        long dev = rt.deviceMalloc(4096);
        rt.hostMemory(host, 4096).fill((byte) 1);
        CudaStream s = rt.createStream(0);
        CudaStream other = rt.createStream(0);
        CudaEvent e = rt.createEvent(false);
        rt.failWorkOp(1, CudaError.ILLEGAL_ADDRESS);
        rt.memcpyAsync(dev, host, 1000, CopyKind.HOST_TO_DEVICE, s);
        rt.simulateKernel(other, 1_000_000);
        rt.memcpyAsync(dev + 2048, host, 1000, CopyKind.HOST_TO_DEVICE, other);
        rt.recordEvent(e, other);
        rt.runUntilIdle();
        int code = CudaError.ILLEGAL_ADDRESS.code();
        assertThat(rt.stickyErrorCode()).isEqualTo(code);
        assertThat(rt.idle()).isTrue();
        assertThat(rt.nowNs()).isEqualTo(2_000);
        assertThat(rt.opsDropped()).isEqualTo(3);
        assertThat(rt.queryEventStatus(e)).isEqualTo(code);
        assertThat(rt.deviceMemory(dev + 2048, 1000).toArray(ValueLayout.JAVA_BYTE)).containsOnly((byte) 0);
        CudaException ex = catchThrowableOfType(CudaException.class,
                () -> rt.memcpyAsync(dev, host, 1, CopyKind.HOST_TO_DEVICE, s));
        assertThat(ex.code()).isEqualTo(code);
        assertThat(ex.sticky()).isTrue();
        assertThat(ex.errorName()).isEqualTo("cudaErrorIllegalAddress");
        assertThatThrownBy(() -> rt.createEvent(false)).isInstanceOf(CudaException.class);
        assertThatThrownBy(() -> rt.deviceFree(dev)).isInstanceOf(CudaException.class);
        assertThatThrownBy(() -> rt.synchronizeStream(s)).isInstanceOf(CudaException.class);
        assertThat(rt.errorName(code)).isEqualTo("cudaErrorIllegalAddress");
    }

    @Test
    void injectStickyErrorPoisonsAtOnce() {
        CudaStream s = rt.createStream(0);
        rt.simulateKernel(s, 100);
        rt.injectStickyError(CudaError.LAUNCH_FAILURE);
        assertThat(rt.idle()).isTrue();
        assertThatThrownBy(() -> rt.simulateKernel(s, 1)).isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaErrorLaunchFailure");
        assertThatThrownBy(() -> rt.injectStickyError(CudaError.INVALID_VALUE))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void randomFaultsAndDelaysAreReproducibleFromTheSeed() {
        String first = runRandomFaults(42);
        assertThat(runRandomFaults(42)).isEqualTo(first);
        assertThat(runRandomFaults(43)).isNotEqualTo(first);
        assertThat(first).contains(":" + CudaError.LAUNCH_OUT_OF_RESOURCES.code());
    }

    private static String runRandomFaults(long seed) {
        SimulatedCudaConfig config = SimulatedCudaRuntimeTimingTest.simple().seed(seed)
                .copyFailureProbability(0.3, CudaError.LAUNCH_OUT_OF_RESOURCES).delayedCompletions(0.5, 5_000).build();
        StringBuilder log = new StringBuilder();
        try (SimulatedCudaRuntime sim = new SimulatedCudaRuntime(config)) {
            long host = sim.hostAlloc(1 << 16, 0);
            long dev = sim.deviceMalloc(1 << 16);
            CudaStream a = sim.createStream(0);
            CudaStream b = sim.createStream(0);
            sim.setOpListener((seq, type, stream, startNs, endNs, err) ->
                    log.append(seq).append('@').append(endNs).append(':').append(err).append(' '));
            for (int i = 0; i < 50; i++) {
                sim.memcpyAsync(dev + i * 100L, host + i * 100L, 100, CopyKind.HOST_TO_DEVICE, a);
                sim.memcpyAsync(host + 8192 + i * 100L, dev + i * 100L, 100, CopyKind.DEVICE_TO_HOST, b);
            }
            sim.runUntilIdle();
            long durationNs = sim.nowNs();
            assertThat(durationNs).isGreaterThanOrEqualTo(50L * 1_100);
        }
        return log.toString();
    }

    @Test
    void delayedCompletionsStayWithinBounds() {
        SimulatedCudaConfig config = SimulatedCudaRuntimeTimingTest.simple().seed(7).delayedCompletions(1.0, 500).build();
        try (SimulatedCudaRuntime sim = new SimulatedCudaRuntime(config)) {
            long host = sim.hostAlloc(4096, 0);
            long dev = sim.deviceMalloc(4096);
            long[] maxDuration = {0};
            long[] minDuration = {Long.MAX_VALUE};
            sim.setOpListener((seq, type, stream, startNs, endNs, err) -> {
                maxDuration[0] = Math.max(maxDuration[0], endNs - startNs);
                minDuration[0] = Math.min(minDuration[0], endNs - startNs);
            });
            for (int i = 0; i < 200; i++) {
                sim.memcpyAsync(dev, host, 100, CopyKind.HOST_TO_DEVICE, CudaStream.DEFAULT);
            }
            sim.runUntilIdle();
            assertThat(minDuration[0]).isGreaterThanOrEqualTo(1_100);
            assertThat(maxDuration[0]).isLessThanOrEqualTo(1_600).isGreaterThan(1_100);
        }
    }

    @Test
    void failWorkOpRejectsPastOps() {
        rt.simulateKernel(CudaStream.DEFAULT, 1);
        assertThatThrownBy(() -> rt.failWorkOp(1, CudaError.INVALID_VALUE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already issued");
        assertThatThrownBy(() -> rt.failWorkOp(5, CudaError.SUCCESS)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void failedKernelReportsOnItsEvent() {
        CudaEvent e = rt.createEvent(false);
        rt.failWorkOp(1, CudaError.LAUNCH_OUT_OF_RESOURCES);
        rt.simulateKernel(CudaStream.DEFAULT, 10);
        rt.recordEvent(e, CudaStream.DEFAULT);
        assertThat(catchThrowableOfType(CudaException.class, () -> rt.synchronizeEvent(e)).error())
                .isEqualTo(CudaError.LAUNCH_OUT_OF_RESOURCES);
    }
}
