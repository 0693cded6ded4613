package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.DefaultEngineFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code --tier-weights}: the routers' weight of a cached page by the tier holding it. */
class TierWeightsCliTest {
    @TempDir
    Path work;

    private int run(ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        Main.Env env = new Main.Env(new DefaultEngineFactory(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, MainTest.repoRoot(), false);
        return Main.run(env, args);
    }

    /** The summary line without its wall-clock column. */
    private static String summaryWithoutWall(String out) {
        String header = out.lines().filter(l -> l.startsWith("configuration")).findFirst().orElseThrow();
        String line = out.lines().filter(l -> l.startsWith("layered")).findFirst().orElseThrow();
        int from = header.indexOf("commit_p99ms") + "commit_p99ms".length();
        int to = header.indexOf("wall_s") + "wall_s".length();
        return line.substring(0, from) + " -" + line.substring(to);
    }

    private String replay(String json, String... extra) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] args = Stream.concat(Stream.of("replay", "--limit", "300", "--instances", "3",
                "--device-capacity-tokens", "200k", "--host-capacity-tokens", "2M", "--json", json),
                Stream.of(extra)).toArray(String[]::new);
        assertThat(run(out, err, args)).as(err.toString(StandardCharsets.UTF_8)).isZero();
        return summaryWithoutWall(out.toString(StandardCharsets.UTF_8));
    }

    /**
     * Weighing a host-only page below a device page changes where requests go, the same way for the router that
     * reads the trees and the one that reads the KV events (complete and on time, they know the same tiers), and the
     * run's JSON echoes the weights.
     */
    @Test
    void bothRoutersWeighAHostPageBelowADevicePageAlikeAndTheJsonEchoesTheWeights() throws Exception {
        String unit = replay("u.json", "--router", "cache-aware");
        String tree = replay("t.json", "--router", "cache-aware", "--tier-weights", "device=1,host=0.25");
        String events = replay("e.json", "--router", "kv-events", "--tier-weights", "device=1,host=0.25,l3=0.1");
        assertThat(tree).as("a host page counted at 0.25 moves some requests").isNotEqualTo(unit);
        assertThat(events).as("the event index holds the tiers the trees do").isEqualTo(tree);
        ObjectMapper m = new ObjectMapper();
        JsonNode u = m.readTree(work.resolve("u.json").toFile()).get("tier_weights");
        assertThat(u.get("device").asDouble()).isEqualTo(1);
        assertThat(u.get("host").asDouble()).isEqualTo(1);
        assertThat(u.get("l3").asDouble()).isEqualTo(1);
        JsonNode e = m.readTree(work.resolve("e.json").toFile()).get("tier_weights");
        assertThat(e.get("device").asDouble()).isEqualTo(1);
        assertThat(e.get("host").asDouble()).isEqualTo(0.25);
        assertThat(e.get("l3").asDouble()).isEqualTo(0.1);
    }

    @Test
    void aBadWeightOrTierIsOneLineAndExitTwo() {
        for (String[] bad : new String[][] {{"device=1,host=1.5", "the weight of host must be in [0, 1], got 1.5"},
            {"device=1,tape=0.5", "unknown tier 'tape'; valid tiers: device, host, l3"},
            {"host", "expected tier=weight, got 'host'"}}) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertThat(run(out, err, "replay", "--limit", "10", "--tier-weights", bad[0])).isEqualTo(2);
            String e = err.toString(StandardCharsets.UTF_8);
            assertThat(e).contains("--tier-weights: " + bad[1]);
            assertThat(e.lines().filter(l -> l.contains("tier-weights")).count()).isEqualTo(1);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertThat(run(out, err, "replay", "--help")).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("--tier-weights");
    }
}
