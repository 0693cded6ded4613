package io.hicache.core.copy;

import io.hicache.core.testing.TestDevices;
import io.hicache.cuda.CudaRuntime;

class SyncRuntimeCopyRoundTripTest extends CopyRoundTripContract {
    @Override
    protected CudaRuntime newRuntime() {
        return TestDevices.newRuntime();
    }
}
