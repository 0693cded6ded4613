package io.hicache.sim.engine;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.sim.BackupMode;
import io.hicache.sim.CacheOnlyEngine;
import io.hicache.radix.EvictionPolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.core.WritePolicy;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.JsonReport;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.report.TimelineSegment;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.nio.file.Paths;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The timed engine on prefixes of the bundled trace: determinism, end-state checks and leaks, agreement with
 * the cache-only engine where timing cannot matter, and the layered vs all-layers relations of issue 7.
 * (The engine itself fails a run whose trees, device pages or host pages are inconsistent at the end.)
 */
class ServingEngineTest {

    static Path repoRoot() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath();
    }

    static TraceSource bundled(long limit) {
        return TraceSource.parse(TraceSource.BUNDLED_TRACE, repoRoot(), repoRoot(), limit);
    }

    /** Small capacities so that device eviction, host eviction and load-back all happen on a short prefix. */
    static SimConfig pressured(ModelPreset model, BackupMode mode, WritePolicy policy, int cp, int draftLayers) {
        return new SimConfig(model, GpuPreset.H200_SXM, 512, 64, 200_000, 3_000_000, policy, mode, EvictionPolicy.LRU, cp,
                OwnerLanes.Standard.ROUND_ROBIN, draftLayers, false, 7, 1.0);
    }

    static SimResult run(SimConfig c, long limit) {
        ServingEngine engine = new ServingEngine();
        SimResult r = engine.run(c, bundled(limit), ProgressListener.NONE);
        assertThat(engine.lastRun().clean()).as("simulated devices leak: %s", engine.lastRun().leakReports()).isTrue();
        assertThat(engine.lastRun().leakReports()).hasSize(c.cp());
        return r;
    }

    static ObjectNode jsonWithoutWall(SimResult r) throws Exception {
        ObjectNode n = (ObjectNode) new ObjectMapper().readTree(JsonReport.toJson(r));
        n.remove("wall_seconds");
        return n;
    }

    @Test
    void sameSeedGivesTheSameJsonExceptWallTime() throws Exception {
        SimConfig c = pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 1, 0);
        SimResult a = run(c, 300);
        SimResult b = run(c, 300);
        assertThat(jsonWithoutWall(a)).isEqualTo(jsonWithoutWall(b));
        assertThat(a.timeline()).isEqualTo(b.timeline());
    }

    @Test
    void pressuredRunEvictsLoadsBackAndEndsClean() {
        SimResult r = run(pressured(ModelPreset.LLAMA3_70B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 1, 0), 400);
        assertThat(r.requests()).isEqualTo(400);
        assertThat(r.hostHitTokens()).as("load-back served host hits").isPositive();
        assertThat(r.deviceHitTokens()).isPositive();
        assertThat(r.backups().reserved()).isEqualTo(r.backups().committed() + r.backups().aborted());
        assertThat(r.backups().committed()).isPositive();
        assertThat(r.backups().fallback()).isZero();
        assertThat(r.hostPoolPeakUtilization()).isGreaterThan(0.5).isLessThanOrEqualTo(1.0);
        assertThat(r.prefillTokensComputed() + r.deviceHitTokens() + r.hostHitTokens()).isEqualTo(r.simulatedTokens());
        assertThat(r.simulatedSeconds()).isPositive();
        // d2h bytes are true bytes: whole pages of 64 tokens x 320 KiB
        assertThat(r.d2hBytes() % (64L * 327_680)).isZero();
        assertThat(r.d2hBytes()).isPositive();
    }

    @ParameterizedTest
    @EnumSource(WritePolicy.class)
    void everyWritePolicyRunsAndEndsClean(WritePolicy policy) {
        SimResult r = run(pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, policy, 1, 0), 300);
        assertThat(r.requests()).isEqualTo(300);
        if (policy == WritePolicy.WRITE_BACK) {
            assertThat(r.backups().fallback()).as("write-back copies all layers at eviction").isPositive();
        }
    }

    @Test
    void aGroupOfThreeRanksCommitsAsPromptlyAsOneRank() {
        // the group's agreement rounds propagate within the same settling, not at the next unrelated event
        SimResult one = run(pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 1, 0), 300);
        SimResult three = run(pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 3, 0), 300);
        assertThat(three.commitLatencyNs().p99()).isPositive()
            .isLessThanOrEqualTo(Math.max(4 * one.commitLatencyNs().p99(), 10_000_000L));
    }

    @Test
    void cpGroupAndDraftLayersRunThroughTheRealPathsWithTheSameHits() {
        SimResult one = run(pressured(ModelPreset.DEEPSEEK_V3, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 1, 1), 200);
        SimResult two = run(pressured(ModelPreset.DEEPSEEK_V3, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 2, 1), 200);
        assertThat(two.blockHitRatio()).isEqualTo(one.blockHitRatio());
        assertThat(two.hostHitTokens()).isEqualTo(one.hostHitTokens());
        // each backup exists once per rank; bytes are split by owner lanes
        assertThat(two.backups().committed()).isEqualTo(2 * one.backups().committed());
        assertThat(two.d2hBytes()).isEqualTo(one.d2hBytes());
        // target 61 layers + 1 draft layer per page: 1152 B x 64 tokens x 62 layers
        assertThat(one.d2hBytes() % (1152L * 64 * 62)).isZero();
        assertThat(one.timeline()).extracting(TimelineSegment::label).contains("L60", "D0");
    }

    @Test
    void agreesWithTheCacheOnlyEngineWhenCapacitiesAreUnlimited() {
        // arrivals 10,000 times further apart: a request has finished before the next arrives, as in the
        // cache-only engine, except for the requests that share a timestamp (the first ones all arrive at 0):
        // prefilling side by side, they cannot hit each other's pages, so the timed engine may only hit less
        SimConfig timed = new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 64, Long.MAX_VALUE,
                SimConfig.HOST_UNLIMITED, WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1,
                OwnerLanes.Standard.ROUND_ROBIN, 0, false, 0, 1e-4);
        SimResult t = run(timed, 1_000);
        SimResult c = new CacheOnlyEngine().run(timed.withCacheOnly(true), bundled(1_000), ProgressListener.NONE);
        assertThat(t.blockHitRatio()).isLessThanOrEqualTo(c.blockHitRatio()).isCloseTo(c.blockHitRatio(), within(1e-4));
        assertThat(t.tokenHitRatio()).isLessThanOrEqualTo(c.tokenHitRatio()).isCloseTo(c.tokenHitRatio(), within(1e-4));
        assertThat(t.deviceHitTokens()).isLessThanOrEqualTo(c.deviceHitTokens());
        assertThat(t.hostHitTokens()).isZero();
    }

    @Test
    void layeredHidesBackupBehindComputeWithTheSameHitRatiosAsAllLayers() {
        SimConfig base = SimConfig.defaults(512);
        SimResult layered = run(base.withBackupMode(BackupMode.LAYERED), 500);
        SimResult all = run(base.withBackupMode(BackupMode.ALL_LAYERS), 500);
        SimResult none = run(base.withBackupMode(BackupMode.NONE), 500);

        assertThat(layered.exposedBackupNs()).isPositive().isLessThan(all.exposedBackupNs() / 10);
        assertThat(layered.commitLatencyNs().p50()).isLessThan(all.commitLatencyNs().p50());
        // the tail is backups waiting for a prefill step to carry their hooks (with same-forward loads, a step
        // that waits for a load), the same in both modes
        assertThat(layered.commitLatencyNs().p99()).isLessThanOrEqualTo(all.commitLatencyNs().p99());
        assertThat(layered.commitLatencyNs().max()).isLessThanOrEqualTo(all.commitLatencyNs().max());
        assertThat(layered.blockHitRatio()).isEqualTo(all.blockHitRatio());
        assertThat(layered.tokenHitRatio()).isEqualTo(all.tokenHitRatio());
        assertThat(layered.hostHitTokens()).isEqualTo(all.hostHitTokens());
        assertThat(layered.d2hBytes()).isEqualTo(all.d2hBytes());
        assertThat(all.backups().fallback()).isPositive();
        assertThat(layered.backups().fallback()).isZero();

        assertThat(none.backups().reserved()).isZero();
        assertThat(none.hostHitTokens()).isZero();
        assertThat(none.blockHitRatio()).isLessThan(layered.blockHitRatio());
        assertThat(none.exposedBackupNs()).isZero();

        // the timeline: 80 compute layers; layered copies start during the forward, all-layers after it
        long computeEndLayered = lastEnd(layered, "compute");
        long computeEndAll = lastEnd(all, "compute");
        assertThat(layered.timeline()).filteredOn(s -> s.lane().equals("compute")).hasSize(80);
        assertThat(firstStart(layered, "d2h backup")).isLessThan(computeEndLayered);
        assertThat(firstStart(all, "d2h backup")).isGreaterThanOrEqualTo(computeEndAll);
        assertThat(none.timeline()).filteredOn(s -> s.lane().equals("d2h backup")).isEmpty();
    }

    @Test
    void timeScaleStretchesOrCompressesArrivals() {
        SimConfig c = pressured(ModelPreset.LLAMA3_8B, BackupMode.LAYERED, WritePolicy.WRITE_THROUGH, 1, 0);
        SimResult normal = run(c, 100);
        SimResult slow = run(new SimConfig(c.model(), c.gpu(), c.blockTokens(), c.pageSize(), c.deviceCapacityTokens(),
                c.hostCapacityTokens(), c.writePolicy(), c.backupMode(), c.eviction(), 1, c.lanes(), 0, false, 7,
                0.01), 100);
        // 100x slower arrivals: the run lasts at least as long as the stretched arrival span
        assertThat(slow.simulatedSeconds()).isGreaterThan(normal.simulatedSeconds() * 2);
        assertThat(slow.requests()).isEqualTo(100);
    }

    private static long lastEnd(SimResult r, String lane) {
        return r.timeline().stream().filter(s -> s.lane().equals(lane)).mapToLong(TimelineSegment::endNs).max()
                .orElseThrow();
    }

    private static long firstStart(SimResult r, String lane) {
        return r.timeline().stream().filter(s -> s.lane().equals(lane)).mapToLong(TimelineSegment::startNs).min()
                .orElseThrow();
    }
}
