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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code replay --kv-events} publishes a run's KV events; {@code kv-events} collects and reports them. */
class KvEventsCliTest {
    private static final Pattern PUBLISHED = Pattern.compile(
            "kv-events: (\\d+) batches \\((\\d+) events, (\\d+) blocks, (\\d+) dropped\\) on (\\S+), replay on (\\S+);");

    @TempDir
    Path work;

    private static int run(Path work, ByteArrayOutputStream out, ByteArrayOutputStream err, String... args) {
        Main.Env env = new Main.Env(new DefaultEngineFactory(), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, MainTest.repoRoot(), false);
        return Main.run(env, args);
    }

    @Test
    void aLateSubscriberReplaysTheWholeRunContiguously() throws Exception {
        Collected c = publishAndCollect("--limit", "40", "--device-capacity-tokens", "60000",
                "--host-capacity-tokens", "120000", "--skip-oversized"); // prompts over 60k are skipped
        JsonNode j = c.json;
        assertThat(j.get("batches").asLong()).isEqualTo(c.batches);
        assertThat(j.get("last_sequence").asLong()).isEqualTo(c.batches - 1);
        assertThat(j.get("contiguous").asBoolean()).isTrue();
        assertThat(j.get("parents_ok").asBoolean()).isTrue();
        assertThat(j.get("removed_unknown").asLong()).isZero();
        assertThat(j.get("stored").get("GPU").asLong()).isPositive();
        assertThat(j.get("stored").get("CPU").asLong()).isPositive();
        assertThat(j.get("removed").get("GPU").asLong()).isPositive();
    }

    /**
     * A CP group writing back to L3 on a multi-turn workload: each rank writes its own lanes, and the stream names
     * every block evicted from the host on L3, each after its parent (before, only the speaker's lanes; then, with
     * all lanes, a child's write-back that finished after its parent left the host was an orphan).
     */
    @Test
    void aCpGroupsWriteBackIsAnnouncedWholeOnL3AndParentFirst() throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertThat(run(work, out, err, "gen-multiturn", "--out", "mt.jsonl", "--clients", "64", "--rounds", "6",
                "--request-tokens", "300", "--rate", "8", "--seed", "3")).as(err.toString(StandardCharsets.UTF_8))
                .isZero();
        Collected c = publishAndCollect("--trace", work.resolve("mt.jsonl").toString(), "--cp", "2",
                "--device-capacity-tokens", "30k", "--host-capacity-tokens", "60k", "--storage-capacity-tokens", "1M",
                "--storage-write-policy", "write-back");
        JsonNode j = c.json;
        assertThat(j.get("contiguous").asBoolean()).isTrue();
        assertThat(j.get("stored").get("DISK").asLong()).isPositive();
        // a block written back while its parent is still on the host waits for the parent's write-back (a router
        // following llm-d's rule would drop it), so at most every block evicted from the host is announced on L3
        assertThat(j.get("stored").get("DISK").asLong()).as("blocks written back and announced")
                .isLessThanOrEqualTo(j.get("removed").get("CPU").asLong());
        assertThat(j.get("orphans").asLong()).isZero();
        assertThat(j.get("parents_ok").asBoolean()).isTrue();
        assertPerMediumParents(j);
    }

    /**
     * llm-d's rule over replays with host and L3 tiers, write-through, CP 1 and 2: every stored block's parent was
     * already stored on the block's own medium (before, a request's new pages came on GPU a batch before the
     * load-back of the prefix they extend, and a write-through of a child node on L3 before its parent's).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "cp {0}")
    @org.junit.jupiter.params.provider.ValueSource(ints = {1, 2})
    void everyStoredBlocksParentIsOnItsOwnMediumWithHostAndL3(int cp) throws Exception {
        Collected c = publishAndCollect("--limit", "150", "--cp", Integer.toString(cp),
                "--device-capacity-tokens", "300000", "--host-capacity-tokens", "600000",
                "--storage-capacity-tokens", "4M");
        JsonNode j = c.json;
        assertThat(j.get("contiguous").asBoolean()).isTrue();
        assertThat(j.get("stored").get("DISK").asLong()).isPositive();
        assertThat(j.get("stored").get("CPU").asLong()).isPositive();
        assertPerMediumParents(j);
        assertThat(j.get("removed_unknown").asLong()).isZero();
    }

    private static void assertPerMediumParents(JsonNode j) {
        JsonNode per = j.get("parents_ok_per_medium");
        assertThat(per).as("parents_ok_per_medium").isNotNull();
        assertThat(per.size()).isGreaterThanOrEqualTo(3);
        per.properties().forEach(e -> assertThat(e.getValue().asBoolean())
                .as("parents first on %s (orphans %s)", e.getKey(), j.get("orphans_per_medium")).isTrue());
    }

    private record Collected(long batches, JsonNode json) {
    }

    /** Runs {@code replay} with {@code args} publishing with a replay endpoint, and collects it with {@code kv-events}. */
    private Collected publishAndCollect(String... args) throws Exception {
        ByteArrayOutputStream pubOut = new ByteArrayOutputStream();
        ByteArrayOutputStream pubErr = new ByteArrayOutputStream();
        String[] replayArgs = java.util.stream.Stream.concat(java.util.stream.Stream.of("replay"),
                java.util.stream.Stream.concat(java.util.Arrays.stream(args), java.util.stream.Stream.of(
                        "--kv-events", "tcp://127.0.0.1:*", "--kv-events-replay", "tcp://127.0.0.1:*",
                        "--kv-events-linger", "15"))).toArray(String[]::new);
        CompletableFuture<Integer> replay = CompletableFuture.supplyAsync(() -> run(work, pubOut, pubErr, replayArgs));
        Matcher m;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
        while (!(m = PUBLISHED.matcher(pubErr.toString(StandardCharsets.UTF_8))).find()) {
            assertThat(replay).as(pubErr.toString(StandardCharsets.UTF_8)).isNotDone();
            assertThat(System.nanoTime()).as("the run did not publish in time").isLessThan(deadline);
            LockSupport.parkNanos(20_000_000);
        }
        long batches = Long.parseLong(m.group(1));
        assertThat(Long.parseLong(m.group(4))).as("dropped").isZero();

        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int rc = run(work, out, err, "kv-events", "--connect", m.group(5), "--replay", m.group(6),
                "--idle-s", "0.5", "--json", "e.json");
        assertThat(rc).as(err.toString(StandardCharsets.UTF_8)).isZero();
        assertThat(replay.get(60, TimeUnit.SECONDS)).as(pubErr.toString(StandardCharsets.UTF_8)).isZero();
        return new Collected(batches, new ObjectMapper().readTree(work.resolve("e.json").toFile()));
    }

    /** The summary line without its wall-clock column. */
    private static String summaryWithoutWall(String out) {
        String header = out.lines().filter(l -> l.startsWith("configuration")).findFirst().orElseThrow();
        String line = out.lines().filter(l -> l.startsWith("layered")).findFirst().orElseThrow();
        int from = header.indexOf("commit_p99ms") + "commit_p99ms".length();
        int to = header.indexOf("wall_s") + "wall_s".length();
        return line.substring(0, from) + " -" + line.substring(to);
    }

    @Test
    void theEventRouterWithoutLagRoutesExactlyAsTheTreeReadingRouterAndALagChangesDecisions() {
        String[] common = {"replay", "--limit", "300", "--instances", "3"};
        String[] results = new String[3];
        String[][] routers = {{"--router", "cache-aware"}, {"--router", "kv-events"},
            {"--router", "kv-events", "--kv-events-lag-ms", "60000"}};
        for (int i = 0; i < routers.length; i++) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(common),
                    java.util.Arrays.stream(routers[i])).toArray(String[]::new);
            assertThat(run(work, out, err, args)).as(err.toString(StandardCharsets.UTF_8)).isZero();
            results[i] = summaryWithoutWall(out.toString(StandardCharsets.UTF_8));
        }
        // complete, consistent events carry exactly what the tree holds
        assertThat(results[1]).isEqualTo(results[0]);
        // a minute late, the index misses recent prefixes and some requests go elsewhere
        assertThat(results[2]).isNotEqualTo(results[0]);
    }

    @Test
    void badKvEventOptionsAreOneLineNamingTheFlag() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        assertThat(run(work, out, err, "replay", "--limit", "1", "--kv-events-replay", "tcp://127.0.0.1:*"))
                .isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--kv-events-replay and --kv-events-linger need --kv-events");
        err.reset();
        assertThat(run(work, out, err, "replay", "--limit", "1", "--kv-events", "nonsense")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("cannot bind KV events endpoint nonsense");
        err.reset();
        assertThat(run(work, out, err, "replay", "--limit", "1", "--kv-events-lag-ms", "-1")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--kv-events-lag-ms must be a finite number >= 0");
        err.reset();
        assertThat(run(work, out, err, "kv-events", "--connect", "tcp://127.0.0.1:1", "--idle-s", "0")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--idle-s and --max-s must be > 0");
        err.reset();
        // refused before it subscribes (before, after --max-s of listening, as an I/O error)
        assertThat(run(work, out, err, "kv-events", "--connect", "tcp://127.0.0.1:1", "--max-s", "600", "--json",
                "no-such-dir/e.json")).isEqualTo(2);
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("cannot write no-such-dir/e.json: directory");
    }
}
