package io.hicache.examples.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * This module is compiled on the class path (Jlama and its dependencies are not modules, and two of them split
 * {@code javax.annotation}), so javac would not stop it from naming the library's internals; this test does.
 */
class UsesOnlyTheApiTest {

    @Test
    void theAdapterImportsOnlyExportedPackages() throws IOException {
        Path main = Path.of("src/main/java");
        assertThat(main).isDirectory();
        List<String> offending;
        try (Stream<Path> files = Files.walk(main)) {
            offending = files.filter(f -> f.toString().endsWith(".java")).flatMap(f -> {
                try {
                    return Files.readAllLines(f).stream()
                        .filter(l -> l.contains("io.hicache.core.internal") || l.contains("io.hicache.cuda.ffi"))
                        .map(l -> f.getFileName() + ": " + l.strip());
                } catch (IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            }).toList();
        }
        assertThat(offending).isEmpty();
    }
}
