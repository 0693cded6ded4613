package io.hicache.sim.engine;

import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.sim.BackupMode;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ComputeModel;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.JsonReport;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * The serving model against what it must reproduce exactly (a lone request's TTFT is the compute model's
 * prefill time; an idle fleet adds no queueing; a saturated instance runs at the roofline), its conservation
 * checks under pressure (preemption included), and the fleet's routers.
 */
class ServingModelTest {

    @TempDir
    Path dir;

    @AfterEach
    void clearThreads() {
        System.clearProperty(Replay.THREADS_PROPERTY);
    }

    /** A Mooncake trace of {@code n} requests with distinct prompts of {@code input} tokens, {@code gapMs} apart. */
    private TraceSource distinctPrompts(int n, int input, int output, double gapMs) throws IOException {
        StringBuilder b = new StringBuilder();
        int blocks = (input + 511) / 512;
        int id = 0;
        for (int i = 0; i < n; i++) {
            b.append(String.format(Locale.ROOT, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, "
                    + "\"hash_ids\": [", (long) (i * gapMs), input, output));
            for (int k = 0; k < blocks; k++) {
                b.append(k == 0 ? "" : ", ").append(id++);
            }
            b.append("]}\n");
        }
        Path f = dir.resolve("t" + n + "-" + input + "-" + output + "-" + gapMs + ".jsonl");
        Files.writeString(f, b.toString());
        return TraceSource.parse(f.toString(), dir, dir, Long.MAX_VALUE);
    }

    private static SimConfig llama70b(BackupMode mode, long deviceTokens) {
        return new SimConfig(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM, 512, 64, deviceTokens, 2 * deviceTokens,
                WritePolicy.WRITE_THROUGH, mode, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false, 3, 1.0);
    }

    private static SimResult run(SimConfig c, ServingConfig s, TraceSource trace) {
        ServingEngine engine = new ServingEngine(s);
        SimResult r = engine.run(c, trace, ProgressListener.NONE);
        assertThat(engine.lastRun().clean()).as("leaks: %s", engine.lastRun().leakReports()).isTrue();
        assertThat(engine.lastRun().leakReports()).hasSize(s.instances() * c.cp());
        return r;
    }

    private static ServingConfig serving(int instances, Router router, int tp) {
        return new ServingConfig(instances, router, tp, 8192, 8192, 2000, 100);
    }

    @Test
    void aLoneRequestsTtftIsTheComputeModelsPrefillTime() throws IOException {
        for (int tp : new int[] {1, 4}) {
            SimConfig c = llama70b(BackupMode.LAYERED, 1_000_000);
            SimResult r = run(c, serving(1, Router.ROUND_ROBIN, tp), distinctPrompts(1, 6000, 1, 0));
            long layerNs = ComputeModel.of(c.model(), c.gpu()).stepLayerNs(6000, 6000 * (6001 / 2.0), 0, 0, tp);
            double expectedMs = 80 * layerNs / 1e6;
            assertThat(r.serving().ttftMs().max()).as("tp %d", tp).isCloseTo(expectedMs, within(1e-6));
            assertThat(r.serving().queueMs().max()).isZero();
        }
    }

    @Test
    void aLightlyLoadedFleetsTtftIsThePrefillTime() throws IOException {
        SimConfig c = llama70b(BackupMode.LAYERED, 1_000_000);
        // 40 prompts of 4,096 tokens, one every 300 ms over 4 instances: each lands on an instance that is at
        // most decoding a few earlier requests
        SimResult r = run(c, serving(4, Router.LEAST_LOADED, 4), distinctPrompts(40, 4096, 8, 300));
        long layerNs = ComputeModel.of(c.model(), c.gpu()).stepLayerNs(4096, 4096 * (4097 / 2.0), 0, 0, 4);
        double prefillMs = 80 * layerNs / 1e6;
        assertThat(r.serving().ttftMs().p50()).isCloseTo(prefillMs, within(prefillMs * 0.05));
        assertThat(r.serving().ttftMs().max()).isLessThan(prefillMs * 1.25);
        assertThat(r.serving().queueMs().p99()).isLessThan(prefillMs * 0.1);
        assertThat(r.serving().goodput()).isEqualTo(1.0);
    }

    @Test
    void throughputSaturatesAtTheRoofline() throws IOException {
        SimConfig c = llama70b(BackupMode.NONE, 4_000_000);
        ComputeModel m = ComputeModel.of(c.model(), c.gpu());
        double stepS = 80 * m.stepLayerNs(8192, 8192 * (8193 / 2.0), 0, 0, 4) / 1e9;
        double rooflineTokensPerS = 8192 / stepS;
        // one-token answers, so every step is one whole 8,192-token prompt
        SimResult under = run(c, serving(1, Router.ROUND_ROBIN, 4), distinctPrompts(60, 8192, 1, stepS * 2e3));
        SimResult over = run(c, serving(1, Router.ROUND_ROBIN, 4), distinctPrompts(60, 8192, 1, stepS * 0.25e3));
        SimResult flood = run(c, serving(1, Router.ROUND_ROBIN, 4), distinctPrompts(60, 8192, 1, 0));
        assertThat(under.serving().throughputInputTokensPerS()).isLessThan(rooflineTokensPerS * 0.6);
        assertThat(over.serving().throughputInputTokensPerS()).isCloseTo(rooflineTokensPerS,
                within(rooflineTokensPerS * 0.01));
        assertThat(flood.serving().throughputInputTokensPerS()).isCloseTo(rooflineTokensPerS,
                within(rooflineTokensPerS * 0.01));
        assertThat(flood.serving().gpuBusyFraction()).isCloseTo(1.0, within(0.01));
    }

    @Test
    void underPressureEveryRequestFinishesOnceAndTokensAddUp() {
        // a device of 60k tokens for prompts of ~12k: decode runs out of pages and preempts; the engine checks
        // that every request finished once, prefilled + hit = prompt tokens, GPU time <= the clock, and (each
        // step, below) that no device page is held twice
        Instance.checkPagesEachStep = true;
        try {
            SimConfig c = new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 64, 60_000, 200_000,
                    WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false, 5,
                    20.0);
            SimResult r = run(c, serving(2, Router.CACHE_AWARE, 1), ServingEngineTest.bundled(150));
            assertThat(r.requests()).isEqualTo(150);
            assertThat(r.serving().preemptions()).as("pressure must preempt").isPositive();
            assertThat(r.prefillTokensComputed() + r.deviceHitTokens() + r.hostHitTokens())
                    .isEqualTo(r.simulatedTokens());
            assertThat(r.serving().gpuBusyFraction()).isPositive().isLessThanOrEqualTo(1.0);
            assertThat(r.backups().reserved()).isEqualTo(r.backups().committed() + r.backups().aborted());
        } finally {
            Instance.checkPagesEachStep = false;
        }
    }

    @Test
    void cacheAwareRoutingHitsMoreThanRoundRobin() {
        SimConfig c = SimConfig.defaults(512);
        SimResult rr = run(c, serving(8, Router.ROUND_ROBIN, 4), ServingEngineTest.bundled(1500));
        SimResult ca = run(c, serving(8, Router.CACHE_AWARE, 4), ServingEngineTest.bundled(1500));
        assertThat(ca.blockHitRatio()).isGreaterThan(rr.blockHitRatio() + 0.02);
        assertThat(ca.serving().router()).isEqualTo("cache-aware");
    }

    @Test
    void aCacheAwareRoutersLookKeepsTheRanksOfEachCpGroupInStep() {
        // The router looks at every instance's cache for each arrival. A look that split or touched nodes on
        // rank 0 alone parted the group's trees: rank 0 had a prefix host-only that rank 1 still held on the
        // device, and the load back rank 0 queued had no counterpart on rank 1.
        Path trace = dir.resolve("mt.jsonl");
        new io.hicache.sim.trace.MultiTurnGenerator(64, 6, 300, 64, 8, 2, 3).write(trace);
        SimConfig c = new SimConfig(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM, 512, 64, 30_000, 60_000,
                WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 2, OwnerLanes.Standard.ROUND_ROBIN, 0, false,
                3, 1.0);
        SimResult r = run(c, serving(2, Router.CACHE_AWARE, 4), TraceSource.parse(trace.toString(), dir, dir,
                Long.MAX_VALUE));
        assertThat(r.requests()).isEqualTo(64 * 6);
        assertThat(r.hostHitTokens()).as("the host tier serves hits").isPositive();
        assertThat(r.prefillTokensComputed() + r.deviceHitTokens() + r.hostHitTokens()).isEqualTo(r.simulatedTokens());
    }

    @Test
    void resultsDoNotDependOnTheThreadCount() throws Exception {
        SimConfig c = ServingEngineTest.pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH,
                1, 0);
        System.setProperty(Replay.THREADS_PROPERTY, "1");
        SimResult one = run(c, serving(3, Router.CACHE_AWARE, 1), ServingEngineTest.bundled(200));
        System.setProperty(Replay.THREADS_PROPERTY, "3");
        SimResult three = run(c, serving(3, Router.CACHE_AWARE, 1), ServingEngineTest.bundled(200));
        assertThat(ServingEngineTest.jsonWithoutWall(three)).isEqualTo(ServingEngineTest.jsonWithoutWall(one));
        assertThat(JsonReport.toJson(one)).contains("\"ttft_ms\"", "\"instances\" : 3");
    }

    @Test
    void tensorParallelismSpeedsUpPrefillAndMustDivideTheKvHeads() {
        ComputeModel m = ComputeModel.of(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM);
        long one = m.stepLayerNs(8192, 8192 * 4096.5, 0, 0, 1);
        long four = m.stepLayerNs(8192, 8192 * 4096.5, 0, 0, 4);
        assertThat(four).isLessThan(one / 3).isGreaterThan(one / 4); // all-reduces cost something
        assertThat(m.allReduceLayerNs(8192, 1)).isZero();
        assertThat(ModelPreset.LLAMA3_70B.defaultTensorParallel(GpuPreset.H200_SXM)).isEqualTo(4);
        ServingConfig bad = serving(1, Router.ROUND_ROBIN, 3);
        assertThatThrownBy(() -> bad.checkModel(ModelPreset.LLAMA3_70B)).hasMessageContaining("--tp 3")
                .hasMessageContaining("valid: 1, 2, 4, 8");
        serving(1, Router.ROUND_ROBIN, 3).checkModel(ModelPreset.DEEPSEEK_V3); // MLA: replicated, any TP
        assertThat(ServingConfig.kvRoomPromptTokens(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM, 4, 1))
                .isBetween(1_000_000L, 1_250_000L);
    }

    /**
     * Context parallelism splits a sequence's tokens and KV over the ranks, not the weights: a long prefill runs
     * about {@code cp} times faster, a decode step (bound by weight reads, each rank running every decoding token
     * through the full weights) hardly faster. Dividing the whole step by {@code cp} made decode 8x too fast at CP 8.
     */
    @Test
    void contextParallelismSplitsPrefillAndKvButNotTheDecodeWeightReads() {
        ComputeModel m = ComputeModel.of(ModelPreset.DEEPSEEK_V3, GpuPreset.H200_SXM);
        long prefill1 = m.stepLayerNs(65_536, 65_536 * 32_768.5, 0, 0, 8, 1);
        long prefill8 = m.stepLayerNs(65_536, 65_536 * 32_768.5, 0, 0, 8, 8);
        assertThat(prefill8).isLessThan(prefill1 / 6).isGreaterThan(prefill1 / 9);
        long decode1 = m.stepLayerNs(0, 0, 32, 32 * 4_096L, 8, 1);
        long decode8 = m.stepLayerNs(0, 0, 32, 32 * 4_096L, 8, 8);
        assertThat(decode8).isLessThanOrEqualTo(decode1).isGreaterThan(decode1 / 2);
        assertThat(m.stepLayerNs(8192, 8192 * 4096.5, 4, 9_000, 8, 1))
            .isEqualTo(m.stepLayerNs(8192, 8192 * 4096.5, 4, 9_000, 8));
        assertThatThrownBy(() -> m.stepLayerNs(1, 1, 0, 0, 8, 0)).hasMessageContaining("cp 0");
    }

    @Test
    void everyEvictionPolicyButPriorityIsSpelledAndAccepted() {
        for (EvictionPolicy p : EvictionPolicy.values()) {
            if (p == EvictionPolicy.PRIORITY) {
                assertThatThrownBy(() -> config(p)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("PRIORITY needs request priorities");
                assertThatThrownBy(() -> io.hicache.sim.OptionSpellings.eviction("priority"))
                        .hasMessageContaining("valid values: lru, lfu, fifo, mru, filo, slru");
                continue;
            }
            String name = io.hicache.sim.OptionSpellings.of(p);
            assertThat(io.hicache.sim.OptionSpellings.eviction(name.toUpperCase(java.util.Locale.ROOT))).isSameAs(p);
            assertThat(config(p).eviction()).isSameAs(p);
        }
    }

    private static SimConfig config(EvictionPolicy eviction) {
        return new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 64, 60_000, 200_000,
                WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, eviction, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false, 5, 1.0);
    }
}
