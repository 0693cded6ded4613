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
