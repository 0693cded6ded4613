package io.hicache.testkit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ProbeModuleTest {
    private static final ProbeModule CORE = ProbeModule.requiring("io.hicache.core", "cuda-bindings", "radix",
        "hicache-core", "agrona", "disruptor", "jctools-core", "slf4j-api");

    @Test
    void aProbeUsingTheExportedApiCompilesAndOneNamingAnInternalIsRefused(@TempDir Path dir) throws IOException {
        assertThat(CORE.modulePath()).contains("hicache-core").doesNotContain("test-classes")
            .doesNotContain("hicache-testkit");
        assertThat(CORE.compile(dir.resolve("ok"), "import io.hicache.core.HiCache;",
            "static HiCache.Builder b() { return HiCache.builder(); }")).isEmpty();
        assertThat(CORE.compile(dir.resolve("bad"), "import io.hicache.core.internal.HiCacheController;",
            "HiCacheController c;")).contains("io.hicache.core.internal").contains("not visible");
    }

    @Test
    void aProbeWithoutArtifactsIsRefused() {
        assertThatThrownBy(() -> ProbeModule.requiring("io.hicache.core"))
            .isInstanceOf(IllegalArgumentException.class);
    }
}
