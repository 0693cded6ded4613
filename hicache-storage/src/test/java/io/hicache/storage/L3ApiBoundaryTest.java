package io.hicache.storage;

import io.hicache.testkit.ProbeModule;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The L3 tier as an engine module sees it: engine code compiled on the module path with {@code requires
 * io.hicache.storage} attaches and uses the tier through the exported API, and javac refuses it when it names the
 * tier's internals or the controller behind the facade.
 */
class L3ApiBoundaryTest {
    /** An engine module requiring the storage tier, compiled against the library modules and their dependencies. */
    private static final ProbeModule PROBE = ProbeModule.requiring("io.hicache.storage", "cuda-bindings", "radix",
        "hicache-core", "hicache-storage", "agrona", "disruptor", "jctools-core", "slf4j-api", "jedis",
        "commons-pool2");

    @Test
    void engineCodeAttachingTheTierCompiles(@TempDir Path dir) throws IOException {
        String errors = PROBE.compile(dir, """
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
        assertThat(PROBE.compile(dir, "import io.hicache.storage.tier.StorageTier;", "StorageTier t;"))
            .contains("io.hicache.storage.tier").contains("not visible");
    }

    @Test
    void theControllerBehindTheFacadeIsNotVisible(@TempDir Path dir) throws IOException {
        assertThat(PROBE.compile(dir, "import io.hicache.core.internal.HiCacheController;", "HiCacheController c;"))
            .contains("io.hicache.core.internal").contains("not visible");
        // the storage SPI is the storage module's, not an engine's
        assertThat(PROBE.compile(dir, "import io.hicache.core.spi.StoragePort;", "StoragePort p;"))
            .contains("io.hicache.core.spi").contains("not visible");
    }
}
