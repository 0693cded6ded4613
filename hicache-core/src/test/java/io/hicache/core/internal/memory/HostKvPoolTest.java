package io.hicache.core.internal.memory;

import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.core.memory.InsufficientHostMemoryException;
import io.hicache.core.memory.KvPageShape;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostKvPoolTest {
    private static final KvPageShape TARGET = new KvPageShape(4, 2, 16, 64);
    private static final KvPageShape DRAFT = new KvPageShape(1, 2, 16, 32);

    private SimulatedCudaRuntime runtime;
    private long openBytesBefore;

    @BeforeEach
    void setUp() {
        runtime = new SimulatedCudaRuntime();
        openBytesBefore = HostKvPool.openPoolBytes();
    }

    @AfterEach
    void tearDown() {
        assertThat(runtime.leakReport().clean()).as("%s", runtime.leakReport()).isTrue();
        runtime.close();
        assertThat(HostKvPool.openPoolBytes()).as("host bytes leaked by the test").isEqualTo(openBytesBefore);
    }

    @ParameterizedTest
    @EnumSource(HostMemoryKind.class)
    void sizesByPagesAndClosesExactlyOnce(HostMemoryKind kind) {
        HostKvPool pool = HostKvPool.builder(runtime, TARGET).layout(HostLayout.PAGE_FIRST_DIRECT).memoryKind(kind)
                .pageCount(10).allocate();
        assertThat(pool.totalBytes()).isEqualTo(10 * TARGET.bytesPerPageAllLayers());
        assertThat(HostKvPool.openPoolBytes() - openBytesBefore).isEqualTo(pool.totalBytes());
        pool.segment().set(ValueLayout.JAVA_BYTE, pool.totalBytes() - 1, (byte) 7);
        assertThat(pool.pageAddress(3, 1, 9) + pool.pageBytes()).isLessThanOrEqualTo(pool.baseAddress() + pool.totalBytes());
        var segment = pool.segment();
        pool.close();
        pool.close();
        assertThat(pool.isClosed()).isTrue();
        assertThatThrownBy(() -> segment.get(ValueLayout.JAVA_BYTE, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(pool::segment).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @Test
    void sizesByBytesAndByRatioToTheDevicePool() {
        try (HostKvPool byBytes = HostKvPool.builder(runtime, TARGET).bytes(5 * TARGET.bytesPerPageAllLayers() + 1)
                .allocate()) {
            assertThat(byBytes.pageCount()).isEqualTo(5);
        }
        DeviceKvLayout device = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(4).pageSizeTokens(16)
                .bytesPerTokenPerBuffer(64).pageCount(12).packedFrom(0x1000_0000L).build();
        try (HostKvPool byRatio = HostKvPool.builder(runtime, TARGET).ratioToDevice(device, 2.5).allocate()) {
            assertThat(byRatio.pageCount()).isEqualTo(30);
        }
        assertThatThrownBy(() -> HostKvPool.builder(runtime, DRAFT).ratioToDevice(device, 2).allocate())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("differs");
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).ratioToDevice(device, 0).allocate())
                .hasMessageContaining("ratio");
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).bytes(10).allocate())
                .hasMessageContaining("less than one host page");
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).pageCount(3).bytes(1 << 20).allocate())
                .hasMessageContaining("exactly one");
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).pageCount(0).allocate())
                .hasMessageContaining("pageCount");
    }

    @Test
    void refusesPoolsOverAvailableMemoryBeforeAllocating() {
        long need = 100 * TARGET.bytesPerPageAllLayers();
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).pageCount(100).availableBytes(() -> need - 1)
                .allocate())
                .isInstanceOf(InsufficientHostMemoryException.class)
                .hasMessageContaining(need + " bytes").hasMessageContaining((need - 1) + " bytes");
        assertThatThrownBy(() -> HostKvPool.builder(runtime, TARGET).pageCount(Integer.MAX_VALUE - 8).allocate())
                .isInstanceOf(InsufficientHostMemoryException.class)
                .hasMessageContaining("host memory are available");
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(openBytesBefore);
        assertThat(HostKvPool.systemAvailableBytes()).isPositive();
    }

    @Test
    void draftPoolSharesPageIdsAndAddsOnlyItsOwnBytes() {
        try (HostKvPool target = HostKvPool.builder(runtime, TARGET).layout(HostLayout.LAYER_FIRST).pageCount(20)
                .allocate();
             HostKvPool draft = target.allocateDraft(DRAFT)) {
            assertThat(draft.pageCount()).isEqualTo(target.pageCount());
            assertThat(draft.layout()).isEqualTo(target.layout());
            assertThat(draft.totalBytes()).isEqualTo(20 * DRAFT.bytesPerPageAllLayers());
            assertThat(HostKvPool.openPoolBytes() - openBytesBefore).isEqualTo(target.totalBytes() + draft.totalBytes());
            assertThatThrownBy(() -> target.allocateDraft(new KvPageShape(1, 2, 8, 32)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pageSizeTokens");
            assertThatThrownBy(() -> target.allocateDraft(DRAFT, () -> 0L))
                    .isInstanceOf(InsufficientHostMemoryException.class);
        }
    }
}
