package io.hicache.example;

import io.hicache.testkit.ProbeModule;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The module boundary as an engine sees it: a small engine module compiled on the module path against the
 * library's modules compiles when it uses the exported API, and javac refuses it when it names an internal
 * (the controller, the host pool, the mutable metrics, the tree's plug-in interfaces).
 */
class ApiBoundaryTest {
    /** An engine module requiring the facade, compiled against the library modules and their dependencies. */
    private static final ProbeModule PROBE = ProbeModule.requiring("io.hicache.core", "cuda-bindings", "radix",
        "hicache-core", "agrona", "disruptor", "jctools-core", "slf4j-api");

    @Test
    void engineCodeUsingTheFacadeCompiles(@TempDir Path dir) throws IOException {
        String errors = PROBE.compile(dir, """
                import io.hicache.core.*;
                import io.hicache.core.memory.*;
                import io.hicache.core.metrics.MetricsSnapshot;
                import io.hicache.cuda.simulated.SimulatedCudaRuntime;
                import io.hicache.radix.MatchResult;
                """, """
                static long run(SimulatedCudaRuntime gpu, DeviceKvLayout layout, int[] tokens, int[] pages) {
                    try (HiCache cache = HiCache.builder().runtime(gpu).targetLayout(layout).hostPages(8)
                            .threadingMode(ThreadingMode.INVOKER).build()) {
                        cache.insert(tokens, 0, tokens.length, pages, 0);
                        java.util.List<BackupHandle> backups = new java.util.ArrayList<>();
                        cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
                        ForwardHooks hooks = cache.beginForward(backups);
                        hooks.endForward();
                        cache.poll();
                        MatchResult m = cache.match(tokens, 0, tokens.length, new MatchResult());
                        MetricsSnapshot s = cache.metrics();
                        return m.deviceTokenCount() + s.commitCount() + cache.tree().nodeCount();
                    }
                }
                """);
        assertThat(errors).isEmpty();
    }

    /**
     * The JVM flags docs/INTEGRATION.md lists for an engine on the module path: native access for the two library
     * modules that use FFM's restricted methods, and sun.misc.Unsafe's memory access for JCTools and Agrona.
     */
    static final String[] ENGINE_JVM_FLAGS = {"--enable-native-access=io.hicache.cuda,io.hicache.core",
        "--sun-misc-unsafe-memory-access=allow"};

    /**
     * A module that declares only {@code requires io.hicache.core} builds a cache, backs up one node through it and
     * closes it, on the module path, with no {@code --add-modules}: the library's modules bring what their
     * dependencies need (JCTools uses sun.misc.Unsafe but asks for jdk.unsupported only statically, so it was not
     * resolved: {@code NoClassDefFoundError: sun/misc/Unsafe} in {@code build()}). With the documented flags the JVM
     * warns about nothing.
     */
    @Test
    void anEngineModuleRequiringOnlyTheCoreRunsOnTheModulePath(@TempDir Path dir) throws Exception {
        String errors = PROBE.compile(dir, """
                import io.hicache.core.*;
                import io.hicache.core.memory.*;
                import io.hicache.cuda.simulated.SimulatedCudaRuntime;
                """, """
                public static void main(String[] args) {
                    SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
                    DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(2)
                        .pageSizeTokens(16).bytesPerTokenPerBuffer(64).pageCount(8);
                    long base = gpu.deviceMalloc(lb.packedBytes());
                    BackupState state;
                    try (HiCache cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(base).build())
                            .hostPages(8).clock(gpu::nowNs).threadingMode(ThreadingMode.INVOKER).build()) {
                        int[] tokens = new int[16];
                        cache.insert(tokens, 0, tokens.length, new int[] {0}, 0);
                        BackupHandle b = cache.reserve(cache.lastInsertNode(), false);
                        ForwardHooks hooks = cache.beginForward(java.util.List.of(b));
                        for (int l = 0; l < 2; l++) {
                            gpu.simulateKernel(cache.computeStream(), 10_000);
                            hooks.targetLayerStored(l);
                        }
                        hooks.endForward();
                        for (int i = 0; i < 1_000 && !b.state().terminal(); i++) {
                            cache.doAgentWork();
                            gpu.advanceToNextEvent();
                            cache.poll();
                        }
                        state = b.state();
                    }
                    gpu.deviceFree(base);
                    gpu.close();
                    System.out.println(state == BackupState.COMMITTED ? "OK" : "backup ended " + state);
                }
                """);
        assertThat(errors).isEmpty();
        ProbeModule.Run run = PROBE.run(dir, 120, ENGINE_JVM_FLAGS);
        assertThat(run.output()).doesNotContain("NoClassDefFoundError").doesNotContain("WARNING").contains("OK");
        assertThat(run.exitStatus()).as(run.output()).isZero();
    }

    @Test
    void theControllerIsNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.core.internal.HiCacheController;",
            "HiCacheController c;")).contains("io.hicache.core.internal").contains("not visible");
    }

    @Test
    void theHostPoolAndAllocatorAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.core.internal.memory.HostKvPool;", "HostKvPool p;"))
            .contains("not visible");
        assertThat(PROBE.compile(dir, "import io.hicache.core.internal.memory.HostPageAllocator;",
            "HostPageAllocator a;"))
            .contains("not visible");
    }

    @Test
    void theMutableMetricsAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.core.internal.metrics.HiCacheMetrics;", "HiCacheMetrics m;"))
            .contains("not visible");
    }

    @Test
    void theTreePlugInInterfacesAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.radix.spi.HostValue;", "HostValue v;"))
            .contains("not visible");
    }

    @Test
    void theCudaBindingsLayoutsAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.cuda.ffi.CudartLibrary;", "CudartLibrary l;"))
            .contains("not visible");
    }
}
