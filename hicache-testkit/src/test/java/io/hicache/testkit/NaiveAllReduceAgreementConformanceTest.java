package io.hicache.testkit;

import io.hicache.core.cp.RankAgreement;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The conformance kit catches a deliberately naive agreement ({@link NaiveAllReduceAgreement}: an all-reduce with a
 * timeout inside {@code contribute}): it blocks the caller, lets a rank the others declared failed (it stalled across
 * the timeout) go on deciding rounds as if nothing happened, and forgets a degradation at the next round. It still
 * passes what needs no timeout, so the kit does not simply fail everything.
 */
class NaiveAllReduceAgreementConformanceTest {
    private static final long TIMEOUT_NS = TimeUnit.MILLISECONDS.toNanos(700);

    private static RankAgreementConformance kit() {
        return new RankAgreementConformance("the naive all-reduce", new RankAgreementConformance.Fixture() {
            @Override
            public RankAgreementConformance.Group open(int size) {
                NaiveAllReduceAgreement agreement = new NaiveAllReduceAgreement(size, TIMEOUT_NS);
                return new RankAgreementConformance.Group() {
                    @Override
                    public RankAgreement agreement(int rank) {
                        return agreement;
                    }

                    @Override
                    public void close() {
                    }
                };
            }

            @Override
            public long stallNs() {
                return 2 * TIMEOUT_NS;
            }
        }).callBoundNs(TimeUnit.MILLISECONDS.toNanos(400)).slackNs(TimeUnit.SECONDS.toNanos(3));
    }

    @Test
    void itPassesWhenNothingGoesWrong() throws Exception {
        assertThat(kit().decidesTheMinimum()).isTrue();
    }

    @Test
    void aRankStalledInsideItsCollectiveNeverLearnsTheOthersDeclaredItFailed() {
        assertThatThrownBy(() -> kit().stalledRankAfterContributing()).isInstanceOf(AssertionError.class)
            .hasMessageContaining("fails stalledRankAfterContributing")
            .hasMessageContaining("rank 1 was declared failed in round 6 but obtained round 7 decided");
    }

    @Test
    void itBlocksThePollWhileAPeerIsSilent() {
        assertThatThrownBy(() -> kit().stalledRankBeforeContributing()).isInstanceOf(AssertionError.class)
            .hasMessageContaining("must not block");
    }

    @Test
    void itForgetsADegradedRound() {
        assertThatThrownBy(() -> kit().stalledRankAfterContributing()).isInstanceOf(AssertionError.class)
            .hasMessageContaining("degradation must be sticky");
    }

    @Test
    void aRankThatLeavesHoldsTheOthersUpUntilTheirTimeout() {
        assertThatThrownBy(() -> kit().leavingRank()).isInstanceOf(AssertionError.class)
            .hasMessageContaining("must not block");
    }
}
