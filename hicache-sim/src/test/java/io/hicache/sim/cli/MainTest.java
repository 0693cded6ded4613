package io.hicache.sim.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.CacheOnlyEngine;
import io.hicache.sim.DefaultEngineFactory;
import io.hicache.sim.EngineFactory;
import io.hicache.sim.HitStats;
import io.hicache.sim.SimConfig;
import io.hicache.sim.SimulationEngine;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.report.TimelineSegment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class MainTest {

    @TempDir
    Path work;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    private final List<SimConfig> ran = new ArrayList<>();

    static Path repoRoot() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath();
    }

    /** Records every configuration; cache-only runs really run, timed ones return a canned result with a timeline. */
    private final EngineFactory recording = config -> (SimulationEngine) (c, trace, progress) -> {
        ran.add(c);
        if (c.cacheOnly()) {
            return new CacheOnlyEngine().run(c, trace, progress);
        }
        HitStats none = new HitStats(c.blockTokens());
        return SimResult.ofHits(c, trace.name(), none, 0.01).withTimeline(List.of(
                new TimelineSegment("compute", 0, 100, "L0"), new TimelineSegment("d2h copy", 100, 150, "L0")));
    };

    private int run(EngineFactory engines, String... args) {
        Main.Env env = new Main.Env(engines, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8), work, repoRoot(), false);
        return Main.run(env, args);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void acceptanceReplayUnlimitedHostWritesTheReferenceRatio() throws IOException {
        int rc = run(new DefaultEngineFactory(), "replay", "--cache-only", "--block-tokens", "1",
                "--host-capacity-tokens", "inf", "--json", "r.json");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("r.json").toFile());
        assertThat(n.isObject()).isTrue();
        assertThat(String.format("%.4f", n.get("block_hit_ratio").asDouble())).isEqualTo("0.3664");
        assertThat(n.get("host_capacity_tokens").asText()).isEqualTo("inf");
        assertThat(n.get("block_tokens").asInt()).isEqualTo(1);
        assertThat(n.get("page_size").asInt()).isEqualTo(1);
        assertThat(n.get("trace").asText()).isEqualTo("traces/conversation_trace.jsonl");
    }

    @Test
    void acceptanceReplayDeviceOnlyLruNearTheReference() throws IOException {
        int rc = run(new DefaultEngineFactory(), "replay", "--cache-only", "--block-tokens", "1",
                "--device-capacity-tokens", "5859", "--host-capacity-tokens", "0", "--eviction", "lru",
                "--json", "r.json");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("r.json").toFile());
        assertThat(n.get("block_hit_ratio").asDouble()).isBetween(0.1255, 0.1455);
        assertThat(n.get("host_capacity_tokens").asLong()).isZero();
    }

    @Test
    void jfrRecordsTheRunsHiCacheEvents() throws IOException {
        int rc = run(new DefaultEngineFactory(), "replay", "--limit", "40", "--jfr", "r.jfr");
        assertThat(rc).as(err()).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("wrote " + work.resolve("r.jfr"));
        java.util.Map<String, Long> counts = new java.util.TreeMap<>();
        for (jdk.jfr.consumer.RecordedEvent e : jdk.jfr.consumer.RecordingFile.readAllEvents(work.resolve("r.jfr"))) {
            counts.merge(e.getEventType().getName(), 1L, Long::sum);
        }
        assertThat(counts).containsKeys("io.hicache.BackupCommitted", "io.hicache.AgreementRound");
        assertThat(counts.keySet().stream().filter(n -> n.startsWith("io.hicache."))).hasSizeGreaterThanOrEqualTo(2);
    }

    /**
     * The jar run directly (no launcher, so no repository-root property) finds the bundled trace beside the checkout
     * it was built in, from any directory; before, the default trace resolved against the working directory.
     */
    @Test
    void theJarRunFromAnotherDirectoryFindsTheCheckoutItWasBuiltIn() {
        Path root = repoRoot().normalize();
        assertThat(Main.checkoutOf(root.resolve("hicache-sim/target/hicache-sim-all.jar"))).isEqualTo(root);
        assertThat(Main.checkoutOf(root.resolve("hicache-sim/target/classes"))).isEqualTo(root);
        assertThat(Main.checkoutOf(work.resolve("lib/hicache-sim-all.jar"))).as("a jar copied elsewhere").isNull();
        assertThat(Main.checkoutOf(null)).isNull();
    }

    @Test
    void versionComesFromTheBuild() {
        assertThat(run(recording, "--version")).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8).strip()).matches("hicache-sim \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?");
    }

    @Test
    void jfrIntoAMissingDirectoryIsAUsageError() {
        int rc = run(recording, "replay", "--limit", "5", "--jfr", "no/such/dir/r.jfr");
        assertThat(rc).isEqualTo(2);
        assertThat(err()).contains("cannot write no/such/dir/r.jfr");
        assertThat(ran).isEmpty();
    }

    @Test
    void compareWritesAnArrayOfThreeModesAndAReport() throws IOException {
        int rc = run(recording, "compare", "--limit", "50", "--json", "c.json", "--html", "c.html");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("c.json").toFile());
        assertThat(n.isArray()).isTrue();
        assertThat(n).hasSize(3);
        assertThat(n.get(0).get("backup_mode").asText()).isEqualTo("layered");
        assertThat(n.get(1).get("backup_mode").asText()).isEqualTo("all-layers");
        assertThat(n.get(2).get("backup_mode").asText()).isEqualTo("none");
        String html = Files.readString(work.resolve("c.html"));
        assertThat(html).contains("unlimited cache (bound)", "d2h copy").doesNotContain("http:");
    }

    @Test
    void sweepRunsOnePointPerHostCapacity() throws IOException {
        int rc = run(recording, "sweep", "--cache-only", "--limit", "200", "--host-capacity-tokens", "0,1M,inf",
                "--json", "s.json", "--html", "s.html");
        assertThat(rc).as(err()).isZero();
        assertThat(ran).extracting(SimConfig::hostCapacityTokens).containsExactly(0L, 1_000_000L, Long.MAX_VALUE);
        JsonNode n = new ObjectMapper().readTree(work.resolve("s.json").toFile());
        assertThat(n).hasSize(3);
        assertThat(n.get(2).get("host_capacity_tokens").asText()).isEqualTo("inf");
        assertThat(Files.readString(work.resolve("s.html"))).contains("Hit ratio vs host capacity");
    }

    @Test
    void sweepOverDeviceCapacitiesCrossesDevicePressureWithBothBackupModes() {
        int rc = run(recording, "sweep", "--cache-only", "--limit", "50", "--device-capacity-tokens", "300k,60k",
                "--host-capacity-tokens", "4M", "--skip-oversized"); // the bundled trace has prompts over 60k
        assertThat(rc).as(err()).isZero();
        assertThat(ran).extracting(SimConfig::deviceCapacityTokens).containsExactly(300_000L, 300_000L, 60_000L, 60_000L);
        assertThat(ran).extracting(SimConfig::backupMode).containsExactly(io.hicache.sim.BackupMode.LAYERED,
                io.hicache.sim.BackupMode.ALL_LAYERS, io.hicache.sim.BackupMode.LAYERED,
                io.hicache.sim.BackupMode.ALL_LAYERS);
        assertThat(ran).extracting(SimConfig::hostCapacityTokens).containsOnly(4_000_000L);
    }

    @Test
    void sweepVariesOneAxisAndReplayTakesOneDeviceCapacity() {
        assertThat(run(recording, "sweep", "--limit", "5", "--device-capacity-tokens", "300k,60k",
                "--host-capacity-tokens", "1M,2M")).isEqualTo(2);
        assertThat(err()).contains("sweep varies one axis");
        assertThat(run(recording, "replay", "--limit", "5", "--device-capacity-tokens", "300k,60k")).isEqualTo(2);
        assertThat(err()).contains("--device-capacity-tokens takes one value here");
        assertThat(ran).isEmpty();
    }

    @Test
    void hostLinkOptionsReachTheServingConfigAndBadValuesAreUsageErrors() {
        List<io.hicache.sim.ServingConfig> servings = new ArrayList<>();
        EngineFactory capture = new EngineFactory() {
            @Override
            public SimulationEngine create(SimConfig c) {
                return recording.create(c);
            }

            @Override
            public SimulationEngine create(SimConfig c, io.hicache.sim.ServingConfig s) {
                servings.add(s);
                return recording.create(c);
            }
        };
        assertThat(run(capture, "replay", "--limit", "5", "--host-bandwidth-gbps", "20", "--copy-engines", "shared"))
                .as(err()).isZero();
        assertThat(servings).singleElement().satisfies(s -> {
            assertThat(s.hostBandwidthGbps()).isEqualTo(20.0);
            assertThat(s.sharedCopyEngine()).isTrue();
            // 4 GPUs share 20 GB/s: 5 GB/s each, below a 50 GB/s link; a 2 GB/s link stays the limit
            assertThat(s.hostLinkBytesPerSecond(50e9, 4)).isEqualTo(5e9);
            assertThat(s.hostLinkBytesPerSecond(2e9, 4)).isEqualTo(2e9);
        });
        assertThat(run(recording, "replay", "--limit", "5", "--copy-engines", "one")).isEqualTo(2);
        assertThat(err()).contains("--copy-engines must be separate or shared");
        assertThat(run(recording, "replay", "--limit", "5", "--host-bandwidth-gbps", "-1")).isEqualTo(2);
        assertThat(err()).contains("--host-bandwidth-gbps must be a finite number >= 0");
    }

    @Test
    void noArgumentsComparesOnTheBundledTraceAndWritesReportHtml() {
        List<io.hicache.sim.ServingConfig> servings = new ArrayList<>();
        EngineFactory both = new EngineFactory() {
            @Override
            public SimulationEngine create(SimConfig config) {
                return recording.create(config);
            }

            @Override
            public SimulationEngine create(SimConfig config, io.hicache.sim.ServingConfig serving) {
                servings.add(serving);
                return recording.create(config);
            }
        };
        int rc = run(both);
        assertThat(servings).extracting(io.hicache.sim.ServingConfig::instances).containsOnly(Main.DEFAULT_FLEET);
        assertThat(rc).as(err()).isZero();
        assertThat(work.resolve("report.html")).exists();
        // layered, all-layers, none, and the knee probe: layered with an unlimited host tier
        assertThat(ran).hasSize(4);
        assertThat(ran.getFirst().model().cliName()).isEqualTo("llama3-70b");
        assertThat(ran.getLast().hostUnlimited()).isTrue();
        assertThat(ran.getLast().backupMode()).isEqualTo(io.hicache.sim.BackupMode.LAYERED);
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', textBlock = """
            unknown model           | replay --model gpt-5                                         | valid models: llama3-70b, llama3-8b, deepseek-v3
            unknown gpu             | replay --gpu a100                                            | valid gpus: h100-sxm, h100-pcie, h200-sxm, gh200
            mistyped gpu            | replay --gpu h100-pcei                                       | unknown gpu 'h100-pcei' (did you mean 'h100-pcie'?)
            unknown eviction        | replay --eviction random                                     | valid values: lru, lfu, fifo, mru, filo, slru
            unknown load overlap    | replay --load-overlap eager                                  | unknown load-overlap 'eager'; valid values: same-forward, previous-batch
            unknown option          | replay --frobnicate                                          | unknown option '--frobnicate'
            mistyped option         | replay --host-capcity-tokens 4M                              | unknown option '--host-capcity-tokens' (did you mean '--host-capacity-tokens'?)
            option prefix           | sweep --host-capacity 4M                                     | (did you mean '--host-capacity-tokens'?)
            mistyped value          | replay --router cache-awre                                   | unknown router 'cache-awre' (did you mean 'cache-aware'?)
            mistyped command        | sweeep --limit 5                                             | unknown command 'sweeep' (did you mean 'sweep'?)
            ambiguous G tokens      | replay --host-capacity-tokens 64G                            | --host-capacity-tokens 64G is ambiguous: 'G' could mean 64,000,000,000 tokens or 64 GB of memory
            ambiguous G memory      | replay --host-memory 52G                                     | --host-memory 52G is ambiguous: 52 GB (52,000,000,000 bytes) or 52 GiB (55,834,574,848 bytes)
            bytes as tokens         | replay --host-capacity-tokens 64GB                           | takes tokens, but '64GB' is an amount of memory; give it as --host-memory 64GB
            memory without unit     | replay --host-memory 52                                      | --host-memory needs a unit: 52GB (10^9 bytes) or 52GiB (2^30 bytes)
            fraction of a token     | replay --host-capacity-tokens 1.0005k                        | must be a whole number of tokens
            both host sizes         | replay --host-capacity-tokens 4M --host-memory 52GB          | give one of them
            tolerance in replay     | replay --tolerance 0.05                                      | --tolerance applies to the recommendation of sweep and compare
            tolerance out of range  | sweep --tolerance 1.5                                        | --tolerance must be a relative fraction in [0, 1)
            summary in missing dir  | replay --summary-json no/such/s.json                         | does not exist
            compare + backup mode   | compare --backup-mode layered                                | compare runs every backup mode
            policy without host     | replay --host-capacity-tokens 0 --write-policy write_back    | needs a host tier
            policy without backup   | replay --backup-mode none --write-policy write_through       | has no effect with --backup-mode none
            lanes without cp        | replay --lanes zigzag                                        | needs a CP group (--cp > 1)
            cache-only + time scale | replay --cache-only --time-scale 2                           | --time-scale has no effect with --cache-only
            cache-only + cp         | replay --cache-only --cp 4                                   | --cp 4 has no effect with --cache-only
            sweep without backup    | sweep --backup-mode none                                     | sweep varies the host capacity
            page size vs blocks     | replay --block-tokens 1 --page-size 16                       | page size must be a power of two that divides block tokens 1
            page size not pow2      | replay --page-size 48                                        | page size must be a power of two
            list outside sweep      | replay --host-capacity-tokens 1,2                            | use 'sweep' for a list
            bad capacity            | replay --host-capacity-tokens lots                           | must be a token count
            zero device             | replay --device-capacity-tokens 0                            | --device-capacity-tokens must be > 0
            bad limit               | replay --limit 0                                             | --limit must be >= 1
            missing trace           | replay --trace nowhere.jsonl                                 | no such file
            unknown trace format    | replay --trace csv:x.csv                                     | unknown trace format 'csv'
            missing output dir      | replay --json no/such/dir/r.json                             | does not exist
            bad cp                  | replay --cp 0 --lanes zigzag                                 | cp must be >= 1 rank
            unknown router          | replay --instances 2 --router random                         | valid values: round-robin, least-loaded, cache-aware, kv-events
            zero instances          | replay --instances 0                                         | --instances must be >= 1, got 0
            negative instances      | compare --instances 2,-1                                     | --instances must be >= 1, got -1
            zero tp                 | replay --tp 0                                                | --tp must be >= 1 GPU, got 0
            tp not dividing heads   | replay --tp 3                                                | --tp 3 does not divide the 8 KV heads of llama3-70b; valid: 1, 2, 4, 8
            chunk above budget      | replay --chunk-tokens 9000                                   | --chunk-tokens must be in 1..8192 (at most --max-batch-tokens), got 9000
            zero budget             | replay --max-batch-tokens 0                                  | --max-batch-tokens must be >= 1, got 0
            zero ttft slo           | replay --slo-ttft-ms 0                                       | --slo-ttft-ms must be a finite number > 0, got 0.0
            negative tpot slo       | replay --slo-tpot-ms -5                                      | --slo-tpot-ms must be a finite number > 0, got -5.0
            router list in replay   | replay --router round-robin,cache-aware                      | --router takes one value here
            serving with cache-only | replay --cache-only --instances 4                            | have no effect with --cache-only
            """)
    void usageErrorsExitWithTwoBeforeAnyWork(String name, String args, String message) {
        String outputs = args.contains("--json") ? "" : " --json out.json --html out.html";
        String[] argv = (args.trim() + outputs).split("\\s+");
        int rc = run(recording, argv);
        assertThat(rc).isEqualTo(2);
        assertThat(err()).contains(message);
        assertThat(err().lines().filter(l -> l.startsWith("hicache-sim: ")).count()).as(err()).isEqualTo(1);
        assertThat(ran).isEmpty();
        assertThat(work.resolve("out.json")).doesNotExist();
        assertThat(work.resolve("out.html")).doesNotExist();
    }

    @Test
    void aFleetReplayWritesTheServingOutcomes() throws IOException {
        int rc = run(new DefaultEngineFactory(), "replay", "--limit", "60", "--instances", "4", "--router",
                "least-loaded", "--json", "f.json", "--html", "f.html");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("f.json").toFile());
        for (String f : List.of("ttft_ms", "tpot_ms", "e2e_ms", "queue_ms")) {
            for (String q : List.of("p50", "p90", "p99", "max")) {
                assertThat(n.get(f).get(q).asDouble()).as(f + "." + q).isPositive();
            }
        }
        assertThat(n.get("ttft_ms").get("p50").asDouble()).isLessThanOrEqualTo(n.get("ttft_ms").get("p99").asDouble());
        assertThat(n.get("instances").asInt()).isEqualTo(4);
        assertThat(n.get("router").asText()).isEqualTo("least-loaded");
        assertThat(n.get("tp").asInt()).isEqualTo(4);
        assertThat(n.get("throughput_output_tokens_per_s").asDouble()).isPositive();
        assertThat(n.get("goodput").asDouble()).isBetween(0.0, 1.0);
        assertThat(n.get("gpu_busy_fraction").asDouble()).isBetween(0.0, 1.0);
        String html = Files.readString(work.resolve("f.html"));
        assertThat(html).contains("Headline: against no host tier", "TTFT distribution", "What clients felt");
    }

    @Test
    void compareTakesInstancesAndRoutersAsAxes() throws IOException {
        List<io.hicache.sim.ServingConfig> servings = new ArrayList<>();
        EngineFactory both = new EngineFactory() {
            @Override
            public SimulationEngine create(SimConfig config) {
                return recording.create(config);
            }

            @Override
            public SimulationEngine create(SimConfig config, io.hicache.sim.ServingConfig serving) {
                servings.add(serving);
                return recording.create(config);
            }
        };
        int rc = run(both, "compare", "--limit", "30", "--instances", "2", "--router", "round-robin,cache-aware",
                "--json", "c.json");
        assertThat(rc).as(err()).isZero();
        assertThat(ran).hasSize(6);
        assertThat(servings).extracting(io.hicache.sim.ServingConfig::router).containsExactly(
                io.hicache.sim.Router.ROUND_ROBIN, io.hicache.sim.Router.ROUND_ROBIN, io.hicache.sim.Router.ROUND_ROBIN,
                io.hicache.sim.Router.CACHE_AWARE, io.hicache.sim.Router.CACHE_AWARE, io.hicache.sim.Router.CACHE_AWARE);
        assertThat(servings).extracting(io.hicache.sim.ServingConfig::instances).containsOnly(2);
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("layered, 2x round-robin", "none (no backup), 2x cache-aware");
    }

    @Test
    void aFailedRunPrintsOneLineAndItsStackTraceOnlyWhenAsked() {
        EngineFactory failing = config -> (SimulationEngine) (c, trace, progress) -> {
            throw new IllegalStateException("boom in the engine");
        };
        assertThat(run(failing, "replay", "--limit", "5")).isEqualTo(1);
        assertThat(err()).contains("hicache-sim: error: boom in the engine").doesNotContain("\tat ");
        err.reset();
        System.setProperty(Main.DEBUG_PROPERTY, "true");
        try {
            assertThat(run(failing, "replay", "--limit", "5")).isEqualTo(1);
        } finally {
            System.clearProperty(Main.DEBUG_PROPERTY);
        }
        assertThat(err()).startsWith("hicache-sim: error: boom in the engine")
                .contains("java.lang.IllegalStateException: boom in the engine", "\tat ");
    }

    @Test
    void aBadTraceLineFailsTheRunWithFileAndLine() throws IOException {
        Path bad = work.resolve("bad.jsonl");
        Files.writeString(bad, "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, \"hash_ids\": [0]}\n"
                + "{\"timestamp\": 0, \"input_length\": 1}\n");
        int rc = run(new DefaultEngineFactory(), "replay", "--cache-only", "--trace", "mooncake:bad.jsonl");
        assertThat(rc).isEqualTo(1);
        assertThat(err()).contains(bad + ":2: missing field 'output_length'");
    }

    @Test
    void theTimedEngineRunsByDefault() throws IOException {
        int rc = run(new DefaultEngineFactory(), "replay", "--limit", "20", "--json", "t.json", "--html", "t.html");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("t.json").toFile());
        assertThat(n.get("cache_only").asBoolean()).isFalse();
        assertThat(n.get("requests").asInt()).isEqualTo(20);
        assertThat(n.get("backups").get("committed").asLong()).isPositive();
        assertThat(n.get("d2h_bytes").asLong()).isPositive();
        assertThat(n.get("simulated_seconds").asDouble()).isPositive();
        assertThat(Files.readString(work.resolve("t.html"))).contains("compute", "d2h backup");
    }

    @Test
    void bailianTracesRunWithTheirOwnBlockSize() throws IOException {
        Path sample = repoRoot().resolve("hicache-sim/src/test/resources/traces/bailian_sample.jsonl");
        int rc = run(new DefaultEngineFactory(), "replay", "--cache-only", "--trace", "bailian:" + sample,
                "--json", "b.json");
        assertThat(rc).as(err()).isZero();
        JsonNode n = new ObjectMapper().readTree(work.resolve("b.json").toFile());
        assertThat(n.get("block_tokens").asInt()).isEqualTo(16);
        assertThat(n.get("requests").asInt()).isEqualTo(4);
        assertThat(n.get("blocks").asInt()).isEqualTo(16);
        // Request 2 reuses 2 blocks; request 4 reuses 4 (request 2 left only 6 tokens of its 5th block,
        // less than a page): 6 of 16 blocks.
        assertThat(n.get("block_hit_ratio").asDouble()).isEqualTo(6.0 / 16);
    }

    /** Picocli formats descriptions as format strings: a bare percent sign printed a warning above every --help. */
    @Test
    void everyHelpRendersWithoutAFormatWarning() {
        Main.Env env = new Main.Env(config -> null, System.out, System.err, Path.of("."), repoRoot(), false);
        picocli.CommandLine top = Main.commandLine(env);
        List<picocli.CommandLine> all = new java.util.ArrayList<>(List.of(top));
        all.addAll(top.getSubcommands().values());
        PrintStream saved = System.err;
        ByteArrayOutputStream warnings = new ByteArrayOutputStream();
        try {
            System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8)); // where picocli's tracer writes
            for (picocli.CommandLine c : all) {
                assertThat(c.getUsageMessage()).isNotEmpty();
            }
        } finally {
            System.setErr(saved);
        }
        assertThat(warnings.toString(StandardCharsets.UTF_8)).doesNotContain("WARN");
    }

    @Test
    void helpExitsZero() {
        assertThat(run(recording, "--help")).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("replay", "compare", "sweep");
        assertThat(run(recording, "replay", "--help")).isZero();
        assertThat(out.toString(StandardCharsets.UTF_8)).contains("--host-capacity-tokens", "--write-policy");
    }
}
