package io.hicache.example;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The module boundary as an engine sees it: a small engine module compiled on the module path against the
 * library's modules compiles when it uses the exported API, and javac refuses it when it names an internal
 * (the controller, the host pool, the mutable metrics, the tree's plug-in interfaces).
 */
class ApiBoundaryTest {
    /** The library modules and their dependencies, taken from this test's class path. */
    private static String modulePath() {
        List<String> keep = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace('\\', '/');
            if (n.contains("/cuda-bindings/") || n.contains("/radix/") || n.contains("/hicache-core/")
                || n.contains("/cuda-bindings-") || n.contains("/radix-") || n.contains("/hicache-core-")
                || n.contains("/agrona-") || n.contains("/disruptor-") || n.contains("/jctools-core-")
                || n.contains("/slf4j-api-")) {
                keep.add(e);
            }
        }
        return String.join(File.pathSeparator, keep);
    }

    private static String compile(Path dir, String imports, String body) throws IOException {
        Path src = dir.resolve("src");
        Files.createDirectories(src.resolve("probe"));
        Files.writeString(src.resolve("module-info.java"), "module probe { requires io.hicache.core; }\n");
        Files.writeString(src.resolve("probe/Engine.java"),
            "package probe;\n" + imports + "\npublic class Engine {\n" + body + "\n}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = javac.run(null, null, err, "-d", dir.resolve("out").toString(), "--module-path", modulePath(),
            src.resolve("module-info.java").toString(), src.resolve("probe/Engine.java").toString());
        String out = err.toString(StandardCharsets.UTF_8);
        return rc == 0 ? "" : out.isEmpty() ? "javac failed" : out;
    }

    @Test
    void engineCodeUsingTheFacadeCompiles(@TempDir Path dir) throws IOException {
        String errors = compile(dir, """
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
        assertThat(compile(dir, "import io.hicache.core.internal.HiCacheController;",
            "HiCacheController c;")).contains("io.hicache.core.internal").contains("not visible");
    }

    @Test
    void theHostPoolAndAllocatorAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.core.internal.memory.HostKvPool;", "HostKvPool p;"))
            .contains("not visible");
        assertThat(compile(dir, "import io.hicache.core.internal.memory.HostPageAllocator;", "HostPageAllocator a;"))
            .contains("not visible");
    }

    @Test
    void theMutableMetricsAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.core.internal.metrics.HiCacheMetrics;", "HiCacheMetrics m;"))
            .contains("not visible");
    }

    @Test
    void theTreePlugInInterfacesAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.radix.spi.HostValue;", "HostValue v;"))
            .contains("not visible");
    }

    @Test
    void theCudaBindingsLayoutsAreNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.cuda.ffi.CudartLibrary;", "CudartLibrary l;"))
            .contains("not visible");
    }
}
