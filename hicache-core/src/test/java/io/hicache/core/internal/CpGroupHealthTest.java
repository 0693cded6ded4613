package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePagePool;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.cp.GroupState;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

import static io.hicache.core.internal.FacadeRig.PAGE;
import static io.hicache.core.internal.FacadeRig.insert;
import static io.hicache.core.internal.FacadeRig.tokens;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A CP group's health through the facade, two ranks each on its own simulated device: a rank that skips a
 * reservation makes both ranks abort it {@code DIVERGED} and commit nothing on one rank only; an agreement that gives
 * the ranks different outcomes for a round has the commit revoked where it happened; a sealed backup whose agreement
 * never answers is released at its time limit; a blocking agreement is seen by the watchdog; {@code close()} leaves the
 * group; the four-argument {@code cpGroup} carries loads in the backups' rounds; and a degraded group says so (its
 * state, its meters) and reports no host hit.
 */
class CpGroupHealthTest {
    private final List<FacadeRig> rigs = new ArrayList<>();
    private final List<HiCache> caches = new ArrayList<>();

    @AfterEach
    void close() {
        caches.forEach(HiCache::close);
        rigs.forEach(FacadeRig::close);
    }

    /** Rank {@code r} of a group of {@code n} over {@code agreement} (and {@code loads}, or null for the same rounds). */
    private HiCache rank(int n, int r, RankAgreement agreement, RankAgreement loads,
                         java.util.function.UnaryOperator<HiCache.Builder> more) {
        FacadeRig rig = new FacadeRig();
        rigs.add(rig);
        HiCache.Builder b = rig.builder().leaseNs(0);
        b = loads == null ? b.cpGroup(n, r, OwnerLanes.Standard.ROUND_ROBIN, agreement)
            : b.cpGroup(n, r, OwnerLanes.Standard.ROUND_ROBIN, agreement, loads);
        HiCache cache = more.apply(b).build();
        caches.add(cache);
        return cache;
    }

    private FacadeRig rig(int r) {
        return rigs.get(r);
    }

    /** Steps every rank (agents, device, poll) until {@code done}, at most {@code steps} rounds. */
    private boolean pump(BooleanSupplier done, int steps) {
        for (int i = 0; i < steps && !done.getAsBoolean(); i++) {
            for (int r = 0; r < caches.size(); r++) {
                HiCache c = caches.get(r);
                if (!c.isClosed()) {
                    c.doAgentWork();
                    rig(r).gpu.advanceToNextEvent();
                    c.poll();
                }
            }
        }
        return done.getAsBoolean();
    }

    private static BackupHandle reserveOne(HiCache cache, RadixNode node) {
        List<BackupHandle> out = new ArrayList<>();
        assertThat(cache.reserveByPolicy(node, false, out)).isEqualTo(1);
        return out.getFirst();
    }

    private static boolean terminal(BackupHandle... backups) {
        for (BackupHandle b : backups) {
            if (!b.state().terminal()) {
                return false;
            }
        }
        return true;
    }

    @Test
    void aRankThatSkipsAReservationAbortsItDivergedOnBothRanksAndNothingIsCommittedOnOneRankOnly() {
        InProcessRankAgreement agreement = new InProcessRankAgreement(2);
        HiCache r0 = rank(2, 0, agreement, null, b -> b);
        HiCache r1 = rank(2, 1, agreement, null, b -> b);
        DevicePagePool p0 = FacadeRig.pages();
        DevicePagePool p1 = FacadeRig.pages();

        // seq 0 on both: agreed and committed everywhere
        BackupHandle a0 = reserveOne(r0, insert(r0, p0, 100, 2));
        BackupHandle a1 = reserveOne(r1, insert(r1, p1, 100, 2));
        rig(0).forward(r0, List.of(a0));
        rig(1).forward(r1, List.of(a1));
        assertThat(pump(() -> terminal(a0, a1), 1_000)).isTrue();
        assertThat(a0.state()).isEqualTo(BackupState.COMMITTED);
        assertThat(a1.state()).isEqualTo(BackupState.COMMITTED);

        // rank 1 skips the reservation rank 0 makes: from here on the ranks' seq 1 means different nodes
        RadixNode b0Node = insert(r0, p0, 200, 2);
        insert(r1, p1, 200, 2);
        BackupHandle b0 = reserveOne(r0, b0Node);
        BackupHandle c0 = reserveOne(r0, insert(r0, p0, 300, 2));
        BackupHandle c1 = reserveOne(r1, insert(r1, p1, 300, 2));
        rig(0).forward(r0, List.of(b0, c0));
        rig(1).forward(r1, List.of(c1));
        assertThat(pump(() -> terminal(b0, c0, c1), 1_000)).isTrue();

        for (BackupHandle b : List.of(b0, c0, c1)) {
            assertThat(b.state()).as("%s", b).isEqualTo(BackupState.ABORTED);
            assertThat(b.abortReason()).as("%s", b).isEqualTo(AbortReason.DIVERGED);
        }
        for (HiCache c : List.of(r0, r1)) {
            GroupState s = c.groupState();
            assertThat(s.cause()).isEqualTo(GroupState.Cause.DIVERGED);
            assertThat(s.degradedSinceNs()).isNotNegative();
            assertThat(s.failedRanks()).as("every rank is alive").isZero();
            assertThat(c.metric(Metric.CP_DIVERGENCES)).as("counted once").isEqualTo(1);
            assertThat(c.metric(Metric.CP_GROUP_DEGRADED)).isEqualTo(1);
            assertThat(c.metrics().abortedBy(AbortReason.DIVERGED)).isEqualTo(c == r0 ? 2 : 1);
            assertThat(c.tree().hostPagesCommitted()).as("only seq 0's node, on both ranks").isEqualTo(2);
            assertThat(c.tree().hostPagesPending()).isZero();
            assertThat(c.tree().devicePagesLocked()).as("nothing pinned").isZero();
            assertThat(c.backupsInFlight()).isZero();
        }
        // a degraded group reports no host hit: none could be loaded
        int[] t = tokens(100, 2);
        r0.evictDevice(100, p0);
        MatchResult m = r0.match(t, 0, t.length, new MatchResult());
        assertThat(m.deviceTokenCount()).isZero();
        assertThat(m.hostTokenCount()).as("seq 0 is committed, but its group can load nothing").isZero();
        // and later reservations abort too, with the same reason
        BackupHandle later = reserveOne(r0, insert(r0, p0, 400, 1));
        rig(0).forward(r0, List.of(later));
        assertThat(pump(() -> terminal(later), 1_000)).isTrue();
        assertThat(later.abortReason()).isEqualTo(AbortReason.DIVERGED);
    }

    /**
     * A broken agreement that answers the round completing seq 0 degraded to rank 1 only (what an all-reduce with a
     * timeout does to a rank that stalled across it), then decides normally again.
     */
    private static final class SplittingAgreement implements RankAgreement {
        final InProcessRankAgreement inner = new InProcessRankAgreement(2);
        boolean split;

        @Override
        public int groupSize() {
            return 2;
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
            inner.contribute(rank, round, contribution);
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            if (!inner.tryResult(rank, round, out)) {
                return false;
            }
            if (rank == 1 && !split && out.decided() && out.word(0) >= 1) { // the backups' completed prefix
                split = true;
                out.setDegraded(0b01);
            }
            return true;
        }

        @Override
        public void leave(int rank) {
            inner.leave(rank);
        }

        @Override
        public long failureDetectionNs() {
            return Long.MAX_VALUE;
        }
    }

    @Test
    void aRoundTheAgreementAnsweredDifferentlyIsDetectedAtTheNextAndRevokedWhereItCommitted() {
        SplittingAgreement agreement = new SplittingAgreement();
        HiCache r0 = rank(2, 0, agreement, null, b -> b);
        HiCache r1 = rank(2, 1, agreement, null, b -> b);
        DevicePagePool p0 = FacadeRig.pages();
        DevicePagePool p1 = FacadeRig.pages();
        BackupHandle a0 = reserveOne(r0, insert(r0, p0, 100, 2));
        BackupHandle a1 = reserveOne(r1, insert(r1, p1, 100, 2));
        rig(0).forward(r0, List.of(a0));
        rig(1).forward(r1, List.of(a1));
        assertThat(pump(() -> terminal(a0, a1) && r0.groupState().degraded() && r0.metric(Metric.CP_HOST_REVOKED) > 0,
            1_000)).isTrue();

        assertThat(a0.state()).as("committed on rank 0 before the ranks could know").isEqualTo(BackupState.COMMITTED);
        assertThat(a1.abortReason()).isEqualTo(AbortReason.RANK_FAILED);
        assertThat(r0.groupState().cause()).isEqualTo(GroupState.Cause.DIVERGED);
        assertThat(r1.groupState().cause()).isEqualTo(GroupState.Cause.RANK_FAILED);
        assertThat(r0.metric(Metric.CP_HOST_REVOKED)).isEqualTo(1);
        assertThat(r0.tree().hostPagesCommitted()).as("revoked: no rank serves it").isZero();
        assertThat(r0.hostPool().freePages()).isEqualTo(r0.hostPool().capacityPages());
        assertThat(r0.tree().devicePagesCached()).as("its device pages stay a device hit").isEqualTo(2);
        int[] t = tokens(100, 2);
        assertThat(r0.match(t, 0, t.length, new MatchResult()).deviceTokenCount()).isEqualTo(2 * PAGE);
    }

    /** An agreement that takes every contribution and never answers. */
    private static final class SilentAgreement implements RankAgreement {
        @Override
        public int groupSize() {
            return 2;
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            return false;
        }

        @Override
        public void leave(int rank) {
        }

        @Override
        public long failureDetectionNs() {
            return Long.MAX_VALUE;
        }
    }

    @Test
    void aSealedBackupWhoseAgreementNeverAnswersIsReleasedAtItsTimeLimit() {
        long limitNs = TimeUnit.MILLISECONDS.toNanos(5);
        HiCache r0 = rank(2, 0, new SilentAgreement(), null, b -> b.sealedTimeLimitNs(limitNs));
        DevicePagePool p0 = FacadeRig.pages();
        BackupHandle a0 = reserveOne(r0, insert(r0, p0, 100, 2));
        rig(0).forward(r0, List.of(a0));
        assertThat(pump(() -> a0.state() == BackupState.SEALED, 1_000)).isTrue();
        assertThat(r0.tree().devicePagesEvictable()).as("pinned while sealed").isZero();
        rig(0).gpu.advanceTo(rig(0).gpu.nowNs() + 2 * limitNs);
        r0.poll();

        assertThat(a0.state()).isEqualTo(BackupState.ABORTED);
        assertThat(a0.abortReason()).isEqualTo(AbortReason.AGREEMENT_TIMEOUT);
        assertThat(r0.tree().devicePagesEvictable()).as("its device pages are the engine's again").isEqualTo(2);
        assertThat(r0.tree().hostPagesPending()).isZero();
        assertThat(r0.hostPool().freePages()).isEqualTo(r0.hostPool().capacityPages());
        assertThat(r0.groupState().cause()).isEqualTo(GroupState.Cause.AGREEMENT_TIMEOUT);
    }

    /** An agreement whose {@code contribute} blocks until released: an all-reduce inside it. */
    private static final class BlockingAgreement implements RankAgreement {
        final CountDownLatch release = new CountDownLatch(1);
        final CountDownLatch entered = new CountDownLatch(1);

        @Override
        public int groupSize() {
            return 2;
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
            entered.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            return false;
        }

        @Override
        public void leave(int rank) {
        }

        @Override
        public long failureDetectionNs() {
            return Long.MAX_VALUE;
        }
    }

    @Test
    void aPollBlockedInsideTheAgreementIsCountedByTheWatchdog() throws Exception {
        BlockingAgreement agreement = new BlockingAgreement();
        HiCache r0 = rank(2, 0, agreement, null,
            b -> b.checkThread(false).agreementWatchdogNs(TimeUnit.MILLISECONDS.toNanos(20)));
        Thread poller = new Thread(r0::poll, "blocked-poller");
        poller.start();
        assertThat(agreement.entered.await(10, TimeUnit.SECONDS)).isTrue();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (r0.metric(Metric.CP_AGREEMENT_BLOCKED) == 0 && System.nanoTime() < deadline) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5)); // waiting for the watchdog thread's count
        }
        assertThat(r0.metric(Metric.CP_AGREEMENT_BLOCKED)).as("one blocked call, counted once").isEqualTo(1);
        agreement.release.countDown();
        poller.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(poller.isAlive()).isFalse();
    }

    @Test
    void closingARankLeavesTheGroupSoTheOthersDegradeAtOnce() {
        InProcessRankAgreement agreement = new InProcessRankAgreement(2);
        HiCache r0 = rank(2, 0, agreement, null, b -> b);
        HiCache r1 = rank(2, 1, agreement, null, b -> b);
        DevicePagePool p0 = FacadeRig.pages();
        r1.close();
        BackupHandle a0 = reserveOne(r0, insert(r0, p0, 100, 2));
        rig(0).forward(r0, List.of(a0));
        assertThat(pump(() -> terminal(a0), 1_000)).isTrue();
        assertThat(a0.abortReason()).isEqualTo(AbortReason.RANK_FAILED);
        GroupState s = r0.groupState();
        assertThat(s.cause()).isEqualTo(GroupState.Cause.RANK_FAILED);
        assertThat(s.failedRanks()).isEqualTo(0b10);
        assertThat(s.isFailed(1)).isTrue();
        assertThat(r0.metric(Metric.CP_FAILED_RANKS)).isEqualTo(1);
        assertThat(r1.groupState().healthy()).as("answers after close").isTrue();
    }

    /** An engine's agreement that knows nothing of channels: the four-argument cpGroup runs loads in its rounds. */
    private static final class OneChannel implements RankAgreement {
        final InProcessRankAgreement inner = new InProcessRankAgreement(2);

        @Override
        public int groupSize() {
            return 2;
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
            inner.contribute(rank, round, contribution);
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            return inner.tryResult(rank, round, out);
        }

        @Override
        public void leave(int rank) {
            inner.leave(rank);
        }

        @Override
        public long failureDetectionNs() {
            return Long.MAX_VALUE;
        }
    }

    @Test
    void theFourArgumentCpGroupCarriesLoadsInTheBackupsRounds() {
        OneChannel agreement = new OneChannel();
        HiCache r0 = rank(2, 0, agreement, null, b -> b.loadThresholdTokens(0));
        HiCache r1 = rank(2, 1, agreement, null, b -> b.loadThresholdTokens(0));
        DevicePagePool[] pools = {FacadeRig.pages(), FacadeRig.pages()};
        BackupHandle a0 = reserveOne(r0, insert(r0, pools[0], 100, 2));
        BackupHandle a1 = reserveOne(r1, insert(r1, pools[1], 100, 2));
        rig(0).forward(r0, List.of(a0));
        rig(1).forward(r1, List.of(a1));
        assertThat(pump(() -> terminal(a0, a1), 1_000)).isTrue();
        LoadHandle[] loads = new LoadHandle[2];
        int[] t = tokens(100, 2);
        for (int r = 0; r < 2; r++) {
            HiCache c = caches.get(r);
            c.evictDevice(2, pools[r]);
            MatchResult m = c.match(t, 0, t.length, new MatchResult());
            assertThat(m.hostTokenCount()).isEqualTo(2 * PAGE);
            loads[r] = c.loadBack(m, 7, Integer.MAX_VALUE, pools[r]);
            assertThat(loads[r]).isNotNull();
            c.startLoading();
        }
        assertThat(pump(() -> loads[0].state() == LoadHandle.State.LOADED && loads[1].state() == LoadHandle.State.LOADED,
            1_000)).isTrue();
        assertThat(r0.groupState().healthy()).isTrue();
    }
}
