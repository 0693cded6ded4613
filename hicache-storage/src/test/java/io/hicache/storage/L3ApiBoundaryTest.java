package io.hicache.storage;

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
 * The L3 tier as an engine module sees it: engine code compiled on the module path with {@code requires
 * io.hicache.storage} attaches and uses the tier through the exported API, and javac refuses it when it names the
 * tier's internals or the controller behind the facade.
 */
class L3ApiBoundaryTest {
    private static final String[] MODULES = {"/cuda-bindings/", "/radix/", "/hicache-core/", "/hicache-storage/",
        "/cuda-bindings-", "/radix-", "/hicache-core-", "/hicache-storage-", "/agrona-", "/disruptor-",
        "/jctools-core-", "/slf4j-api-", "/jedis-", "/commons-pool2-"};

    /** The library modules and their dependencies, from this test's class path (main classes, not tests). */
    private static String modulePath() {
        List<String> keep = new ArrayList<>();
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace('\\', '/');
            if (n.endsWith("/test-classes") || n.endsWith("/test-classes/")) {
                continue;
            }
            for (String m : MODULES) {
                if (n.contains(m)) {
                    keep.add(e);
                    break;
                }
            }
        }
        return String.join(File.pathSeparator, keep);
    }

    private static String compile(Path dir, String imports, String body) throws IOException {
        Path src = dir.resolve("src");
        Files.createDirectories(src.resolve("probe"));
        Files.writeString(src.resolve("module-info.java"), "module probe { requires io.hicache.storage; }\n");
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
    void engineCodeAttachingTheTierCompiles(@TempDir Path dir) throws IOException {
        String errors = compile(dir, """
                import io.hicache.core.HiCache;
                import io.hicache.radix.MatchResult;
                import io.hicache.storage.*;
                """, """
                static long run(HiCache cache, int[] tokens) {
                    try (PageStore store = PageStores.open("file:/tmp/l3", StoreConfig.defaults())) {
                        KeyNamespace ns = KeyNamespace.builder().modelId("m").kvDtype("bfloat16")
                                .pageSizeTokens(cache.tree().pageSize()).hostLayout(cache.hostPool().layout()).build();
                        L3Tier l3 = L3Tier.attach(cache, store, ns, StorageTierConfig.DEFAULT
                                .withWritePolicy(StorageWritePolicy.WRITE_BACK).withPrefetchPolicy(PrefetchPolicy.TIMEOUT));
                        MatchResult m = cache.match(tokens, 0, tokens.length, new MatchResult());
                        L3Prefetch p = l3.prefetch(tokens, 0, tokens.length, m, 1);
                        if (p != null && p.mayRun()) {
                            p.consume();
                        }
                        cache.poll();
                        StorageTierMetrics metrics = l3.metrics();
                        cache.close();
                        return metrics.get(StorageMetric.PREFETCH_PAGES_PUBLISHED);
                    }
                }
                """);
        assertThat(errors).isEmpty();
    }

    @Test
    void theTierOnTheControllerIsNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.storage.tier.StorageTier;", "StorageTier t;"))
            .contains("io.hicache.storage.tier").contains("not visible");
    }

    @Test
    void theControllerBehindTheFacadeIsNotVisible(@TempDir Path dir) throws IOException {
        assertThat(compile(dir, "import io.hicache.core.internal.FacadeAccess;", "FacadeAccess a;"))
            .contains("io.hicache.core.internal").contains("not visible");
        assertThat(compile(dir, "import io.hicache.core.internal.TierAttachment;", "TierAttachment a;"))
            .contains("not visible");
    }
}
