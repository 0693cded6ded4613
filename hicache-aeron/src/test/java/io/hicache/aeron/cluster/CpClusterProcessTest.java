package io.hicache.aeron.cluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Three rank JVMs over Aeron IPC with a media driver embedded in this JVM; one is killed ({@code destroyForcibly})
 * part-way. The survivors declare it failed, abort what was in flight with RANK_FAILED, commit identically, finish
 * their steps and exit 0, all within a bound.
 */
class CpClusterProcessTest {

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void survivorsOfAKilledRankProcessAbortConsistentlyAndExit() throws Exception {
        String testClassPath = System.getProperty("surefire.test.class.path");
        if (testClassPath != null) {
            System.setProperty("hicache.cluster.classpath", testClassPath);
        }
        ByteArrayOutputStream log = new ByteArrayOutputStream();
        CpCluster.Options o = new CpCluster.Options(3, 4, 1, 1.5, -1, -1, -1, 7, 500, 5_000);
        long t0 = System.nanoTime();
        CpCluster.Result r = CpCluster.run(o, new PrintStream(log, true, StandardCharsets.UTF_8));
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - t0);
        String why = r.json() + "\n" + log.toString(StandardCharsets.UTF_8);
        assertThat(r.exitStatus()).as(why).isZero();
        assertThat(r.survivors()).as(why).isEqualTo(List.of(0, 2));
        assertThat(r.identicalCommits()).as(why).isTrue();
        assertThat(r.abortedRankFailed()).as(why).isPositive();
        assertThat(r.json()).contains("\"failed_ranks\":[1]", "\"exit_reason\":\"rank_failed\"");
        assertThat(seconds).as("bounded run").isLessThan(60);
    }

    @Test
    void badFlagsAreRefusedWithTheirValidRange() {
        assertThatThrownBy(() -> CpCluster.parse(new String[] {"1"}))
            .hasMessage("N 1 must be an integer in [2, 16]");
        assertThatThrownBy(() -> CpCluster.parse(new String[] {"4", "--kill", "4", "--after", "1"}))
            .hasMessage("--kill 4 must be an integer in [0, 3]");
        assertThatThrownBy(() -> CpCluster.parse(new String[] {"4", "--kill", "1"}))
            .hasMessageContaining("--kill needs --after");
        assertThatThrownBy(() -> CpCluster.parse(new String[] {"4", "--seconds", "5", "--kill", "1", "--after", "6"}))
            .hasMessageContaining("--after 6.0 must be below --seconds 5.0");
        assertThatThrownBy(() -> CpCluster.parse(new String[] {"4", "--seed", "x"}))
            .hasMessage("--seed x must be an integer");
    }
}
