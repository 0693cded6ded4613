package io.hicache.core.internal;

import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.RankAgreement;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link AgreedFifo} over an agreement that can degrade: a decided round retires the agreed completed prefix and then
 * the group's first failure, identically on every rank; a degraded round ({@link RankAgreement.Result#degraded()})
 * hands over to {@code retireDegraded} and never reads minima; rounds go on after it. The loop reuses one result
 * holder, so a warm round allocates nothing, degraded or not.
 */
class AgreedFifoTest {

    /** An in-process agreement that answers every round from {@code degradeFrom} on as degraded. */
    private static final class DegradingAgreement implements RankAgreement {
        final InProcessRankAgreement inner;
        long degradeFrom = Long.MAX_VALUE;
        long failedRanks;

        DegradingAgreement(int size) {
            inner = new InProcessRankAgreement(size);
        }

        @Override
        public int groupSize() {
            return inner.groupSize();
        }

        @Override
        public void contribute(int rank, long round, long completedPrefix, long firstFailedSeq) {
            inner.contribute(rank, round, completedPrefix, firstFailedSeq);
        }

        @Override
        public boolean tryResult(int rank, long round, Result out) {
            if (round >= degradeFrom) {
                out.setDegraded(failedRanks);
                return true;
            }
            return inner.tryResult(rank, round, out);
        }
    }

    private static final class Item implements AgreedFifo.Item {
        final long seq;
        boolean resolved;
        boolean failed;

        Item(long seq) {
            this.seq = seq;
        }

        @Override
        public long seq() {
            return seq;
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

    /** Records what one rank retired; {@code retireDegraded} pops the items resolved on this rank. */
    private static final class Log implements AgreedFifo.Retirer<Item> {
        final List<String> events = new ArrayList<>();
        AgreedFifo<Item> fifo;

        @Override
        public void retireComplete(Item item) {
            events.add("complete " + item.seq);
        }

        @Override
        public void retireFailed(Item item) {
            events.add("failed " + item.seq);
        }

        @Override
        public int retireDegraded() {
            int n = 0;
            while (fifo.size() > 0 && !fifo.at(0).unresolved()) {
                events.add("degraded " + fifo.pop().seq);
                n++;
            }
            events.add("degraded round");
            return n;
        }
    }

    @Test
    void decidedRoundsRetireTheAgreedPrefixAndFailureAndADegradedRoundNeverReadsMinima() {
        DegradingAgreement agreement = new DegradingAgreement(2);
        List<AgreedFifo<Item>> fifos = new ArrayList<>();
        List<Log> logs = new ArrayList<>();
        List<List<Item>> items = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            AgreedFifo<Item> fifo = new AgreedFifo<>(agreement, r);
            Log log = new Log();
            log.fifo = fifo;
            List<Item> mine = new ArrayList<>();
            for (long s = 0; s < 4; s++) {
                Item it = new Item(s);
                fifo.add(it);
                mine.add(it);
            }
            fifos.add(fifo);
            logs.add(log);
            items.add(mine);
        }
        // rank 0: 0 and 1 complete, 2 unresolved; rank 1: 0 complete, 1 failed, 2 complete
        items.get(0).get(0).resolved = true;
        items.get(0).get(1).resolved = true;
        items.get(1).get(0).resolved = true;
        items.get(1).get(1).resolved = true;
        items.get(1).get(1).failed = true;
        items.get(1).get(2).resolved = true;

        assertThat(fifos.get(0).runRound(4, logs.get(0))).as("rank 1 has not contributed").isEqualTo(-1);
        assertThat(fifos.get(1).runRound(4, logs.get(1))).isEqualTo(2);
        assertThat(fifos.get(0).runRound(4, logs.get(0))).isEqualTo(2);
        for (Log log : logs) {
            assertThat(log.events).containsExactly("complete 0", "failed 1");
        }

        // rank 1 is declared failed from round 1 on: rank 0 resolves item 2 and retires it through the degraded path
        agreement.degradeFrom = 1;
        agreement.failedRanks = 0b10;
        items.get(0).get(2).resolved = true;
        assertThat(fifos.get(0).runRound(4, logs.get(0))).isEqualTo(1);
        assertThat(logs.get(0).events).containsExactly("complete 0", "failed 1", "degraded 2", "degraded round");
        // the next round is degraded too, and the loop goes on contributing rounds in order
        assertThat(fifos.get(0).runRound(4, logs.get(0))).isZero();
        assertThat(logs.get(0).events).endsWith("degraded round", "degraded round");
        assertThat(fifos.get(0).size()).isEqualTo(1);
    }

    @Test
    void warmRoundsAllocateNothingDecidedOrDegraded() {
        assumeTrue(AllocationMeter.supported(), "per-thread allocation counting unsupported by this JVM");
        DegradingAgreement agreement = new DegradingAgreement(1);
        AgreedFifo<Item> fifo = new AgreedFifo<>(agreement, 0);
        AgreedFifo.Retirer<Item> retirer = new AgreedFifo.Retirer<>() {
            @Override
            public void retireComplete(Item item) {
            }

            @Override
            public void retireFailed(Item item) {
            }

            @Override
            public int retireDegraded() {
                return 0;
            }
        };
        long[] retiredOrPending = new long[1];
        AllocationMeter.Loop rounds = () -> {
            for (int i = 0; i < 2_000; i++) {
                retiredOrPending[0] += fifo.runRound(0, retirer);
            }
        };
        assertThat(AllocationMeter.minBytes(3, 5, rounds)).as("decided rounds").isZero();
        agreement.failedRanks = 1;
        agreement.degradeFrom = 0;
        assertThat(AllocationMeter.minBytes(3, 5, rounds)).as("degraded rounds").isZero();
        assertThat(retiredOrPending[0]).as("every round answered at once, retiring nothing").isZero();
    }
}
