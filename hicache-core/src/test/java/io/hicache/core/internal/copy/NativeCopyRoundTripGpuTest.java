package io.hicache.core.internal.copy;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.NativeCudaRuntime;
import org.junit.jupiter.api.Tag;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The copy round trips on a real device through {@code libcudart}; run with {@code -Pgpu}. */
@Tag("gpu")
class NativeCopyRoundTripGpuTest extends CopyRoundTripContract {
    @Override
    protected CudaRuntime newRuntime() {
        assumeTrue(NativeCudaRuntime.isLibraryAvailable(), "libcudart not found");
        NativeCudaRuntime runtime = NativeCudaRuntime.load();
        if (runtime.driverVersion() == 0 || runtime.deviceCount() == 0) {
            runtime.close();
            assumeTrue(false, "no CUDA driver or device");
        }
        runtime.setDevice(0);
        return runtime;
    }
}
