package io.hicache.core.internal;

import io.hicache.core.HiCache;
import org.junit.jupiter.api.Test;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The module descriptor's exports: the engine API to everyone, no internal package to anyone, and the storage SPI
 * only to the storage tier, which attaches through it. The simulator, the Micrometer binder (it reads
 * {@link HiCache#metricsView()}) and the KV-event publisher (it sets {@link HiCache#tierListener}) use the API, as an
 * engine does, so no internal package is exported to them.
 */
class ModuleExportsTest {
    @Test
    void noInternalPackageIsExportedAndTheStorageSpiGoesOnlyToStorage() throws URISyntaxException {
        // tests run on the class path: read the descriptor where HiCache was loaded from (classes directory or jar)
        Path where = Path.of(HiCache.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor d = ModuleFinder.of(where).find("io.hicache.core").orElseThrow().descriptor();
        for (ModuleDescriptor.Exports e : d.exports()) {
            assertThat(e.source()).as("an internal package is exported").doesNotStartWith("io.hicache.core.internal");
            if (e.source().equals("io.hicache.core.spi")) {
                assertThat(e.isQualified()).as(e.source() + " is exported to everyone").isTrue();
                assertThat(e.targets()).as(e.source()).isEqualTo(Set.of("io.hicache.storage"));
            } else {
                assertThat(e.isQualified()).as(e.source() + " is engine API").isFalse();
            }
        }
        // the storage tier attaches through the storage SPI, never the controller or the tree
        assertThat(d.exports()).filteredOn(e -> e.targets().contains("io.hicache.storage"))
            .extracting(ModuleDescriptor.Exports::source)
            .containsExactly("io.hicache.core.spi");
        assertThat(d.exports()).extracting(ModuleDescriptor.Exports::source)
            .contains("io.hicache.core", "io.hicache.core.cp", "io.hicache.core.memory", "io.hicache.core.metrics")
            .doesNotContain("io.hicache.core.internal.copy", "io.hicache.core.internal.jfr",
                "io.hicache.core.internal.metrics");
    }
}
