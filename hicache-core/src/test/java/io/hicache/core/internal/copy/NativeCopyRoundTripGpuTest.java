package io.hicache.core.internal.copy;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.NativeCudaRuntime;
import org.junit.jupiter.api.Tag;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The copy round trips on a real device through {@code libcudart}. Tagged {@code gpu}: excluded by default, run
 * with {@code ./run-tests -pl hicache-core -am -Pgpu} and by {@code scripts/gpu-check} (step 2). Fails (does not
 * skip) where no library or device is present, since running it asks for one; it used to skip there, so a GPU run
 * that could not reach the device reported nothing.
 */
@Tag("gpu")
class NativeCopyRoundTripGpuTest extends CopyRoundTripContract {
    @Override
    protected CudaRuntime newRuntime() {
        assertThat(NativeCudaRuntime.isLibraryAvailable()).as("libcudart found").isTrue();
        NativeCudaRuntime runtime = NativeCudaRuntime.load();
        if (runtime.driverVersion() == 0 || runtime.deviceCount() == 0) {
            runtime.close();
            assertThat(false).as("a CUDA driver and device").isTrue();
        }
        runtime.setDevice(0);
        return runtime;
    }
}
