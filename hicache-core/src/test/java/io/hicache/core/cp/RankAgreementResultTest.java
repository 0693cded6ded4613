package io.hicache.core.cp;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of {@link RankAgreement.Result}: a decided result carries the minima and no failed ranks, a degraded
 * one the failed ranks and no minima, an empty one nothing; every read of what a result does not carry throws
 * {@link IllegalStateException} naming the mistake. And how the in-process agreement fills it.
 */
class RankAgreementResultTest {

    @Test
    void anEmptyResultIsNeitherDecidedNorDegradedAndRefusesEveryRead() {
        RankAgreement.Result r = new RankAgreement.Result();
        assertThat(r.decided()).isFalse();
        assertThat(r.degraded()).isFalse();
        assertThatThrownBy(r::minCompletedPrefix).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("minCompletedPrefix() of an empty agreement result")
            .hasMessageContaining("only after tryResult returned true");
        assertThatThrownBy(r::minFirstFailedSeq).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("minFirstFailedSeq() of an empty agreement result");
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("failedRanks() of an empty agreement result");
        assertThat(r).hasToString("empty");
    }

    @Test
    void aDecidedResultCarriesTheMinimaAndNoFailedRanks() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDecided(12, Long.MAX_VALUE);
        assertThat(r.decided()).isTrue();
        assertThat(r.degraded()).isFalse();
        assertThat(r.minCompletedPrefix()).isEqualTo(12);
        assertThat(r.minFirstFailedSeq()).isEqualTo(Long.MAX_VALUE);
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("failedRanks() of a decided agreement result")
            .hasMessageContaining("check degraded() first");
        assertThat(r).hasToString("decided(minCompletedPrefix=12, minFirstFailedSeq=9223372036854775807)");
    }

    @Test
    void aDegradedResultNamesTheFailedRanksAndRefusesItsMinima() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDegraded(0b101);
        assertThat(r.degraded()).isTrue();
        assertThat(r.decided()).isFalse();
        assertThat(r.failedRanks()).isEqualTo(0b101);
        assertThatThrownBy(r::minCompletedPrefix).isInstanceOf(IllegalStateException.class)
            .hasMessage("minCompletedPrefix() of a degraded agreement result: a degraded round (failed ranks 0b101)"
                + " carries no minima; check degraded() first");
        assertThatThrownBy(r::minFirstFailedSeq).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("a degraded round (failed ranks 0b101) carries no minima");
        assertThat(r).hasToString("degraded(failedRanks=0b101)");
    }

    @Test
    void aDegradedRoundMustNameAFailedRankAndARefusedWriteChangesNothing() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDecided(3, 4);
        assertThatThrownBy(() -> r.setDegraded(0)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("must name at least one failed rank");
        assertThat(r.decided()).isTrue();
        assertThat(r.minCompletedPrefix()).isEqualTo(3);
        assertThat(r.minFirstFailedSeq()).isEqualTo(4);
    }

    @Test
    void eachWriteReplacesThePreviousResultAndClearEmptiesIt() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDegraded(1L << 63);
        r.setDecided(-1, 0);
        assertThat(r.decided()).isTrue();
        assertThat(r.minCompletedPrefix()).isEqualTo(-1);
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class);
        r.setDegraded(1L << 63);
        assertThat(r.degraded()).isTrue();
        assertThat(r.failedRanks()).isEqualTo(Long.MIN_VALUE);
        assertThatThrownBy(r::minCompletedPrefix).isInstanceOf(IllegalStateException.class);
        r.clear();
        assertThat(r.decided()).isFalse();
        assertThat(r.degraded()).isFalse();
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void theInProcessAgreementLeavesTheResultUntouchedUntilEveryRankContributedThenDecidesTheMinima() {
        InProcessRankAgreement a = new InProcessRankAgreement(2);
        RankAgreement.Result r = new RankAgreement.Result();
        a.contribute(0, 0, 5, Long.MAX_VALUE);
        assertThat(a.tryResult(0, 0, r)).isFalse();
        assertThat(r.decided()).isFalse();
        assertThat(r.degraded()).isFalse();
        a.contribute(1, 0, 3, 4);
        assertThat(a.tryResult(0, 0, r)).isTrue();
        assertThat(r.decided()).isTrue();
        assertThat(r.minCompletedPrefix()).isEqualTo(3);
        assertThat(r.minFirstFailedSeq()).isEqualTo(4);

        a.contribute(0, 1, 8, Long.MAX_VALUE);
        assertThat(a.tryResult(0, 1, r)).isFalse();
        assertThat(r.minCompletedPrefix()).as("untouched: still round 0's result").isEqualTo(3);
        assertThatThrownBy(() -> a.tryResult(0, 1, null)).isInstanceOf(NullPointerException.class);
    }
}
