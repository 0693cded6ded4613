package io.hicache.core.internal.copy;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;

import static org.assertj.core.api.Assertions.assertThat;

class SimulatedCopyRoundTripTest extends CopyRoundTripContract {
    @Override
    protected CudaRuntime newRuntime() {
        return new SimulatedCudaRuntime();
    }

    @Override
    protected void assertNothingLeaked(CudaRuntime runtime) {
        SimulatedCudaRuntime simulated = (SimulatedCudaRuntime) runtime;
        assertThat(simulated.idle()).as("no copy still queued").isTrue();
        assertThat(simulated.leakReport().clean()).as("%s", simulated.leakReport()).isTrue();
    }
}
