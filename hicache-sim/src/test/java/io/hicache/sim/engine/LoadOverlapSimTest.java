package io.hicache.sim.engine;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.BackupMode;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * {@code --load-overlap}: loading a host hit inside the forward that uses it keeps the hit ratios of loading it a
 * step ahead and shortens the host-hit requests' prefill.
 */
class LoadOverlapSimTest {

    @Test
    void sameForwardKeepsHitRatiosAndShortensHostHitPrefill() {
        SimConfig base = SimConfig.defaults(512);
        SimResult same = ServingEngineTest.run(base.withLoadOverlap(LoadOverlap.SAME_FORWARD), 500);
        SimResult previous = ServingEngineTest.run(base.withLoadOverlap(LoadOverlap.PREVIOUS_BATCH), 500);
        System.out.printf("500 requests: host-hit prefill p50 same-forward %.1f ms (%d requests), previous-batch %.1f ms"
                + " (%d); block hit ratio %.4f vs %.4f%n", same.serving().hostHitPrefillMs().p50(),
            same.serving().hostHitRequests(), previous.serving().hostHitPrefillMs().p50(),
            previous.serving().hostHitRequests(), same.blockHitRatio(), previous.blockHitRatio());
        assertThat(same.serving().loadOverlap()).isEqualTo("same-forward");
        assertThat(previous.serving().loadOverlap()).isEqualTo("previous-batch");
        assertThat(same.serving().hostHitRequests()).isPositive();
        assertThat(previous.serving().hostHitRequests()).isPositive();
        assertThat(same.blockHitRatio()).isCloseTo(previous.blockHitRatio(), within(0.01));
        assertThat(same.serving().hostHitPrefillMs().p50()).isLessThan(previous.serving().hostHitPrefillMs().p50());
        assertThat(same.serving().hostHitPrefillMs().mean()).isLessThan(previous.serving().hostHitPrefillMs().mean());
    }

    @TempDir
    Path dir;

    /** One trace record: arrival in ms, output tokens, and its 512-token blocks {@code [from, to)} then {@code more}. */
    private static String record(long ms, int output, int from, int to, int... more) {
        StringBuilder b = new StringBuilder();
        int blocks = to - from + more.length;
        b.append(String.format(Locale.ROOT, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, "
            + "\"hash_ids\": [", ms, blocks * 512, output));
        for (int k = from; k < to; k++) {
            b.append(k == from ? "" : ", ").append(k);
        }
        for (int k : more) {
            b.append(", ").append(k);
        }
        return b.append("]}\n").toString();
    }

    private SimResult runTrace(LoadOverlap overlap, String records) throws IOException {
        Path f = dir.resolve("t-" + overlap + ".jsonl");
        Files.writeString(f, records);
        // llama3-8b on a device of 937 pages of 64 tokens, a host tier that keeps everything
        SimConfig c = new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 64, 60_000, 1_000_000,
            WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false, 1, 1.0)
            .withLoadOverlap(overlap);
        ServingEngine engine = new ServingEngine();
        SimResult r = engine.run(c, TraceSource.parse(f.toString(), dir, dir, Long.MAX_VALUE), ProgressListener.NONE);
        assertThat(engine.lastRun().clean()).as("leaks: %s", engine.lastRun().leakReports()).isTrue();
        return r;
    }

    /**
     * A conversation's history (20 blocks, 160 pages) is only on the host when its next turn arrives, and a request
     * decoding a long answer holds most of the device: the load finds no room. The turn used to give its host hit up
     * for good there, wait for device pages all the same, and recompute the history; it must wait and load it.
     */
    @ParameterizedTest
    @EnumSource(LoadOverlap.class)
    void aTurnWhoseLoadFindsNoRoomWaitsAndStillLoadsItsHistory(LoadOverlap overlap) throws IOException {
        String trace = record(0, 1, 0, 20) // the history, then evicted from the device by the next prompt
            + record(2_000, 1, 100, 200)
            + record(6_000, 4_000, 200, 300) // 800 locked pages decoding for a long time
            + record(12_000, 1, 0, 20, 300, 301); // the next turn: history + 2 new blocks
        SimResult r = runTrace(overlap, trace);
        assertThat(r.hostHitTokens()).as("the next turn's history, loaded back").isEqualTo(20 * 512);
        assertThat(r.deviceHitTokens()).isZero();
    }

    /**
     * Previous-batch: a turn's load is issued, the request behind it takes the device pages left, and the turn waits
     * for the pages of its 40 new blocks while two long answers grow. What its load brought back is neither host-only
     * nor yet locked by the turn: once the other cached pages were gone, the growing answers used to evict it and the
     * turn recomputed what it had loaded. Same-forward admits the turn with its load, so it never waits this way.
     */
    @ParameterizedTest
    @EnumSource(LoadOverlap.class)
    void aTurnWaitingForPagesKeepsWhatItsLoadBroughtBack(LoadOverlap overlap) throws IOException {
        String trace = record(0, 1, 0, 20)
            + record(2_000, 1, 100, 200)
            + record(6_000, 8_000, 200, 240) // 320 locked pages, growing by 125 while decoding
            + record(12_000, 1, 0, 20, java.util.stream.IntStream.range(300, 340).toArray()) // 160 to load, 320 new
            + record(12_000, 8_000, 400, 436); // 288 pages, right behind it, growing by 125
        SimResult r = runTrace(overlap, trace);
        assertThat(r.hostHitTokens()).as("the next turn's history, loaded back").isEqualTo(20 * 512);
        assertThat(r.deviceHitTokens()).isZero();
    }
}
