package io.hicache.core.testing;

import io.hicache.cuda.CudaRuntime;

import java.lang.foreign.MemorySegment;

/** The runtime the memory tests run on, and a view of its device memory. */
public final class TestDevices {
    private TestDevices() {
    }

    public static CudaRuntime newRuntime() {
        return new SyncTestCudaRuntime();
    }

    public static MemorySegment deviceMemory(CudaRuntime runtime, long ptr, long bytes) {
        return ((SyncTestCudaRuntime) runtime).deviceMemory(ptr, bytes);
    }
}
