package io.hicache.sim.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ModelPreset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class RecommendationTest {

    @TempDir
    Path dir;

    private static final SimConfig BASE = SimConfig.defaults(512).withCapacities(200_000, 0);
    /** llama3-70b at TP 4: 327,680 B per token on the instance. */
    private static final KvFootprint KV = KvFootprint.of(BASE, 4, 512, KvFootprint.DeviceSource.OPTION);

    private static SimResult run(long host, double hit, long devicePeak, long hostPeak) {
        return new SimResult(BASE.withHostCapacityTokens(host), "t", 10, 5000, 5000, 12, hit, hit, 900, 300, 3800,
                SimResult.Backups.NONE, 0, 0, SimResult.CommitLatency.NONE, 0, 1, 0.1, List.of())
                .withOccupancy(new SimResult.Occupancy(devicePeak, hostPeak));
    }

    private static Recommendation of(double tolerance, SimResult... runs) {
        return Recommendation.of(Recommendation.pointsOf(List.of(runs)), tolerance, KV, 1);
    }

    @Test
    void theSmallestSweptSizeWithinTheToleranceOfTheBest() {
        Recommendation r = of(0.01, run(0, 0.50, 200_000, 0), run(100_000, 0.50, 200_000, 100_000),
                run(300_000, 0.62, 200_000, 300_000), run(400_000, 0.6458, 200_000, 400_000),
                run(1_000_000, 0.6460, 200_000, 450_000), run(SimConfig.HOST_UNLIMITED, 0.6461, 200_000, 450_000));
        assertThat(r.kind()).isEqualTo(Recommendation.Kind.FINITE);
        assertThat(r.hostTokens()).isEqualTo(400_000);
        assertThat(r.hostBytes()).isEqualTo(400_000L * 327_680);
        assertThat(r.bestBlockHitRatio()).isEqualTo(0.6461);
        assertThat(r.reason()).contains("400,000 tokens = 131.1 GB per instance, 32.8 GB per GPU",
                "within 1 % of the best swept (0.6461)", "against no host tier");
        // a looser tolerance takes a smaller size; none at all only an exact best
        assertThat(of(0.05, run(0, 0.50, 1, 0), run(300_000, 0.62, 1, 1), run(400_000, 0.6458, 1, 1),
                run(SimConfig.HOST_UNLIMITED, 0.6461, 1, 1)).hostTokens()).isEqualTo(300_000);
        assertThat(of(0, run(0, 0.50, 1, 0), run(400_000, 0.6458, 1, 1), run(900_000, 0.6461, 1, 1),
                run(SimConfig.HOST_UNLIMITED, 0.6461, 1, 1)).hostTokens()).isEqualTo(900_000);
    }

    /** Before: a sweep whose rows were all equal still proposed a host tier. */
    @Test
    void noHostTierNeededWhenTheDeviceHoldsTheWorkingSet() {
        Recommendation r = of(0.01, run(0, 0.6458, 150_000, 0), run(100_000, 0.6458, 150_000, 100_000),
                run(SimConfig.HOST_UNLIMITED, 0.6458, 150_000, 150_000));
        assertThat(r.kind()).isEqualTo(Recommendation.Kind.NO_HOST_TIER);
        assertThat(r.hostTokens()).isZero();
        assertThat(r.hostBytes()).isZero();
        assertThat(r.reason()).startsWith("no host tier needed: the device holds the working set (150,000 of 200,000 "
                + "tokens at peak)");
        Recommendation full = of(0.01, run(0, 0.30, 200_000, 0), run(SimConfig.HOST_UNLIMITED, 0.301, 200_000, 9));
        assertThat(full.kind()).isEqualTo(Recommendation.Kind.NO_HOST_TIER);
        assertThat(full.reason()).contains("the device fills (200,000 tokens) but what it evicts is not asked for again");
    }

    /** Before: the Decision recommended "unlimited tokens" though a finite size got most of the gain. */
    @Test
    void unlimitedOnlyWhenNoFiniteSizeIsWithinTheTolerance() {
        Recommendation r = of(0.01, run(0, 0.223, 200_000, 0), run(2_262_544, 0.284, 200_000, 2_262_544),
                run(SimConfig.HOST_UNLIMITED, 0.306, 200_000, 14_000_000));
        assertThat(r.kind()).isEqualTo(Recommendation.Kind.UNLIMITED_ONLY);
        assertThat(r.hostTokens()).isNull();
        assertThat(r.hostBytes()).isNull();
        assertThat(r.blockHitRatio()).isEqualTo(0.306);
        assertThat(r.reason()).contains("only the unlimited host tier is within 1 %",
                "held at most 14,000,000 tokens", "between 2.26M and 14M tokens");
        String where = r.position(2_262_544, run(2_262_544, 0.284, 1, 1), run(0, 0.223, 1, 0),
                run(SimConfig.HOST_UNLIMITED, 0.306, 1, 14_000_000), KV, 8);
        assertThat(where).contains("is below the knee", "(73 % of the gain)", "for the fleet of 8",
                "sweep --host-capacity-tokens 0,2.26M,");
        // a finite size within the tolerance wins over unlimited even when unlimited is a hair better
        assertThat(of(0.01, run(0, 0.2, 1, 0), run(3_000_000, 0.305, 1, 1),
                run(SimConfig.HOST_UNLIMITED, 0.306, 1, 1)).hostTokens()).isEqualTo(3_000_000);
    }

    @Test
    void theSummaryJsonHasExactlyTheDocumentedShape() throws Exception {
        Recommendation r = of(0.01, run(0, 0.5, 1, 0), run(400_000, 0.6458, 1, 1));
        Path f = dir.resolve("s.json");
        JsonReport.writeSummary(f, r, false, KV);
        JsonNode n = new ObjectMapper().readTree(f.toFile());
        List<String> keys = new ArrayList<>();
        n.fieldNames().forEachRemaining(keys::add);
        assertThat(keys).containsExactly("recommendation", "overloaded", "kv_bytes_per_token", "device_kv_tokens");
        List<String> rec = new ArrayList<>();
        n.get("recommendation").fieldNames().forEachRemaining(rec::add);
        assertThat(rec).containsExactly("host_tokens", "host_bytes", "block_hit_ratio", "best_block_hit_ratio",
                "tolerance", "reason");
        assertThat(n.get("kv_bytes_per_token").asLong()).isEqualTo(327_680);
        assertThat(n.get("device_kv_tokens").asLong()).isEqualTo(200_000);
        JsonReport.writeSummary(f, null, true, KV);
        n = new ObjectMapper().readTree(f.toFile());
        assertThat(n.get("recommendation").isNull()).isTrue();
        assertThat(n.get("overloaded").asBoolean()).isTrue();
        Recommendation unlimited = of(0.01, run(0, 0.2, 1, 0), run(SimConfig.HOST_UNLIMITED, 0.3, 1, 1));
        JsonReport.writeSummary(f, unlimited, false, KV);
        n = new ObjectMapper().readTree(f.toFile());
        assertThat(n.get("recommendation").get("host_tokens").isNull()).isTrue();
        assertThat(n.get("recommendation").get("host_bytes").isNull()).isTrue();
    }

    @Test
    void kvBytesPerTokenCountTargetAndDraftLayersAndMlaOnEveryTpGpu() {
        SimConfig llama8 = new SimConfig(ModelPreset.LLAMA3_8B, BASE.gpu(), 512, 64, 200_000, 0, BASE.writePolicy(),
                BASE.backupMode(), BASE.eviction(), 1, BASE.lanes(), 0, false, 0, 1.0);
        assertThat(KvFootprint.of(llama8, 1, 512, KvFootprint.DeviceSource.OPTION).bytesPerToken()).isEqualTo(131_072);
        SimConfig ds = new SimConfig(ModelPreset.DEEPSEEK_V3, BASE.gpu(), 512, 64, 200_000, 0, BASE.writePolicy(),
                BASE.backupMode(), BASE.eviction(), 1, BASE.lanes(), 1, false, 0, 1.0);
        // (61 + 1 draft) x 1,152 B, held whole by each of the 8 TP GPUs
        assertThat(KvFootprint.of(ds, 8, 512, KvFootprint.DeviceSource.OPTION).bytesPerToken())
                .isEqualTo(62L * 1152 * 8);
        // one simulated token of a block-level view stands for a whole block
        SimConfig blocks = new SimConfig(ModelPreset.LLAMA3_8B, BASE.gpu(), 1, 1, 1000, 0, BASE.writePolicy(),
                BASE.backupMode(), BASE.eviction(), 1, BASE.lanes(), 0, false, 0, 1.0);
        assertThat(KvFootprint.of(blocks, 1, 512, KvFootprint.DeviceSource.OPTION).bytesPerToken())
                .isEqualTo(131_072L * 512);
    }

    @Test
    void anInstanceWhoseQueueGrowsIsOverloadedAndTheRunSaysHowManyWouldKeepUp() {
        int n = 100;
        long[] arrival = new long[n];
        long[] queue = new long[n];
        for (int i = 0; i < n; i++) {
            arrival[i] = i * 1_000_000_000L; // one a second for 99 s
            queue[i] = i * 2_000_000_000L; // each waits 2 s more than the one before
        }
        // 400 GPU-seconds of work over 99 s of arrivals on one instance: 400 / (99 x 0.8) -> 6 instances
        Overload o = Overload.of(arrival, queue, n, 0.1, 2000, 99_000_000_000L, 400_000_000_000L, 1);
        assertThat(o.overloaded()).isTrue();
        assertThat(o.instancesToKeepUp()).isEqualTo(6);
        assertThat(o.warning("host 0", 1, 0.1)).startsWith("WARNING: overloaded (host 0): the instance cannot keep up")
                .contains("about 6 instances would keep up", "--instances 6");
        long[] flat = new long[n];
        Overload fine = Overload.of(arrival, flat, n, 0.1, 2000, 99_000_000_000L, 40_000_000_000L, 1);
        assertThat(fine.overloaded()).as("a queue that does not grow").isFalse();
        assertThat(fine.warning("x", 1, 0.1)).isNull();
        assertThat(Overload.of(arrival, queue, n, 0.95, 2000, 99_000_000_000L, 400_000_000_000L, 1).overloaded())
                .as("goodput above the threshold").isFalse();
        Overload pages = Overload.of(arrival, queue, n, 0.1, 2000, 99_000_000_000L, 10_000_000_000L, 1);
        assertThat(pages.instancesToKeepUp()).isNull();
        assertThat(pages.warning("x", 1, 0.1)).contains("for want of device pages, not compute");
    }
}
