package io.hicache.core.internal.memory;

import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.core.memory.KvPageShape;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.NativeCudaRuntime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Host pool creation on the native runtime where {@code libcudart} is installed but no driver is: pinning
 * fails with {@code cudaErrorInsufficientDriver}, no pool is returned and nothing stays allocated.
 * Skipped where {@code libcudart} is absent, or where a driver is present (the gpu round trips cover that).
 */
class NativeHostKvPoolWithoutDriverTest {
    private static NativeCudaRuntime cuda;

    @BeforeAll
    static void load() {
        assumeTrue(NativeCudaRuntime.isLibraryAvailable(), "libcudart not found");
        cuda = NativeCudaRuntime.load();
        assumeTrue(cuda.driverVersion() == 0, "a CUDA driver is installed; this test checks the no-driver path");
    }

    @AfterAll
    static void close() {
        if (cuda != null) {
            cuda.close();
        }
    }

    @ParameterizedTest
    @EnumSource(HostMemoryKind.class)
    void poolCreationFailsWithInsufficientDriverAndLeaksNothing(HostMemoryKind kind) {
        long bytesBefore = HostKvPool.openPoolBytes();
        long poolsBefore = HostKvPool.openPoolCount();
        KvPageShape shape = new KvPageShape(4, 2, 16, 256);
        HostKvPool.Builder builder = HostKvPool.builder(cuda, shape).layout(HostLayout.PAGE_FIRST_DIRECT)
                .memoryKind(kind).pageCount(64);

        assertThatThrownBy(builder::allocate)
                .isInstanceOfSatisfying(CudaException.class, e -> {
                    assertThat(e.code()).isEqualTo(35);
                    assertThat(e.error()).isEqualTo(CudaError.INSUFFICIENT_DRIVER);
                    assertThat(e.call()).isEqualTo(kind == HostMemoryKind.HOST_ALLOC ? "cudaHostAlloc" : "cudaHostRegister");
                });
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(bytesBefore);
        assertThat(HostKvPool.openPoolCount()).isEqualTo(poolsBefore);

        // the builder stays usable and fails the same way: nothing half-built was kept
        assertThatThrownBy(builder::allocate).isInstanceOf(CudaException.class);
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(bytesBefore);
    }
}
