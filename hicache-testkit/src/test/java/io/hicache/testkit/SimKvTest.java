package io.hicache.testkit;

import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class SimKvTest {
    @Test
    void simKvAllocatesAPackedLayoutOnTheDevice() {
        try (SimulatedCudaRuntime gpu = new SimulatedCudaRuntime()) {
            SimKv kv = SimKv.allocate(gpu, 2, 4, 16, 8);
            assertThat(kv.layout().layerCount()).isEqualTo(2);
            assertThat(kv.layout().pageAddress(1, 0, 7) + kv.layout().pageBytes())
                .isLessThanOrEqualTo(kv.base() + 2L * 2 * 8 * 4 * 16);
            assertThat(gpu.deviceMemory(kv.layout().pageAddress(0, 0, 0), kv.layout().pageBytes()).byteSize())
                .isEqualTo(4 * 16);
            kv.free();
        }
    }
}
