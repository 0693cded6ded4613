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
 * The module descriptor's exports: the engine API to everyone, the internal packages only to the project's modules
 * that build on them: the storage tier, through its port alone. The simulator, the Micrometer binder (it reads
 * {@link HiCache#metricsView()}) and the KV-event publisher (it sets {@link HiCache#tierListener}) use the API, as an
 * engine does, so no internal package is exported to them.
 */
class ModuleExportsTest {
    @Test
    void internalPackagesGoOnlyToStorageNeverToTheSimulatorTheMetersOrEvents() throws URISyntaxException {
        // tests run on the class path: read the descriptor where HiCache was loaded from (classes directory or jar)
        Path where = Path.of(HiCache.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor d = ModuleFinder.of(where).find("io.hicache.core").orElseThrow().descriptor();
        for (ModuleDescriptor.Exports e : d.exports()) {
            if (e.source().startsWith("io.hicache.core.internal")) {
                assertThat(e.isQualified()).as(e.source() + " is exported to everyone").isTrue();
                assertThat(e.targets()).as(e.source()).isSubsetOf(Set.of("io.hicache.storage"));
            } else {
                assertThat(e.isQualified()).as(e.source() + " is engine API").isFalse();
            }
        }
        // the storage tier attaches through its port (and shares the distinct-error log), never the controller
        assertThat(d.exports()).filteredOn(e -> e.targets().contains("io.hicache.storage"))
            .extracting(ModuleDescriptor.Exports::source)
            .containsExactlyInAnyOrder("io.hicache.core.internal.tier", "io.hicache.core.internal.log");
        assertThat(d.exports()).extracting(ModuleDescriptor.Exports::source)
            .contains("io.hicache.core", "io.hicache.core.cp", "io.hicache.core.memory", "io.hicache.core.metrics")
            .doesNotContain("io.hicache.core.internal.copy", "io.hicache.core.internal.jfr",
                "io.hicache.core.internal.metrics");
    }
}
