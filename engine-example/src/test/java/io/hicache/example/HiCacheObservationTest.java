package io.hicache.example;

import io.hicache.core.BackupHandle;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The read-only API a simulator or profiler observes a cache with, through the exported API only: live counters,
 * the backup and load streams, the tree's invariant check, the host pool's allocated pages and the Flight Recorder
 * event names.
 */
class HiCacheObservationTest {
    static final int LAYERS = 3;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 32;

    SimulatedCudaRuntime gpu;
    long kvBase;
    HiCache cache;
    DevicePagePool pool;

    @BeforeEach
    void build() {
        gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(64).pageCount(DEVICE_PAGES);
        kvBase = gpu.deviceMalloc(lb.packedBytes());
        pool = new DevicePagePool(DEVICE_PAGES);
        cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build()).hostPages(16)
            .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs).build();
    }

    @AfterEach
    void close() {
        gpu.setOpListener(null);
        cache.close();
        gpu.deviceFree(kvBase);
        gpu.close();
    }

    /** Inserts {@code pages} pages, reserves their backup and runs one forward with its hooks; returns the backup. */
    private BackupHandle backUp(int pages) {
        int[] tokens = new int[pages * PAGE];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i;
        }
        int[] devicePages = new int[pages];
        assertThat(pool.allocate(pages, devicePages, 0)).isTrue();
        cache.insert(tokens, 0, tokens.length, devicePages, 0);
        List<BackupHandle> backups = new ArrayList<>();
        assertThat(cache.reserveByPolicy(cache.lastInsertNode(), false, backups)).isEqualTo(1);
        ForwardHooks hooks = cache.beginForward(backups);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(cache.computeStream(), 10_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        return backups.getFirst();
    }

    private void runUntilTerminal(BackupHandle backup) {
        for (int i = 0; i < 1_000 && !backup.state().terminal(); i++) {
            cache.doAgentWork();
            gpu.advanceToNextEvent();
            cache.poll();
        }
        assertThat(backup.state().terminal()).as("the backup retired").isTrue();
    }

    @Test
    void aLiveCounterReadsWhatTheSnapshotCopiesAlsoAfterClose() {
        assertThat(cache.metric(Metric.BACKUPS_COMMITTED)).isZero();
        runUntilTerminal(backUp(2));

        assertThat(cache.metric(Metric.BACKUPS_COMMITTED)).isEqualTo(1);
        assertThat(cache.metric(Metric.FORWARDS_SEALED)).isEqualTo(cache.metrics().get(Metric.FORWARDS_SEALED))
            .isEqualTo(1);
        cache.close();
        assertThat(cache.metric(Metric.BACKUPS_COMMITTED)).isEqualTo(1);
        assertThatThrownBy(() -> cache.metric(null)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("metric");
    }

    @Test
    void theBackupCopiesRunOnTheBackupStreamAndAHostFunctionThereSeesThemFinished() {
        assertThat(cache.backupStream().handle()).isNotEqualTo(cache.computeStream().handle())
            .isNotEqualTo(cache.loadStream().handle());
        Set<Long> copyStreams = new HashSet<>();
        int[] copiesDone = {0};
        gpu.setOpListener((seq, type, stream, start, end, error) -> {
            if (type == SimulatedCudaRuntime.OP_COPY) {
                copyStreams.add(stream);
                copiesDone[0]++;
            }
        });
        BackupHandle backup = backUp(2);
        cache.doAgentWork(); // the submitter issues the forward's copies
        int[] copiesWhenWoken = {-1};
        gpu.launchHostFunc(cache.backupStream(), () -> copiesWhenWoken[0] = copiesDone[0]);
        runUntilTerminal(backup);

        assertThat(copyStreams).containsExactly(cache.backupStream().handle());
        assertThat(copiesDone[0]).isPositive();
        assertThat(copiesWhenWoken[0]).as("the host function ran once every copy queued before it had finished")
            .isEqualTo(copiesDone[0]);
        assertThat(cache.metric(Metric.D2H_TARGET_BYTES)).isPositive();
    }

    @Test
    void theViewsCheckTheTreeAndCountAllocatedHostPages() {
        assertThat(cache.hostPool().allocatedPages()).isZero();
        BackupHandle backup = backUp(2);
        assertThat(cache.hostPool().allocatedPages()).isEqualTo(2)
            .isEqualTo(cache.hostPool().capacityPages() - cache.hostPool().freePages());
        cache.tree().checkInvariants(); // a pending backup is a valid state
        runUntilTerminal(backup);
        cache.tree().checkInvariants();
        assertThat(cache.hostPool().allocatedPages()).isEqualTo(cache.tree().hostPagesCommitted()).isEqualTo(2);

        cache.close();
        for (Runnable call : List.<Runnable>of(() -> cache.tree().checkInvariants(),
                () -> cache.hostPool().allocatedPages(), () -> cache.backupStream(), () -> cache.loadStream())) {
            assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }

    @Test
    void aRecordingEnablingTheNamedEventsRecordsACommit(@TempDir Path dir) throws IOException {
        List<String> names = HiCache.flightRecorderEventNames();
        assertThat(names).isNotEmpty().allMatch(n -> n.startsWith("io.hicache."))
            .contains("io.hicache.BackupCommitted");
        Path file = dir.resolve("r.jfr");
        try (Recording recording = new Recording()) {
            for (String name : names) {
                recording.enable(name).withoutThreshold();
            }
            recording.start();
            runUntilTerminal(backUp(1));
            recording.stop();
            recording.dump(file);
        }
        List<String> recorded = new ArrayList<>();
        for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
            recorded.add(e.getEventType().getName());
        }
        assertThat(recorded).contains("io.hicache.BackupCommitted");
    }
}
