package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.cp.GroupState;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link AgreedFifo} sections run by {@link AgreementChannel}s of two ranks: a decided round retires the agreed
 * completed prefix and then the group's first failure, identically on every rank; fingerprints that differ for one
 * sequence number abort everything {@code DIVERGED} on both ranks; digests that differ (an agreement gave the ranks
 * different outcomes) make the rank that committed revoke it; a degraded round hands over to {@code retireDegraded};
 * a warm round allocates nothing, degraded or not.
 */
class AgreedFifoTest {

    /** An agreement that answers every round from {@code degradeFrom} on as degraded, for the ranks in {@code who}. */
    private static final class DegradingAgreement implements RankAgreement {
        final InProcessRankAgreement inner;
        long degradeFrom = Long.MAX_VALUE;
        long degradeUntil = Long.MAX_VALUE;
        long failedRanks = 1;
        long who = -1L;

        DegradingAgreement(int size) {
            inner = new InProcessRankAgreement(size);
        }

        @Override
        public int groupSize() {
            return inner.groupSize();
        }

        @Override
        public void contribute(int rank, long round, Contribution contribution) {
            inner.contribute(rank, round, contribution);
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            if (round >= degradeFrom && round < degradeUntil && (who & (1L << rank)) != 0) {
                out.setDegraded(failedRanks);
                return true;
            }
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

    private static final class Item implements AgreedFifo.Item {
        final long seq;
        long fingerprint;
        boolean resolved;
        boolean failed;

        Item(long seq) {
            this.seq = seq;
            this.fingerprint = 1000 + seq;
        }

        @Override
        public long seq() {
            return seq;
        }

        @Override
        public long fingerprint() {
            return fingerprint;
        }

        @Override
        public boolean unresolved() {
            return !resolved;
        }

        @Override
        public boolean failedLocally() {
            return failed;
        }
    }

    /** One rank: its section, what it retired, its health and its channel. */
    private static final class Rank implements AgreedFifo.Retirer<Item> {
        final List<String> events = new ArrayList<>();
        final HiCacheMetrics metrics = new HiCacheMetrics();
        final GroupHealth health;
        final AgreedFifo<Item> fifo;
        final AgreementChannel channel;
        final List<Item> items = new ArrayList<>();
        final List<Item> committedLastRound = new ArrayList<>();

        Rank(RankAgreement agreement, int rank, int items) {
            health = new GroupHealth(rank, () -> 42, metrics);
            fifo = new AgreedFifo<>(this, health);
            channel = new AgreementChannel(agreement, rank, agreement.groupSize(), AgreementWatchdog.disabled(),
                () -> 0, false, fifo);
            for (int s = 0; s < items; s++) {
                Item it = new Item(s);
                fifo.add(it);
                this.items.add(it);
            }
        }

        @Override
        public boolean retireComplete(Item item) {
            events.add("complete " + item.seq);
            committedLastRound.add(item);
            return true;
        }

        @Override
        public void retireFailed(Item item) {
            events.add("failed " + item.seq);
        }

        @Override
        public int retireDegraded(AbortReason reason) {
            int n = 0;
            while (fifo.size() > 0 && !fifo.at(0).unresolved()) {
                events.add(reason + " " + fifo.pop().seq);
                n++;
            }
            events.add(reason + " round");
            return n;
        }

        @Override
        public void newRound() {
            committedLastRound.clear();
        }

        @Override
        public void revokeLastCommits() {
            for (Item it : committedLastRound) {
                events.add("revoke " + it.seq);
            }
        }

        @Override
        public String itemName() {
            return "item";
        }
    }

    @Test
    void decidedRoundsRetireTheAgreedPrefixAndFailureOnEveryRank() {
        InProcessRankAgreement agreement = new InProcessRankAgreement(2);
        Rank r0 = new Rank(agreement, 0, 4);
        Rank r1 = new Rank(agreement, 1, 4);
        // rank 0: 0 and 1 complete, 2 unresolved; rank 1: 0 complete, 1 failed, 2 complete
        r0.items.get(0).resolved = true;
        r0.items.get(1).resolved = true;
        r1.items.get(0).resolved = true;
        r1.items.get(1).resolved = true;
        r1.items.get(1).failed = true;
        r1.items.get(2).resolved = true;

        assertThat(r0.channel.run()).as("rank 1 has not contributed").isZero();
        assertThat(r1.channel.run()).isEqualTo(2);
        assertThat(r0.channel.run()).isEqualTo(2);
        for (Rank r : List.of(r0, r1)) {
            assertThat(r.events).containsExactly("complete 0", "failed 1");
            assertThat(r.health.state()).isEqualTo(GroupState.HEALTHY);
        }
        // idle or not, every poll opens the next round: both ranks read it and retire nothing more
        assertThat(r1.channel.run()).isZero();
        assertThat(r0.channel.run()).isZero();
        assertThat(r0.channel.roundsApplied()).isEqualTo(r1.channel.roundsApplied());
    }

    @Test
    void fingerprintsThatDifferForOneSequenceNumberAbortEverythingDivergedOnEveryRank() {
        InProcessRankAgreement agreement = new InProcessRankAgreement(2);
        Rank r0 = new Rank(agreement, 0, 3);
        Rank r1 = new Rank(agreement, 1, 3);
        for (Rank r : List.of(r0, r1)) {
            r.items.forEach(it -> it.resolved = true);
        }
        r1.items.get(1).fingerprint = 7; // rank 1's seq 1 is another backup than rank 0's
        r0.channel.run();
        r1.channel.run();
        r0.channel.run();
        for (Rank r : List.of(r0, r1)) {
            assertThat(r.events).as("nothing committed, not even seq 0").startsWith("DIVERGED 0", "DIVERGED 1",
                "DIVERGED 2", "DIVERGED round").allMatch(e -> e.startsWith("DIVERGED"));
            assertThat(r.health.state().cause()).isEqualTo(GroupState.Cause.DIVERGED);
            assertThat(r.health.state().degradedSinceNs()).isEqualTo(42);
            assertThat(r.metrics.get(Metric.CP_DIVERGENCES)).isEqualTo(1);
            assertThat(r.metrics.get(Metric.CP_GROUP_DEGRADED)).isEqualTo(1);
        }
        // the next rounds carry the degraded health: still degraded, counted once
        Item late = new Item(3);
        late.resolved = true;
        r0.fifo.add(late);
        Item late1 = new Item(3);
        late1.resolved = true;
        r1.fifo.add(late1);
        r0.channel.run();
        r1.channel.run();
        r0.channel.run();
        assertThat(r0.events).contains("DIVERGED 3").doesNotContain("complete 3");
        assertThat(r1.events).contains("DIVERGED 3").doesNotContain("complete 3");
        assertThat(r0.metrics.get(Metric.CP_DIVERGENCES)).isEqualTo(1);
    }

    @Test
    void digestsThatDifferMakeTheRankThatCommittedRevokeItAndDegradeTheGroup() {
        DegradingAgreement agreement = new DegradingAgreement(2);
        agreement.degradeFrom = 0;
        agreement.degradeUntil = 1;
        agreement.who = 0b10; // a broken agreement: round 0 is degraded for rank 1 only, decided for rank 0
        agreement.failedRanks = 0b01;
        Rank r0 = new Rank(agreement, 0, 1);
        Rank r1 = new Rank(agreement, 1, 1);
        r0.items.get(0).resolved = true;
        r1.items.get(0).resolved = true;
        r0.channel.run();
        r1.channel.run(); // reads round 0 degraded, contributes round 1 with its degraded health and no commit
        r0.channel.run(); // commits seq 0 in round 0, then round 1's digests differ: it revokes seq 0
        assertThat(r0.events).containsExactly("complete 0", "revoke 0", "DIVERGED round");
        assertThat(r0.health.state().cause()).isEqualTo(GroupState.Cause.DIVERGED);
        r1.channel.run();
        assertThat(r1.events).containsExactly("RANK_FAILED 0", "RANK_FAILED round", "DIVERGED round");
        assertThat(r1.health.state().cause()).as("the first cause stays").isEqualTo(GroupState.Cause.RANK_FAILED);
    }

    @Test
    void warmRoundsAllocateNothingDecidedOrDegraded() {
        assumeTrue(AllocationMeter.supported(), "per-thread allocation counting unsupported by this JVM");
        DegradingAgreement agreement = new DegradingAgreement(1);
        AgreedFifo.Retirer<Item> quiet = new AgreedFifo.Retirer<>() {
            @Override
            public boolean retireComplete(Item item) {
                return true;
            }

            @Override
            public void retireFailed(Item item) {
            }

            @Override
            public int retireDegraded(AbortReason reason) {
                return 0;
            }

            @Override
            public String itemName() {
                return "item";
            }
        };
        GroupHealth health = new GroupHealth(0, () -> 0, new HiCacheMetrics());
        AgreedFifo<Item> fifo = new AgreedFifo<>(quiet, health);
        AgreementChannel channel = new AgreementChannel(agreement, 0, 1, AgreementWatchdog.disabled(), () -> 0, false,
            fifo);
        long[] retired = new long[1];
        AllocationMeter.Loop rounds = () -> {
            for (int i = 0; i < 2_000; i++) {
                retired[0] += channel.run();
            }
        };
        assertThat(AllocationMeter.minBytes(3, 5, rounds)).as("decided rounds").isZero();
        agreement.degradeFrom = channel.roundsApplied();
        assertThat(AllocationMeter.minBytes(3, 5, rounds)).as("degraded rounds (the change itself allocates once)")
            .isZero();
        assertThat(health.state().degraded()).isTrue();
        assertThat(retired[0]).as("every round answered at once, retiring nothing").isZero();
    }

}
