package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaRuntimeContract;

/** The {@link CudaRuntimeContract} on host memory and real stream threads (runs in every build). */
class HostThreadCudaRuntimeConformanceTest extends CudaRuntimeContract {

    @Override
    protected CudaRuntime open() {
        return new HostThreadCudaRuntime();
    }
}
