package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaRuntimeContract;

/** The {@link CudaRuntimeContract} on the simulated device (runs in every build). */
class SimulatedCudaRuntimeConformanceTest extends CudaRuntimeContract {

    @Override
    protected CudaRuntime open() {
        return new SimulatedCudaRuntime(SimulatedCudaRuntimeTimingTest.simple().build());
    }
}
