package io.hicache.sim.engine;

import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.BackupMode;
import io.hicache.sim.CacheOnlyEngine;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.EngineProfile;
import io.hicache.sim.model.GpuPreset;
import io.hicache.sim.model.ModelPreset;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * The profiled engine ({@code --engine-profile}) times hicache-serve's own schedule: one chunk of the oldest request
 * still prefilling per step, then a decode token of every decoding request, each a one-sequence forward priced by the
 * profile; admission up to {@code max_running}; the cache path is the simulator's own.
 */
class ProfiledEngineTest {
    static final String PROFILE_JSON = """
            {"format": "hicache-engine-profile", "version": 1, "engine": "test",
             "model": {"id": "tiny", "layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 512,
                       "vocab": 1000, "context_tokens": 8192},
             "page_size": 16, "kv_bytes_per_token": 4096,
             "scheduler": {"chunk_tokens": 256, "max_running": 8},
             "forward_ms": {"tokens": [1, 64, 256], "context": [0, 1024, 4096],
                            "ms": [[2.0, 2.5, 4.0], [6.0, 8.0, 14.0], [20.0, 26.0, 44.0]]},
             "logits_ms": 0.3, "step_overhead_ms": 0.05, "request_overhead_ms": 1.0,
             "load": {"bytes_per_s": 1e9, "fixed_ms": 0.1}, "backup": {"bytes_per_s": 1e9, "fixed_ms": 0.1}}
            """;
    static final EngineProfile PROFILE = EngineProfile.parse(PROFILE_JSON, "test");

    @TempDir
    Path dir;

    private TraceSource trace(String jsonl) throws IOException {
        Path t = dir.resolve("t" + System.nanoTime() + ".jsonl");
        Files.writeString(t, jsonl);
        return TraceSource.parse(t.toString(), dir, dir, Long.MAX_VALUE);
    }

    static SimConfig config(long device, long host) {
        return new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 16, device, host,
                WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN,
                0, false, 3, 1.0);
    }

    static SimResult run(SimConfig c, TraceSource t, EngineProfile p) {
        ServingEngine e = new ServingEngine(new ServingConfig(1, Router.CACHE_AWARE, 1, 8192, p.chunkTokens(), 2000,
                100), p);
        SimResult r = e.run(c, t, ProgressListener.NONE);
        assertThat(e.lastRun().clean()).isTrue();
        return r;
    }

    private static double stepMs() {
        return PROFILE.stepOverheadMs();
    }

    /**
     * TTFT: the chunks' forwards, a step overhead after each but the last, the logits and the request overhead (the
     * token streams when the chunk's forward ends); the first decode runs in the step the prefill ends, and each
     * token comes out when its forward ends.
     */
    @Test
    void aLoneRequestTakesTheProfilesSum() throws IOException {
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 1000, "output_length": 4, "hash_ids": [1, 2]}
                """);
        double ttft = PROFILE.requestOverheadMs() + PROFILE.logitsMs() - stepMs();
        for (int from = 0; from < 1000; from += 256) {
            ttft += PROFILE.forwardMs(Math.min(256, 1000 - from), from) + stepMs();
        }
        double decodes = -stepMs();
        for (int d = 1; d < 4; d++) {
            decodes += PROFILE.forwardMs(1, 1000 + d - 1) + PROFILE.logitsMs() + stepMs();
        }
        for (long host : new long[] {0, 100_000}) { // host tier: the steps run on the device with backups
            SimResult r = run(config(100_000, host), t, PROFILE);
            assertThat(r.serving().ttftMs().p50()).as("host %d", host).isCloseTo(ttft, within(1e-3));
            assertThat(r.serving().e2eMs().p50()).isCloseTo(ttft + decodes, within(1e-3));
            assertThat(r.serving().tpotMs().p50()).isCloseTo(decodes / 3, within(1e-3));
            assertThat(r.serving().queueMs().max()).isZero();
        }
    }

    /**
     * The busy factor prices a prefill chunk in a step that also decodes (tokens of another request streaming beside
     * it) and no other: a lone request's TTFT is unchanged, one that arrives while another decodes pays the factor.
     */
    @Test
    void aPrefillBesideDecodingRequestsCostsTheBusyFactor() throws IOException {
        EngineProfile busy = EngineProfile.parse(PROFILE_JSON.replace("\"request_overhead_ms\": 1.0,",
            "\"request_overhead_ms\": 1.0, \"prefill_busy_factor\": 1.5,"), "busy");
        assertThat(busy.prefillBusyFactor()).isEqualTo(1.5);
        assertThat(PROFILE.prefillBusyFactor()).isEqualTo(1.0); // absent: 1
        TraceSource lone = trace("""
                {"timestamp": 0, "input_length": 200, "output_length": 4, "hash_ids": [1]}
                """);
        assertThat(run(config(100_000, 0), lone, busy).serving().ttftMs().p50())
            .isCloseTo(run(config(100_000, 0), lone, PROFILE).serving().ttftMs().p50(), within(1e-3));
        // the second arrives 10 ms in, while the first decodes its 400 tokens
        TraceSource two = trace("""
                {"timestamp": 0, "input_length": 64, "output_length": 400, "hash_ids": [1]}
                {"timestamp": 10, "input_length": 200, "output_length": 1, "hash_ids": [2]}
                """);
        double plain = run(config(100_000, 0), two, PROFILE).serving().ttftMs().max();
        double slowed = run(config(100_000, 0), two, busy).serving().ttftMs().max();
        assertThat(slowed - plain).isCloseTo(0.5 * PROFILE.forwardMs(200, 0), within(0.5));
    }

    /**
     * The service factor prices every prefill chunk, alone or beside decodes, and no decode: a lone request's TTFT
     * grows by the factor's share of its prefill forwards, its time after the first token not at all.
     */
    @Test
    void theServiceFactorPricesEveryPrefillChunkAndNoDecode() throws IOException {
        EngineProfile slow = EngineProfile.parse(PROFILE_JSON.replace("\"request_overhead_ms\": 1.0,",
            "\"request_overhead_ms\": 1.0, \"prefill_service_factor\": 1.25,"), "slow");
        assertThat(PROFILE.prefillServiceFactor()).isEqualTo(1.0); // absent: 1
        // 600 tokens: chunks of 256, 256 and 88 over growing context
        TraceSource lone = trace("""
                {"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [1, 2]}
                """);
        var plain = run(config(100_000, 0), lone, PROFILE).serving();
        var slowed = run(config(100_000, 0), lone, slow).serving();
        int chunk = PROFILE.chunkTokens();
        double forwards = PROFILE.forwardMs(chunk, 0) + PROFILE.forwardMs(chunk, chunk)
            + PROFILE.forwardMs(600 - 2 * chunk, 2 * chunk);
        assertThat(slowed.ttftMs().p50() - plain.ttftMs().p50()).isCloseTo(0.25 * forwards, within(1e-3));
        assertThat(slowed.e2eMs().p50() - slowed.ttftMs().p50())
            .isCloseTo(plain.e2eMs().p50() - plain.ttftMs().p50(), within(1e-3));
    }

    /** A whole cached prompt restores whole pages only: the engine computes its last page again. */
    @Test
    void aWholeCachedPromptComputesItsLastPage() throws IOException {
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 512, "output_length": 1, "hash_ids": [1]}
                {"timestamp": 10000, "input_length": 512, "output_length": 1, "hash_ids": [1]}
                """);
        SimResult r = run(config(100_000, 0), t, PROFILE);
        double first = PROFILE.forwardMs(256, 0) + PROFILE.forwardMs(256, 256) + stepMs();
        double second = PROFILE.forwardMs(16, 512 - 16);
        double overheads = PROFILE.logitsMs() + PROFILE.requestOverheadMs();
        assertThat(r.serving().ttftMs().max()).isCloseTo(first + overheads, within(1e-3));
        assertThat(r.serving().ttftMs().mean()).isCloseTo((first + second) / 2 + overheads, within(1e-3));
        assertThat(r.deviceHitTokens()).isEqualTo(512);
    }

    /** Beyond max_running a request waits in the queue; within it, prefills take turns one chunk per step. */
    @Test
    void maxRunningQueuesTheRest() throws IOException {
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 200, "output_length": 8, "hash_ids": [1]}
                {"timestamp": 0, "input_length": 200, "output_length": 8, "hash_ids": [2]}
                {"timestamp": 0, "input_length": 200, "output_length": 8, "hash_ids": [3]}
                """);
        SimResult one = run(config(100_000, 0), t, PROFILE.withMaxRunning(1));
        SimResult three = run(config(100_000, 0), t, PROFILE.withMaxRunning(3));
        assertThat(three.serving().queueMs().max()).isZero();
        // with one running, the last waits for the two before it to finish
        double service = PROFILE.forwardMs(200, 0) + PROFILE.logitsMs(); // its first decode in the same step
        for (int d = 1; d < 8; d++) {
            service += PROFILE.forwardMs(1, 200 + d - 1) + PROFILE.logitsMs() + stepMs();
        }
        assertThat(one.serving().queueMs().max()).isCloseTo(2 * service, within(1e-3));
        // three running: prefills in turn, so the third token comes out after three prefill steps
        double prefill = PROFILE.forwardMs(200, 0) + stepMs();
        assertThat(three.serving().ttftMs().max()).isGreaterThanOrEqualTo(3 * prefill);
        assertThat(one.tokenHitRatio()).isEqualTo(three.tokenHitRatio());
    }

    /**
     * A request that reaches the head of the queue but finds no device pages waits there: that wait is TTFT, not
     * queue time, as the engine's {@code queue_ms} ends at its first admission attempt.
     */
    @Test
    void waitingForPagesAtTheHeadIsNotQueueTime() throws IOException {
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 200, "output_length": 40, "hash_ids": [1]}
                {"timestamp": 0, "input_length": 200, "output_length": 40, "hash_ids": [2]}
                """);
        SimResult roomy = run(config(100_000, 0), t, PROFILE);
        SimResult tight = run(config(320, 0), t, PROFILE); // 20 pages: one request's 15 at a time
        assertThat(roomy.serving().queueMs().max()).isZero();
        assertThat(tight.serving().queueMs().max()).isZero();
        double service = PROFILE.forwardMs(200, 0) + PROFILE.logitsMs();
        for (int d = 1; d < 40; d++) {
            service += PROFILE.forwardMs(1, 200 + d - 1) + PROFILE.logitsMs() + stepMs();
        }
        // the second is admitted when the first has finished: its TTFT holds the first's service
        assertThat(tight.serving().ttftMs().max()).isGreaterThan(service);
        assertThat(roomy.serving().ttftMs().max()).isLessThan(service);
    }

    /** Timing cannot change hits here (turns spaced, device large): the profiled engine's are the cache-only ones. */
    @Test
    void theCachePathIsTheSimulators() throws IOException {
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < 30; i++) {
            int conv = i % 5;
            int turn = i / 5;
            StringBuilder ids = new StringBuilder();
            for (int b = 0; b <= turn; b++) {
                ids.append(b == 0 ? "" : ", ").append(conv * 100 + b);
            }
            s.append("{\"timestamp\": ").append(i * 2000).append(", \"input_length\": ").append(512 * (turn + 1) - 7)
                    .append(", \"output_length\": 4, \"hash_ids\": [").append(ids).append("]}\n");
        }
        TraceSource t = trace(s.toString());
        SimResult profiled = run(config(200_000, 0), t, PROFILE);
        SimResult bound = new CacheOnlyEngine().run(config(200_000, 0).withCacheOnly(true), t, ProgressListener.NONE);
        assertThat(profiled.tokenHitRatio()).isPositive().isEqualTo(bound.tokenHitRatio());
        assertThat(profiled.blockHitRatio()).isEqualTo(bound.blockHitRatio());
    }

    /** A host hit is loaded at the profile's load rate: a slower link delays its first token, not its hits. */
    @Test
    void hostLoadsTakeTheProfilesLoadTime() throws IOException {
        // conversation 1's prefix is pushed to the host by conversation 2, then its second turn loads it back
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}
                {"timestamp": 1000, "input_length": 1024, "output_length": 1, "hash_ids": [3, 4]}
                {"timestamp": 2000, "input_length": 1040, "output_length": 1, "hash_ids": [1, 2, 5]}
                """);
        EngineProfile slow = EngineProfile.parse(PROFILE_JSON.replace("\"load\": {\"bytes_per_s\": 1e9",
                "\"load\": {\"bytes_per_s\": 1e7"), "slow");
        for (io.hicache.core.LoadOverlap overlap : io.hicache.core.LoadOverlap.values()) {
            SimConfig c = config(1100, 100_000).withLoadOverlap(overlap);
            SimResult fast = run(c, t, PROFILE);
            SimResult slowRun = run(c, t, slow);
            long loaded = fast.hostHitTokens();
            assertThat(loaded).as("%s", overlap).isGreaterThanOrEqualTo(512);
            assertThat(slowRun.hostHitTokens()).isEqualTo(loaded);
            assertThat(slowRun.deviceHitTokens()).isEqualTo(fast.deviceHitTokens());
            // the loaded tokens' KV at 1e7 B/s: the loaded request's first token waits for it, at 1e9 B/s it does not
            double loadMs = loaded * 4096 / 1e7 * 1e3;
            assertThat(slowRun.serving().ttftMs().max()).isGreaterThan(loadMs);
            assertThat(fast.serving().ttftMs().max()).isLessThan(loadMs / 2);
        }
    }

    @Test
    void refusesWhatTheEngineDoesNotRun() throws IOException {
        TraceSource t = trace("""
                {"timestamp": 0, "input_length": 100, "output_length": 1, "hash_ids": [1]}
                """);
        SimConfig pageSize64 = new SimConfig(ModelPreset.LLAMA3_8B, GpuPreset.H200_SXM, 512, 64, 100_000, 0,
                WritePolicy.WRITE_THROUGH, BackupMode.LAYERED, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN,
                0, false, 3, 1.0);
        assertThatThrownBy(() -> run(pageSize64, t, PROFILE)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("page size 16");
    }
}
