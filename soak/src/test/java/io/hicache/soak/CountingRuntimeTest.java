package io.hicache.soak;

import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.simulated.HostThreadCudaRuntime;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class CountingRuntimeTest {

    @Test
    void aFailedEventWaitKeepsReportingTheErrorUntilTheEventIsRecordedAgain() {
        try (CountingRuntime rt = new CountingRuntime(new HostThreadCudaRuntime(), 1, 0, 1.0)) {
            CudaStream s = rt.createStream(0);
            CudaEvent e = rt.createEvent(true);
            rt.recordEvent(e, s);
            rt.synchronizeStream(s);
            assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.UNKNOWN.code());
            assertThat(rt.queryEventStatus(e)).as("the same event, queried again").isEqualTo(CudaError.UNKNOWN.code());
            assertThatThrownBy(() -> rt.queryEvent(e)).isInstanceOf(CudaException.class)
                .satisfies(t -> assertThat(((CudaException) t).code()).isEqualTo(999));
            assertThatThrownBy(() -> rt.synchronizeEvent(e)).isInstanceOf(CudaException.class)
                .hasMessageContaining("cudaEventSynchronize");
            assertThat(rt.eventFaults()).as("one event failed once").isEqualTo(1);
            rt.recordEvent(e, s); // new work: drawn again (p = 1: fails again, counted again)
            rt.synchronizeStream(s);
            assertThat(rt.queryEventStatus(e)).isEqualTo(CudaError.UNKNOWN.code());
            assertThat(rt.eventFaults()).isEqualTo(2);
            assertThat(rt.copyFaults()).isZero();
            rt.destroyEvent(e);
            rt.destroyStream(s);
            assertThat(rt.liveEvents()).isZero();
            assertThat(rt.liveStreams()).isZero();
        }
    }

    @Test
    void withoutEventFaultsEveryWaitReportsTheDevicesStatus() {
        try (CountingRuntime rt = new CountingRuntime(new HostThreadCudaRuntime(), 1, 0, 0)) {
            CudaStream s = rt.createStream(0);
            CudaEvent e = rt.createEvent(true);
            rt.recordEvent(e, s);
            rt.synchronizeEvent(e);
            assertThat(rt.queryEventStatus(e)).isZero();
            assertThat(rt.queryEvent(e)).isTrue();
            assertThat(rt.eventFaults()).isZero();
            rt.destroyEvent(e);
            rt.destroyStream(s);
        }
    }

    @Test
    void memoryGrowthOverTheLastHalfComparesTheLastSampleWithTheMiddleOne() {
        assertThat(Soak.growthLastHalf(List.of())).isEqualTo("null");
        assertThat(Soak.growthLastHalf(List.of(100L))).isEqualTo("null");
        assertThat(Soak.growthLastHalf(List.of(100L, 112L))).isEqualTo("12");
        // 6 samples (minutes 1..6): minute 3 against minute 6; the first half's growth does not count
        assertThat(Soak.growthLastHalf(List.of(50L, 90L, 100L, 101L, 99L, 103L))).isEqualTo("3");
        assertThat(Soak.growthLastHalf(List.of(50L, 90L, 100L, 101L, 99L, 97L))).isEqualTo("-3");
    }
}
