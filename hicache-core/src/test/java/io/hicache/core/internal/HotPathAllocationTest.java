package io.hicache.core.internal;

import io.hicache.core.BackupState;
import io.hicache.core.DevicePageSink;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Allocation regression guard for the controller's hot paths on the simulated device: the per-layer hooks and
 * the steady-state commit path ({@link HiCacheController#poll()} draining acks, agreeing and publishing) must
 * allocate nothing. Counts bytes with {@link AllocationMeter} around only the measured calls; reservation,
 * agents and eviction run unmeasured in between. The minimum over several rounds after warm-up must be 0, so
 * a one-off JIT or class-loading allocation cannot fail it; nothing depends on timing.
 */
class HotPathAllocationTest {
    private static final int WARMUP_ROUNDS = 4;
    private static final int MEASURED_ROUNDS = 6;

    @BeforeAll
    static void meterWorks() {
        assumeTrue(AllocationMeter.supported(), "per-thread allocation counting unsupported by this JVM");
    }

    @Test
    void targetAndDraftHooksAllocateNothing() {
        int layers = 2048;
        int draftLayers = 256;
        try (SimRig rig = SimRig.builder().layers(layers, draftLayers).pages(4, 64, 64)
            .controller(b -> b.maxForwardsInFlight(2)).build()) {
            long min = Long.MAX_VALUE;
            for (int round = 0; round < WARMUP_ROUNDS + MEASURED_ROUNDS; round++) {
                RadixNode[] last = rig.insert(ControllerBasicTest.tokens(1_000 * round, 8));
                List<List<Backup>> backups = rig.reserveByPolicy(last, true);
                assertThat(backups.get(0)).hasSize(1);
                ForwardHandle h = rig.ctl[0].beginForward(backups.get(0));
                long before = AllocationMeter.threadAllocatedBytes();
                for (int l = 0; l < layers; l++) {
                    h.targetLayerStored(l);
                }
                for (int d = 0; d < draftLayers; d++) {
                    h.draftLayerStored(d);
                }
                long used = AllocationMeter.threadAllocatedBytes() - before;
                h.endForward();
                rig.drain();
                assertThat(backups.get(0).get(0).state()).isEqualTo(BackupState.COMMITTED);
                rig.ctl[0].evictDevice(2, rig::freeDevicePages);
                if (round >= WARMUP_ROUNDS) {
                    min = Math.min(min, used);
                }
            }
            assertThat(min).as("bytes allocated by %d target and %d draft hook calls", layers, draftLayers).isZero();
        }
    }

    @Test
    void steadyStateCommitAllocatesNothingCp1() {
        assertPollAllocatesNothing(1);
    }

    @Test
    void steadyStateCommitAllocatesNothingCp8() {
        assertPollAllocatesNothing(8);
    }

    /** A flight recording of other events runs; the HiCache events are off, so emitting them must cost nothing. */
    @Test
    void steadyStateCommitAllocatesNothingWhileARecordingRunsWithHiCacheEventsOff() {
        try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
            recording.enable("jdk.ThreadSleep");
            io.hicache.core.internal.jfr.HiCacheEvents.ALL.forEach(recording::disable);
            recording.start();
            assertPollAllocatesNothing(8);
        }
    }

    /** Each round: N backups reserved and copied unmeasured, then only the polls that commit them are measured. */
    private static void assertPollAllocatesNothing(int cp) {
        int backupsPerRound = 32;
        int pagesPerBackup = 2;
        int pageSize = 4;
        try (SimRig rig = SimRig.builder().cp(cp, OwnerLanes.ROUND_ROBIN).layers(4, 0)
            .pages(pageSize, 256, 256).controller(b -> b.maxForwardsInFlight(4)).build()) {
            long min = Long.MAX_VALUE;
            int nextToken = 0;
            for (int round = 0; round < WARMUP_ROUNDS + MEASURED_ROUNDS; round++) {
                List<List<Backup>> perRank = new ArrayList<>();
                for (int r = 0; r < cp; r++) {
                    perRank.add(new ArrayList<>());
                }
                for (int i = 0; i < backupsPerRound; i++) {
                    RadixNode[] last = rig.insert(ControllerBasicTest.tokens(nextToken, pagesPerBackup * pageSize));
                    nextToken += 1_000;
                    List<List<Backup>> one = rig.reserveByPolicy(last, false);
                    for (int r = 0; r < cp; r++) {
                        assertThat(one.get(r)).hasSize(1);
                        perRank.get(r).addAll(one.get(r));
                    }
                }
                rig.forward(perRank, 100, true);
                runAgentsUntilAcked(rig);
                long committedBefore = committed(rig);
                long before = AllocationMeter.threadAllocatedBytes();
                for (int attempt = 0; attempt < 16 && inFlight(rig) > 0; attempt++) {
                    for (int r = 0; r < cp; r++) {
                        rig.ctl[r].poll();
                    }
                }
                long used = AllocationMeter.threadAllocatedBytes() - before;
                assertThat(committed(rig) - committedBefore).isEqualTo((long) cp * backupsPerRound);
                for (int r = 0; r < cp; r++) {
                    DevicePageSink sink = r == 0 ? rig::freeDevicePages : (pages, off, count) -> { };
                    rig.ctl[r].evictDevice(backupsPerRound * pagesPerBackup, sink);
                }
                if (round >= WARMUP_ROUNDS) {
                    min = Math.min(min, used);
                }
            }
            assertThat(min).as("bytes allocated by poll() committing %d backups on each of %d ranks",
                backupsPerRound, cp).isZero();
        }
    }

    /** Steps submitter, completion and the devices until every sealed forward is acknowledged to the scheduler. */
    private static void runAgentsUntilAcked(SimRig rig) {
        for (int i = 0; i < 100_000; i++) {
            int work = 0;
            int pending = 0;
            for (HiCacheController c : rig.ctl) {
                work += c.doAgentWork();
                pending += c.completionAgent().inFlight();
            }
            if (!rig.advance() && work == 0 && pending == 0) {
                return;
            }
        }
        throw new AssertionError("agents did not finish");
    }

    private static long committed(SimRig rig) {
        long n = 0;
        for (HiCacheController c : rig.ctl) {
            n += c.metrics().get(Metric.BACKUPS_COMMITTED);
        }
        return n;
    }

    private static int inFlight(SimRig rig) {
        int n = 0;
        for (HiCacheController c : rig.ctl) {
            n += c.backupsInFlight();
        }
        return n;
    }
}
