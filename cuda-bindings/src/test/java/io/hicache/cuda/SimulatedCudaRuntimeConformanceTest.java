package io.hicache.cuda;

/** The {@link CudaRuntimeContract} on the simulated device (runs in every build). */
class SimulatedCudaRuntimeConformanceTest extends CudaRuntimeContract {

    @Override
    protected CudaRuntime open() {
        return new SimulatedCudaRuntime(SimulatedCudaRuntimeTimingTest.simple().build());
    }
}
