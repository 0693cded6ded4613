package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static io.hicache.core.internal.ControllerBasicTest.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/** The controller's JFR events, recorded around scripted runs on the simulated device and read back. */
@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class JfrEventsTest {

    @TempDir
    Path dir;

    @Test
    void commitsAbortsFallbacksAndLoadsAreRecordedWithTheirFields() throws IOException {
        List<RecordedEvent> events;
        try (Recording recording = HiCacheEvents.enableAll(new Recording());
             SimRig rig = SimRig.builder().layers(3, 1).pages(4, 64, 64).build()) {
            recording.start();
            HiCacheController c = rig.ctl[0];
            // a committed backup with draft KV, then evicted and loaded back
            LoadBackTest.backUpAndEvict(rig, 32, 5);
            MatchResult m = c.match(tokens(0, 32), 0, 32, new MatchResult());
            LoadOp op = c.loadBack(m, 42, 1 << 20, LoadBackTest.allocator(rig));
            c.startLoading();
            for (int i = 0; i < 1000 && c.loadsInFlight() > 0; i++) {
                rig.advance();
                rig.stepAll();
            }
            assertThat(op.state()).isEqualTo(LoadOp.State.LOADED);
            // an aborted backup
            RadixNode[] b = rig.insert(tokens(1000, 16));
            List<List<Backup>> cancelled = rig.reserveByPolicy(b, false);
            assertThat(c.abort(cancelled.get(0).get(0), AbortReason.PREEMPTED)).isTrue();
            rig.drain();
            // a forward under a CUDA graph
            c.declareHooksUnavailable("cuda graph");
            rig.forward(rig.reserveByPolicy(rig.insert(tokens(2000, 16)), false), 1_000, false);
            rig.drain();
            recording.stop();
            Path file = dir.resolve("run.jfr");
            recording.dump(file);
            events = RecordingFile.readAllEvents(file);
        }
        Map<String, List<RecordedEvent>> byName = events.stream()
            .filter(e -> e.getEventType().getName().startsWith(HiCacheEvents.PREFIX))
            .collect(Collectors.groupingBy(e -> e.getEventType().getName()));

        List<RecordedEvent> committed = byName.get("io.hicache.BackupCommitted");
        assertThat(committed).hasSize(2);
        RecordedEvent first = committed.getFirst();
        assertThat(first.getInt("pages")).isEqualTo(8);
        assertThat(first.getInt("layers")).isEqualTo(3);
        assertThat(first.getInt("draftLayers")).isEqualTo(1);
        assertThat(first.getLong("bytes")).isPositive();
        assertThat(first.getDuration("commitLatency").toNanos()).isPositive();
        assertThat(first.getStackTrace()).isNull();
        assertThat(first.getEventType().getCategoryNames()).containsExactly("HiCache", "Backup");

        List<RecordedEvent> aborted = byName.get("io.hicache.BackupAborted");
        assertThat(aborted).singleElement().satisfies(e -> {
            assertThat(e.getString("reason")).isEqualTo("PREEMPTED");
            assertThat(e.getInt("pages")).isEqualTo(4);
        });
        assertThat(byName.get("io.hicache.AllLayerFallback")).singleElement().satisfies(e -> {
            assertThat(e.getString("reason")).isEqualTo("HOOKS_UNAVAILABLE");
            assertThat(e.getString("detail")).isEqualTo("cuda graph");
        });
        assertThat(byName.get("io.hicache.LoadCompleted")).singleElement().satisfies(e -> {
            assertThat(e.getLong("requestId")).isEqualTo(42);
            assertThat(e.getInt("pages")).isEqualTo(8);
            assertThat(e.getLong("tokens")).isEqualTo(32);
            assertThat(e.getDuration("loadLatency").toNanos()).isPositive();
        });
        assertThat(byName.get("io.hicache.AgreementRound")).isNotEmpty()
            .allSatisfy(e -> assertThat(e.getInt("ranks")).isEqualTo(1))
            .anySatisfy(e -> assertThat(e.getInt("retired")).isPositive());
        assertThat(byName).doesNotContainKeys("io.hicache.LoadFailed", "io.hicache.StickyError");
    }

    @Test
    void agreementRoundsOfACpGroupNameItsSize() throws IOException {
        List<RecordedEvent> rounds;
        try (Recording recording = HiCacheEvents.enableAll(new Recording());
             SimRig rig = SimRig.builder().cp(2, OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0).pages(4, 64, 64).build()) {
            recording.start();
            RadixNode[] a = rig.insert(tokens(0, 32));
            rig.forward(rig.reserveByPolicy(a, false), 1_000, true);
            rig.drain();
            recording.stop();
            Path file = dir.resolve("cp.jfr");
            recording.dump(file);
            rounds = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals("io.hicache.AgreementRound")).toList();
        }
        assertThat(rounds).isNotEmpty().allSatisfy(e -> assertThat(e.getInt("ranks")).isEqualTo(2));
        assertThat(rounds.stream().map(e -> e.getInt("rank")).distinct()).containsExactlyInAnyOrder(0, 1);
        assertThat(rounds).anySatisfy(e -> assertThat(e.getInt("retired")).isEqualTo(1));
    }
}
