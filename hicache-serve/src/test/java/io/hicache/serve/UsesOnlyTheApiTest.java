package io.hicache.serve;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The engine is on the class path (Jlama is not modular), so javac would not stop it from naming the library's
 * internals; this test does: it uses HiCache only through its exported packages, as any engine must.
 */
class UsesOnlyTheApiTest {

    @Test
    void theEngineImportsOnlyExportedPackages() throws IOException {
        Path main = Path.of("src/main/java");
        assertThat(main).isDirectory();
        List<String> offending;
        try (Stream<Path> files = Files.walk(main)) {
            offending = files.filter(f -> f.toString().endsWith(".java")).flatMap(f -> {
                try {
                    return Files.readAllLines(f).stream()
                        .filter(l -> l.contains("io.hicache.core.internal") || l.contains("io.hicache.cuda.ffi")
                            || l.contains("io.hicache.radix.spi") || l.contains("io.hicache.storage.tier")
                            || l.contains("io.hicache.storage.internal"))
                        .map(l -> f.getFileName() + ": " + l.strip());
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).toList();
        }
        assertThat(offending).isEmpty();
    }
}
