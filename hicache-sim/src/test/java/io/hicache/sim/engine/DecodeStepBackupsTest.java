package io.hicache.sim.engine;

import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.sim.BackupMode;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ComputeModel;
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

/**
 * An engine runs the per-layer hooks on every forward, decode-only steps included, so a backup reserved when a
 * request finishes is copied by the next forward whatever it computes. Before, the simulator ran hooks only on steps
 * that prefilled: a finished request's answer pages stayed locked by their pending backup through a run of
 * decode-only steps, and a request that needed those pages waited for the decoding to end.
 */
class DecodeStepBackupsTest {

    @TempDir
    Path dir;

    /**
     * A decodes for a long time; B (short prompt, long answer) finishes in the middle of it, its answer's pages
     * reserved for backup; C then arrives and fits only if B's answer pages can be evicted. With hooks on decode
     * steps B's backups commit within a step and C is admitted at once; without, C waits until A ends.
     */
    private TraceSource trace() throws IOException {
        String t = """
                {"timestamp": 0, "input_length": 512, "output_length": 6000, "hash_ids": [1]}
                {"timestamp": 0, "input_length": 512, "output_length": 3000, "hash_ids": [2]}
                {"timestamp": 30000, "input_length": 10240, "output_length": 1, "hash_ids": [%s]}
                """.formatted(blocks(100, 20));
        Path f = dir.resolve("decode-hooks.jsonl");
        Files.writeString(f, t);
        return TraceSource.parse(f.toString(), dir, dir, Long.MAX_VALUE);
    }

    private static String blocks(int first, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) {
            b.append(i == 0 ? "" : ", ").append(first + i);
        }
        return b.toString();
    }

    private static SimConfig config(BackupMode mode) {
        // 256 pages of 64 tokens: at C's arrival A holds ~73 pages, B's 54 are cached (8 prompt, 46 answer)
        return new SimConfig(ModelPreset.LLAMA3_70B, GpuPreset.H200_SXM, 512, 64, 256 * 64, 4096 * 64,
                WritePolicy.WRITE_THROUGH, mode, EvictionPolicy.LRU, 1, OwnerLanes.Standard.ROUND_ROBIN, 0, false, 3, 1.0);
    }

    private SimResult run(BackupMode mode) throws IOException {
        ServingEngine engine = new ServingEngine(new ServingConfig(1, Router.ROUND_ROBIN, 4, 8192, 8192, 2000, 100));
        Instance.checkPagesEachStep = true;
        try {
            SimResult r = engine.run(config(mode), trace(), ProgressListener.NONE);
            assertThat(engine.lastRun().clean()).as("leaks: %s", engine.lastRun().leakReports()).isTrue();
            return r;
        } finally {
            Instance.checkPagesEachStep = false;
        }
    }

    @Test
    void backupsReservedBeforeDecodeOnlyStepsCommitDuringThemAndFreeTheirPages() throws IOException {
        SimConfig c = config(BackupMode.LAYERED);
        long prefillC = 80 * ComputeModel.of(c.model(), c.gpu()).stepLayerNs(10240, 10240 * 5120.5, 1, 7000, 4);
        SimResult layered = run(BackupMode.LAYERED);
        SimResult none = run(BackupMode.NONE);
        assertThat(layered.backups().reserved()).isPositive()
                .isEqualTo(layered.backups().committed());
        // C is the slowest to its first token; without the host tier it evicts B's pages at once
        double cNone = none.serving().ttftMs().max();
        assertThat(cNone).isLessThan(prefillC * 1.5 / 1e6);
        // with it, B's answer pages are backed up by the decode steps after B finished, so C waits no longer
        // (without hooks on decode steps C's TTFT was 30 s: it waited for A's decoding to end)
        assertThat(layered.serving().ttftMs().max()).isLessThan(cNone * 1.1);
        assertThat(layered.serving().admissionPageWaits()).isLessThanOrEqualTo(none.serving().admissionPageWaits() + 1);
    }
}
