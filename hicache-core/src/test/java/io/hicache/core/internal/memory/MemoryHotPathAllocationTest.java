package io.hicache.core.internal.memory;

import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.AllocationMeter;
import io.hicache.core.internal.copy.CopyDirection;
import io.hicache.core.internal.copy.CopyPlan;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Allocation regression guard for the memory side's hot paths: host page allocate/free pairs and copy planning
 * (contiguous and scattered pages, coalescing on and off) allocate nothing once warm. Minimum over rounds of
 * bytes counted around large loops; not timing-based.
 */
class MemoryHotPathAllocationTest {
    private static final int WARMUPS = 3;
    private static final int ROUNDS = 5;

    @BeforeAll
    static void meterWorks() {
        assumeTrue(AllocationMeter.supported(), "per-thread allocation counting unsupported by this JVM");
    }

    @Test
    void allocateFreePairsAllocateNothing() {
        HostPageAllocator allocator = new HostPageAllocator(4096);
        int[] pages = new int[64];
        int[] held = new int[1024];
        allocator.allocate(held.length, held, 0, 1L);
        long bytes = AllocationMeter.minBytes(WARMUPS, ROUNDS, () -> {
            for (int i = 0; i < 100_000; i++) {
                int n = 1 + (i & 63);
                allocator.allocate(n, pages, 0, i);
                allocator.free(pages, 0, n);
            }
        });
        assertThat(bytes).as("bytes allocated by 100,000 allocate/free pairs").isZero();
        allocator.free(held, 0, held.length);
        allocator.checkAllFree();
    }

    @Test
    void copyPlanningAllocatesNothing() {
        int pages = 512;
        try (SimulatedCudaRuntime runtime = new SimulatedCudaRuntime()) {
            DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(4).pageSizeTokens(16)
                .bytesPerTokenPerBuffer(64).pageCount(pages);
            long base = runtime.deviceMalloc(db.packedBytes());
            DeviceKvLayout device = db.packedFrom(base).build();
            try (HostKvPool host = HostKvPool.builder(runtime, device.shape()).pageCount(pages).allocate()) {
                int[] contiguous = new int[pages];
                int[] scattered = new int[pages];
                for (int i = 0; i < pages; i++) {
                    contiguous[i] = i;
                    scattered[i] = (i * 7 + 3) % pages;
                }
                CopyPlan plan = new CopyPlan();
                for (boolean coalesce : new boolean[] {true, false}) {
                    CopyPlanner planner = new CopyPlanner(device, host, coalesce);
                    for (int[] devicePages : new int[][] {contiguous, scattered}) {
                        long bytes = AllocationMeter.minBytes(WARMUPS, ROUNDS, () -> {
                            for (int i = 0; i < 2_000; i++) {
                                planner.plan(i & 3, devicePages, contiguous, 0, pages, CopyDirection.DEVICE_TO_HOST,
                                    plan);
                            }
                        });
                        assertThat(bytes).as("bytes allocated by 2,000 plans of %d pages (coalesce %s)", pages,
                            coalesce).isZero();
                    }
                }
            }
            runtime.deviceFree(base);
        }
    }
}
