package io.hicache.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Tag;

/**
 * The {@link CudaRuntimeContract} on a real device through {@code libcudart}. Tagged {@code gpu}:
 * excluded by default, run with {@code ./run-tests -pl cuda-bindings -Pgpu} or {@code scripts/gpu-check}.
 * Fails (does not skip) where no device is present, since running it asks for one.
 */
@Tag("gpu")
class NativeCudaRuntimeConformanceTest extends CudaRuntimeContract {

    @Override
    protected CudaRuntime open() {
        NativeCudaRuntime cuda = NativeCudaRuntime.load();
        assertThat(cuda.deviceCount()).as("CUDA devices").isPositive();
        cuda.setDevice(0);
        return cuda;
    }
}
