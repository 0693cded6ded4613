package io.hicache.core.internal;

import io.hicache.core.BackupState;
import io.hicache.core.DevicePageSink;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Allocation regression guard for the controller's hot paths on the simulated device: {@code beginForward}, the
 * per-layer hooks, {@code endForward}, the submitter's and completion agent's duty cycles and the commit in
 * {@link HiCacheController#poll()} must allocate nothing once warm. Bytes are counted with {@link AllocationMeter}
 * around each controller call only (the rig's device advances and kernels, and the reservations, run unmeasured in
 * between), and <b>every</b> measured round of {@link #wholeForwardFromBeginToCommitAllocatesNothing} must allocate 0
 * bytes; nothing depends on timing. The two older, larger probes (2,304 hooks in a row; 32 commits per poll) keep
 * the minimum over their measured rounds: a tier-up or deoptimization of the code they loop over occasionally
 * reallocates a few hundred bytes of scalar-replaced objects inside their window.
 */
class HotPathAllocationTest {
    private static final int WARMUP_ROUNDS = 200;
    private static final int MEASURED_ROUNDS = 20;
    /** Rounds of 2,304 hooks each before measuring. */
    private static final int HOOK_WARMUP_ROUNDS = 10;

    @BeforeAll
    static void meterWorks() {
        assumeTrue(AllocationMeter.supported(), "per-thread allocation counting unsupported by this JVM");
    }

    /** Sums the bytes the calling thread allocates inside {@link #start()}..{@link #stop()} sections. */
    private static final class Meter {
        long bytes;
        private long from;

        void start() {
            from = AllocationMeter.threadAllocatedBytes();
        }

        void stop() {
            bytes += AllocationMeter.threadAllocatedBytes() - from;
        }
    }

    /** From beginForward to the commit: hooks, endForward, agent duty cycles and polls, each round 0 bytes. */
    @ParameterizedTest(name = "cp={0}")
    @ValueSource(ints = {1, 2})
    void wholeForwardFromBeginToCommitAllocatesNothing(int cp) {
        int layers = 8;
        int draftLayers = 2;
        try (SimRig rig = SimRig.builder().cp(cp, OwnerLanes.Standard.ROUND_ROBIN).layers(layers, draftLayers)
            .pages(4, 64, 64).controller(b -> b.maxForwardsInFlight(2)).build()) {
            Meter meter = new Meter();
            ForwardHooksArray h = new ForwardHooksArray(cp);
            for (int round = 0; round < WARMUP_ROUNDS + MEASURED_ROUNDS; round++) {
                RadixNode[] last = rig.insert(ControllerBasicTest.tokens(1_000 * round, 8));
                List<List<Backup>> backups = rig.reserveByPolicy(last, true);
                meter.bytes = 0;
                for (int r = 0; r < cp; r++) {
                    List<Backup> mine = backups.get(r);
                    meter.start();
                    h.h[r] = rig.ctl[r].beginForward(mine);
                    meter.stop();
                }
                for (int l = 0; l < layers; l++) {
                    for (int r = 0; r < cp; r++) {
                        rig.rt[r].simulateKernel(rig.ctl[r].computeStream(), 1_000);
                        meter.start();
                        h.h[r].targetLayerStored(l);
                        meter.stop();
                    }
                }
                for (int r = 0; r < cp; r++) {
                    meter.start();
                    for (int d = 0; d < draftLayers; d++) {
                        h.h[r].draftLayerStored(d);
                    }
                    h.h[r].endForward();
                    meter.stop();
                }
                for (int step = 0; step < 10_000 && !committedEverywhere(backups); step++) {
                    for (int r = 0; r < cp; r++) {
                        meter.start();
                        rig.ctl[r].doAgentWork();
                        meter.stop();
                    }
                    rig.advance();
                    for (int r = 0; r < cp; r++) {
                        meter.start();
                        rig.ctl[r].poll();
                        meter.stop();
                    }
                }
                assertThat(committedEverywhere(backups)).as("round %d committed", round).isTrue();
                for (int r = 0; r < cp; r++) {
                    DevicePageSink sink = r == 0 ? rig::freeDevicePages : (pages, off, count) -> { };
                    rig.ctl[r].evictDevice(2, sink);
                }
                if (round >= WARMUP_ROUNDS) {
                    assertThat(meter.bytes).as("bytes allocated from beginForward to commit in measured round %d",
                        round - WARMUP_ROUNDS).isZero();
                }
            }
        }
    }

    private static final class ForwardHooksArray {
        final ForwardHandle[] h;

        ForwardHooksArray(int cp) {
            h = new ForwardHandle[cp];
        }
    }

    private static boolean committedEverywhere(List<List<Backup>> backups) {
        for (List<Backup> perRank : backups) {
            for (Backup b : perRank) {
                if (b.state() != BackupState.COMMITTED) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * Bytes the hooks of one forward allocate. A method of its own, so the measured window never contains an
     * on-stack replacement or deoptimization of the large test method (which reallocates its scalar-replaced
     * objects on this thread).
     */
    private static long hookBytes(ForwardHandle h, int layers, int draftLayers) {
        long before = AllocationMeter.threadAllocatedBytes();
        for (int l = 0; l < layers; l++) {
            h.targetLayerStored(l);
        }
        for (int d = 0; d < draftLayers; d++) {
            h.draftLayerStored(d);
        }
        return AllocationMeter.threadAllocatedBytes() - before;
    }

    @Test
    void targetAndDraftHooksAllocateNothing() {
        int layers = 2048;
        int draftLayers = 256;
        try (SimRig rig = SimRig.builder().layers(layers, draftLayers).pages(4, 64, 64)
            .controller(b -> b.maxForwardsInFlight(2)).build()) {
            long min = Long.MAX_VALUE;
            for (int round = 0; round < HOOK_WARMUP_ROUNDS + MEASURED_ROUNDS; round++) {
                RadixNode[] last = rig.insert(ControllerBasicTest.tokens(1_000 * round, 8));
                List<List<Backup>> backups = rig.reserveByPolicy(last, true);
                assertThat(backups.get(0)).hasSize(1);
                ForwardHandle h = rig.ctl[0].beginForward(backups.get(0));
                long used = hookBytes(h, layers, draftLayers);
                h.endForward();
                rig.drain();
                assertThat(backups.get(0).get(0).state()).isEqualTo(BackupState.COMMITTED);
                rig.ctl[0].evictDevice(2, rig::freeDevicePages);
                rig.rt[0].runUntilIdle(); // the device's queues start every round empty
                if (round >= HOOK_WARMUP_ROUNDS) {
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
        try (SimRig rig = SimRig.builder().cp(cp, OwnerLanes.Standard.ROUND_ROBIN).layers(4, 0)
            .pages(pageSize, 256, 256).controller(b -> b.maxForwardsInFlight(4)).build()) {
            int nextToken = 0;
            long min = Long.MAX_VALUE;
            for (int round = 0; round < 4 + MEASURED_ROUNDS / 4; round++) {
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
                if (round >= 4) {
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
