package io.hicache.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReportSectionTest {
    @TempDir
    Path dir;

    @Test
    void rewritesOnlyItsOwnSectionAndKeepsHandWrittenOnes() throws IOException {
        Path f = dir.resolve("PERFORMANCE.md");
        Files.writeString(f, "# Title\n<!-- bench-run begin -->\nold table\n<!-- bench-run end -->\n\n## Hand-added\n"
            + "notes\n<!-- sim-bench begin -->\nold sim\n<!-- sim-bench end -->\n## More hand-added\n");
        ReportSection.write(f, "bench-run", "new table\n");
        ReportSection.write(f, "sim-bench", "new sim");
        assertThat(Files.readString(f)).isEqualTo("# Title\n<!-- bench-run begin -->\nnew table\n<!-- bench-run end -->"
            + "\n\n## Hand-added\nnotes\n<!-- sim-bench begin -->\nnew sim\n<!-- sim-bench end -->\n## More hand-added\n");
    }

    @Test
    void appendsASectionTheFileLacksAndCreatesAMissingFile() throws IOException {
        Path f = dir.resolve("new.md");
        ReportSection.write(f, "bench-run", "table\n");
        assertThat(Files.readString(f)).isEqualTo("<!-- bench-run begin -->\ntable\n<!-- bench-run end -->\n");
        ReportSection.write(f, "sim-bench", "sim\n");
        assertThat(Files.readString(f)).endsWith("<!-- bench-run end -->\n\n<!-- sim-bench begin -->\nsim\n"
            + "<!-- sim-bench end -->\n");
    }

    @Test
    void refusesAFileWithOneMarkerOnly() throws IOException {
        Path f = dir.resolve("broken.md");
        Files.writeString(f, "<!-- bench-run begin -->\nno end\n## Hand-added\n");
        assertThatThrownBy(() -> ReportSection.write(f, "bench-run", "x")).isInstanceOf(IOException.class)
            .hasMessageContaining("only one of its markers");
        assertThat(Files.readString(f)).contains("## Hand-added");
    }
}
