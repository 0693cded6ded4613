package io.hicache.core.lincheck;

import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.RankAgreement;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

/**
 * Lincheck model check of {@link InProcessRankAgreement} with two ranks on their own threads, each following the
 * protocol of {@link io.hicache.core.cp.RankAgreement}: contribute a round, then poll for its result until it is
 * there, then the next round. A step returns what the rank saw, so a torn or mixed-up round result shows up as a
 * non-linearizable answer.
 */
@Param(name = "completed", gen = IntGen.class, conf = "0:5")
public class RankAgreementLincheckTest {
    private final InProcessRankAgreement agreement = new InProcessRankAgreement(2);
    private final Rank rank0 = new Rank(0);
    private final Rank rank1 = new Rank(1);

    @Operation(nonParallelGroup = "rank0")
    public long rank0Step(@Param(name = "completed") int completed) {
        return rank0.step(completed);
    }

    @Operation(nonParallelGroup = "rank1")
    public long rank1Step(@Param(name = "completed") int completed) {
        return rank1.step(completed);
    }

    @Test
    void modelCheck() {
        new ModelCheckingOptions().iterations(30).invocationsPerIteration(500).threads(2).actorsPerThread(4)
            .check(getClass());
    }

    private final class Rank {
        final int rank;
        final RankAgreement.Result out = new RankAgreement.Result();
        final RankAgreement.Contribution words = new RankAgreement.Contribution(2);
        long round;
        boolean open;

        Rank(int rank) {
            this.rank = rank;
        }

        /** -1: contributed; -2: waiting; else round * 1000 + agreed prefix * 10 + (failed seen ? 1 : 0). */
        long step(int completed) {
            if (!open) {
                words.set(0, completed);
                words.set(1, completed == 0 ? 0 : Long.MAX_VALUE);
                agreement.contribute(rank, round, words);
                open = true;
                return -1;
            }
            if (!agreement.tryResult(rank, round, out)) {
                return -2;
            }
            open = false;
            long r = round++;
            return r * 1000 + out.word(0) * 10 + (out.word(1) == Long.MAX_VALUE ? 0 : 1);
        }
    }
}
