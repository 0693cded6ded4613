package io.hicache.core.internal.copy;

import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Copy planning against a runtime: device pages written, copied D2H into a host pool and back H2D to other
 * device pages compare equal, for every host layout, MHA and MLA, several page sizes and counts. Device bytes
 * are written and read through a pinned staging buffer, so the same contract runs on every runtime.
 */
abstract class CopyRoundTripContract {
    private static final int LAYERS = 3;

    private CudaRuntime runtime;
    private CudaStream stream;
    private final List<HostKvPool> pools = new ArrayList<>();
    private final List<Long> deviceAllocations = new ArrayList<>();
    private final Map<DeviceKvLayout, long[]> deviceRegions = new HashMap<>();

    /** A fresh runtime for one test; closed after it. */
    protected abstract CudaRuntime newRuntime();

    @BeforeEach
    void setUp() {
        runtime = newRuntime();
        stream = runtime.createStream(0);
    }

    /** Checks, after the test released everything, that the runtime holds nothing more. */
    protected void assertNothingLeaked(CudaRuntime runtime) {
    }

    @AfterEach
    void tearDown() {
        pools.forEach(HostKvPool::close);
        deviceAllocations.forEach(runtime::deviceFree);
        runtime.destroyStream(stream);
        assertNothingLeaked(runtime);
        runtime.close();
    }

    static Stream<Arguments> everyLayoutKindPageSizeAndCount() {
        List<Arguments> cases = new ArrayList<>();
        for (HostLayout layout : HostLayout.values()) {
            for (AttentionKind kind : AttentionKind.values()) {
                for (int pageSizeTokens : new int[] {1, 16, 64}) {
                    for (int pages : new int[] {1, 63, 64, 65, 129}) {
                        cases.add(Arguments.of(layout, kind, pageSizeTokens, pages));
                    }
                }
            }
        }
        return cases.stream();
    }

    private DeviceKvLayout deviceLayout(AttentionKind kind, int pageSizeTokens, int devicePages, long strideExtra) {
        long bytesPerToken = kind == AttentionKind.MHA
                ? DeviceKvLayout.mhaBytesPerToken(2, 4, 2)
                : DeviceKvLayout.mlaBytesPerToken(3, 1, 2);
        DeviceKvLayout.Builder b = DeviceKvLayout.builder(kind).layerCount(LAYERS).pageSizeTokens(pageSizeTokens)
                .bytesPerTokenPerBuffer(bytesPerToken).pageCount(devicePages)
                .pageStrideBytes(strideExtra == 0 ? 0 : pageSizeTokens * bytesPerToken + strideExtra);
        long bytes = b.packedBytes();
        long base = runtime.deviceMalloc(bytes);
        deviceAllocations.add(base);
        DeviceKvLayout layout = b.packedFrom(base).build();
        deviceRegions.put(layout, new long[] {base, bytes});
        return layout;
    }

    /** Copies {@code bytes} between the device region and a pinned staging buffer and waits. */
    private byte[] stage(long devicePtr, byte[] toDevice, int length) {
        long staging = runtime.hostAlloc(length, CudaRuntime.HOST_ALLOC_DEFAULT);
        try {
            MemorySegment view = runtime.hostMemory(staging, length);
            if (toDevice != null) {
                MemorySegment.copy(toDevice, 0, view, ValueLayout.JAVA_BYTE, 0, length);
                runtime.memcpyAsync(devicePtr, staging, length, CopyKind.HOST_TO_DEVICE, stream);
                runtime.synchronizeStream(stream);
                return toDevice;
            }
            runtime.memcpyAsync(staging, devicePtr, length, CopyKind.DEVICE_TO_HOST, stream);
            runtime.synchronizeStream(stream);
            return view.toArray(ValueLayout.JAVA_BYTE);
        } finally {
            runtime.hostFree(staging);
        }
    }

    /** Fills the whole device region of a layout with random bytes. */
    private void fillRandom(DeviceKvLayout device, long seed) {
        long[] region = deviceRegions.get(device);
        byte[] bytes = new byte[(int) region[1]];
        new Random(seed).nextBytes(bytes);
        stage(region[0], bytes, bytes.length);
    }

    /** The whole device region of a layout, read back. */
    private byte[] snapshot(DeviceKvLayout device) {
        long[] region = deviceRegions.get(device);
        return stage(region[0], null, (int) region[1]);
    }

    private byte[] devicePage(DeviceKvLayout device, byte[] snapshot, int layer, int buffer, int page) {
        int from = (int) (device.pageAddress(layer, buffer, page) - deviceRegions.get(device)[0]);
        return Arrays.copyOfRange(snapshot, from, from + (int) device.pageBytes());
    }

    private HostKvPool hostPool(DeviceKvLayout device, HostLayout layout, int pages) {
        HostKvPool pool = HostKvPool.builder(runtime, device.shape()).layout(layout).pageCount(pages).allocate();
        pools.add(pool);
        return pool;
    }

    /** Host bytes of (layer, buffer, page) read row by row as the layout places them. */
    private static byte[] hostPageBytes(HostKvPool host, int layer, int buffer, int page) {
        MemorySegment seg = host.segment();
        int rowBytes = (int) host.shape().bytesPerTokenPerBuffer();
        byte[] out = new byte[(int) host.pageBytes()];
        long first = host.pageAddress(layer, buffer, page) - host.baseAddress();
        for (int t = 0; t < host.shape().pageSizeTokens(); t++) {
            MemorySegment.copy(seg, ValueLayout.JAVA_BYTE, first + t * host.tokenPitchBytes(), out, t * rowBytes, rowBytes);
        }
        return out;
    }

    private void copyAllLayers(CopyPlanner planner, int[] devicePages, int[] hostPages, CopyDirection direction,
                               CopyPlan plan, boolean batched, int expectedRunsPerBuffer) {
        for (int l = 0; l < LAYERS; l++) {
            planner.plan(l, devicePages, hostPages, 0, devicePages.length, direction, plan);
            if (expectedRunsPerBuffer > 0) {
                assertThat(plan.runCount()).as("runs of layer %d", l)
                        .isEqualTo(expectedRunsPerBuffer * planner.device().bufferCount());
            }
            assertThat(plan.totalBytes()).isEqualTo(devicePages.length * planner.device().pageBytes()
                    * planner.device().bufferCount());
            plan.issue(runtime, stream, batched);
        }
        runtime.synchronizeStream(stream);
    }

    private void assertRoundTrip(DeviceKvLayout device, HostKvPool host, byte[] before, int[] src, int[] hostPages,
                                 int[] dst) {
        byte[] after = snapshot(device);
        for (int l = 0; l < LAYERS; l++) {
            for (int b = 0; b < device.bufferCount(); b++) {
                for (int i = 0; i < src.length; i++) {
                    byte[] original = devicePage(device, before, l, b, src[i]);
                    assertThat(hostPageBytes(host, l, b, hostPages[i]))
                            .as("host page %d layer %d buffer %d", hostPages[i], l, b).isEqualTo(original);
                    assertThat(devicePage(device, after, l, b, dst[i]))
                            .as("device page %d layer %d buffer %d", dst[i], l, b).isEqualTo(original);
                }
            }
        }
    }

    private static int[] range(int from, int count) {
        int[] a = new int[count];
        for (int i = 0; i < count; i++) {
            a[i] = from + i;
        }
        return a;
    }

    @ParameterizedTest(name = "{0} {1} pageSize={2} pages={3}")
    @MethodSource("everyLayoutKindPageSizeAndCount")
    void contiguousPagesRoundTripWithOneRunPerBuffer(HostLayout layout, AttentionKind kind, int pageSizeTokens,
                                                     int pages) {
        DeviceKvLayout device = deviceLayout(kind, pageSizeTokens, 2 * pages + 1, 0);
        HostKvPool host = hostPool(device, layout, pages);
        HostPageAllocator allocator = new HostPageAllocator(host.pageCount());
        int[] hostPages = new int[pages];
        assertThat(allocator.allocate(pages, hostPages, 0, 7L)).isEqualTo(pages);
        int[] src = range(1, pages);
        int[] dst = range(pages + 1, pages);
        fillRandom(device, 31L * pages + pageSizeTokens);
        byte[] before = snapshot(device);

        CopyPlanner planner = new CopyPlanner(device, host, true);
        CopyPlan plan = new CopyPlan(4);
        boolean batched = (pages & 1) == 0;
        copyAllLayers(planner, src, hostPages, CopyDirection.DEVICE_TO_HOST, plan, batched, 1);
        copyAllLayers(planner, dst, hostPages, CopyDirection.HOST_TO_DEVICE, plan, !batched, 1);

        assertRoundTrip(device, host, before, src, hostPages, dst);
        allocator.free(hostPages, 0, pages);
        allocator.checkAllFree();
    }

    @ParameterizedTest(name = "{0} {1} coalesce={2}")
    @MethodSource("layoutsKindsAndCoalescing")
    void scatteredPagesRoundTrip(HostLayout layout, AttentionKind kind, boolean coalesce) {
        int pages = 40;
        DeviceKvLayout device = deviceLayout(kind, 4, 3 * pages, 0);
        HostKvPool host = hostPool(device, layout, 2 * pages);
        Random random = new Random(5);
        int[] src = shuffledDistinct(random, device.pageCount(), pages);
        int[] hostPages = shuffledDistinct(random, host.pageCount(), pages);
        int[] dst = disjointFrom(random, device.pageCount(), src);
        fillRandom(device, 99);
        byte[] before = snapshot(device);

        CopyPlanner planner = new CopyPlanner(device, host, coalesce);
        CopyPlan plan = new CopyPlan();
        copyAllLayers(planner, src, hostPages, CopyDirection.DEVICE_TO_HOST, plan, true, coalesce ? 0 : pages);
        copyAllLayers(planner, dst, hostPages, CopyDirection.HOST_TO_DEVICE, plan, false, coalesce ? 0 : pages);
        assertRoundTrip(device, host, before, src, hostPages, dst);
    }

    static Stream<Arguments> layoutsKindsAndCoalescing() {
        List<Arguments> cases = new ArrayList<>();
        for (HostLayout layout : HostLayout.values()) {
            for (AttentionKind kind : AttentionKind.values()) {
                cases.add(Arguments.of(layout, kind, true));
                cases.add(Arguments.of(layout, kind, false));
            }
        }
        return cases.stream();
    }

    private static int[] shuffledDistinct(Random random, int bound, int count) {
        List<Integer> all = new ArrayList<>();
        for (int i = 0; i < bound; i++) {
            all.add(i);
        }
        java.util.Collections.shuffle(all, random);
        int[] out = new int[count];
        for (int i = 0; i < count; i++) {
            out[i] = all.get(i);
        }
        return out;
    }

    private static int[] disjointFrom(Random random, int bound, int[] taken) {
        java.util.Set<Integer> used = new java.util.HashSet<>();
        for (int t : taken) {
            used.add(t);
        }
        List<Integer> free = new ArrayList<>();
        for (int i = 0; i < bound; i++) {
            if (!used.contains(i)) {
                free.add(i);
            }
        }
        java.util.Collections.shuffle(free, random);
        int[] out = new int[taken.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = free.get(i);
        }
        return out;
    }

    @Test
    void coalescesOnlyPagesContiguousOnBothSides() {
        DeviceKvLayout device = deviceLayout(AttentionKind.MHA, 16, 16, 0);
        HostKvPool host = hostPool(device, HostLayout.LAYER_FIRST, 8);
        CopyPlanner planner = new CopyPlanner(device, host, true);
        CopyPlan plan = new CopyPlan(1);
        // device 1-3 | 7-8 ; host 0-1 | 5 | 6-7  -> runs [1,2]->[0,1], [3]->[5], [7,8]->[6,7]
        planner.plan(2, new int[] {1, 2, 3, 7, 8}, new int[] {0, 1, 5, 6, 7}, 0, 5, CopyDirection.DEVICE_TO_HOST, plan);
        assertThat(plan.runCount()).isEqualTo(6);
        assertThat(plan.runRows(0)).isEqualTo(2);
        assertThat(plan.runRows(1)).isEqualTo(1);
        assertThat(plan.runRows(2)).isEqualTo(2);
        assertThat(plan.runBuffer(3)).isEqualTo(AttentionKind.V);
        assertThat(plan.runDeviceAddress(2)).isEqualTo(device.pageAddress(2, AttentionKind.K, 7));
        assertThat(plan.runHostAddress(2)).isEqualTo(host.pageAddress(2, AttentionKind.K, 6));
        assertThat(plan.runBytes(0)).isEqualTo(2 * device.pageBytes());
        assertThat(plan.runContiguous(0)).isTrue();

        new CopyPlanner(device, host, false)
                .plan(2, new int[] {1, 2, 3, 7, 8}, new int[] {0, 1, 5, 6, 7}, 0, 5, CopyDirection.DEVICE_TO_HOST, plan);
        assertThat(plan.runCount()).isEqualTo(10);
    }

    @Test
    void stridedDevicePagesCoalesceIntoTwoDimensionalRuns() {
        int pages = 9;
        DeviceKvLayout device = deviceLayout(AttentionKind.MLA, 16, 2 * pages + 1, 64);
        for (HostLayout layout : HostLayout.values()) {
            HostKvPool host = hostPool(device, layout, pages);
            int[] src = range(1, pages);
            int[] dst = range(pages + 1, pages);
            int[] hostPages = range(0, pages);
            fillRandom(device, 3);
            byte[] before = snapshot(device);
            CopyPlanner planner = new CopyPlanner(device, host, true);
            CopyPlan plan = new CopyPlan();
            copyAllLayers(planner, src, hostPages, CopyDirection.DEVICE_TO_HOST, plan, true, -1);
            copyAllLayers(planner, dst, hostPages, CopyDirection.HOST_TO_DEVICE, plan, true, -1);
            assertRoundTrip(device, host, before, src, hostPages, dst);
        }
    }

    @Test
    void rejectsBadPagesAndLeavesThePlanEmpty() {
        DeviceKvLayout device = deviceLayout(AttentionKind.MHA, 1, 4, 0);
        HostKvPool host = hostPool(device, HostLayout.PAGE_FIRST, 2);
        CopyPlanner planner = new CopyPlanner(device, host, true);
        CopyPlan plan = new CopyPlan();
        assertThatThrownBy(() -> planner.plan(0, new int[] {0, 4}, new int[] {0, 1}, 0, 2,
                CopyDirection.DEVICE_TO_HOST, plan))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("devicePage 4");
        assertThat(plan.runCount()).isZero();
        assertThatThrownBy(() -> planner.plan(3, new int[] {0}, new int[] {0}, 0, 1,
                CopyDirection.DEVICE_TO_HOST, plan))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("layer 3");
        assertThatThrownBy(() -> planner.plan(0, new int[] {0}, new int[] {2}, 0, 1,
                CopyDirection.DEVICE_TO_HOST, plan))
                .isInstanceOf(IndexOutOfBoundsException.class).hasMessageContaining("hostPage 2");
        host.close();
        assertThatThrownBy(() -> planner.plan(0, new int[] {0}, new int[] {0}, 0, 1,
                CopyDirection.DEVICE_TO_HOST, plan))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @Test
    void rejectsAHostPoolOfAnotherShape() {
        DeviceKvLayout device = deviceLayout(AttentionKind.MHA, 16, 4, 0);
        DeviceKvLayout other = deviceLayout(AttentionKind.MLA, 16, 4, 0);
        HostKvPool host = hostPool(other, HostLayout.LAYER_FIRST, 2);
        assertThatThrownBy(() -> new CopyPlanner(device, host, true))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("differs");
    }

    @Test
    void planningAllocatesNothingInSteadyState() {
        DeviceKvLayout device = deviceLayout(AttentionKind.MHA, 16, 300, 0);
        HostKvPool host = hostPool(device, HostLayout.PAGE_FIRST_DIRECT, 256);
        CopyPlanner planner = new CopyPlanner(device, host, true);
        CopyPlan plan = new CopyPlan();
        int[] src = shuffledDistinct(new Random(1), 300, 256);
        int[] hostPages = range(0, 256);
        var threads = (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        for (int warm = 0; warm < 3; warm++) {
            planner.plan(warm % LAYERS, src, hostPages, 0, 256, CopyDirection.DEVICE_TO_HOST, plan);
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 1000; i++) {
            planner.plan(i % LAYERS, src, hostPages, 0, 256, CopyDirection.DEVICE_TO_HOST, plan);
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated).as("bytes allocated by 1000 plans").isLessThan(1024);
    }

    @Test
    void registeredHostMemoryRoundTrips() {
        int pages = 5;
        DeviceKvLayout device = deviceLayout(AttentionKind.MHA, 16, 2 * pages + 1, 0);
        HostKvPool host = HostKvPool.builder(runtime, device.shape()).layout(HostLayout.PAGE_FIRST)
                .memoryKind(HostMemoryKind.REGISTERED).pageCount(pages).allocate();
        pools.add(host);
        int[] src = range(1, pages);
        int[] dst = range(pages + 1, pages);
        int[] hostPages = range(0, pages);
        fillRandom(device, 8);
        byte[] before = snapshot(device);
        CopyPlanner planner = new CopyPlanner(device, host, true);
        CopyPlan plan = new CopyPlan();
        copyAllLayers(planner, src, hostPages, CopyDirection.DEVICE_TO_HOST, plan, true, 1);
        copyAllLayers(planner, dst, hostPages, CopyDirection.HOST_TO_DEVICE, plan, true, 1);
        assertRoundTrip(device, host, before, src, hostPages, dst);
    }
}
