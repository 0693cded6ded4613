package io.hicache.core.cp;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The contract of {@link RankAgreement.Contribution} and {@link RankAgreement.Result}: a contribution starts as the
 * minimum's identity; a decided result carries the words and no failed ranks, a degraded one the failed ranks and no
 * words, an empty one nothing; every read of what a result does not carry throws {@link IllegalStateException} naming
 * the mistake. And how the in-process agreement fills it: the element-wise minimum, once every rank contributed.
 */
class RankAgreementResultTest {

    private static RankAgreement.Contribution words(long... w) {
        RankAgreement.Contribution c = new RankAgreement.Contribution(w.length);
        for (int i = 0; i < w.length; i++) {
            c.set(i, w[i]);
        }
        return c;
    }

    @Test
    void aContributionStartsAsTheIdentityOfTheMinimumAndRefusesABadWidth() {
        RankAgreement.Contribution c = new RankAgreement.Contribution(3);
        assertThat(c.width()).isEqualTo(3);
        assertThat(c.word(0)).isEqualTo(Long.MAX_VALUE);
        c.set(1, -5);
        long[] acc = {0, 0, Long.MAX_VALUE, 9};
        c.minInto(acc, 1);
        assertThat(acc).containsExactly(0, 0, -5, 9);
        assertThatThrownBy(() -> new RankAgreement.Contribution(0)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("width 0");
        assertThatThrownBy(() -> new RankAgreement.Contribution(RankAgreement.MAX_WORDS + 1))
            .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void anEmptyResultIsNeitherDecidedNorDegradedAndRefusesEveryRead() {
        RankAgreement.Result r = new RankAgreement.Result();
        assertThat(r.decided()).isFalse();
        assertThat(r.degraded()).isFalse();
        assertThatThrownBy(() -> r.word(0)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("word() of an empty agreement result")
            .hasMessageContaining("only after tryResult returned true");
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("failedRanks() of an empty agreement result");
        assertThat(r).hasToString("empty");
    }

    @Test
    void aDecidedResultCarriesTheWordsAndNoFailedRanks() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDecided(new long[] {7, 12, Long.MAX_VALUE}, 1, 2);
        assertThat(r.decided()).isTrue();
        assertThat(r.degraded()).isFalse();
        assertThat(r.width()).isEqualTo(2);
        assertThat(r.word(0)).isEqualTo(12);
        assertThat(r.word(1)).isEqualTo(Long.MAX_VALUE);
        assertThatThrownBy(() -> r.word(2)).isInstanceOf(IndexOutOfBoundsException.class);
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("failedRanks() of a decided agreement result")
            .hasMessageContaining("check degraded() first");
        assertThat(r).hasToString("decided[12, 9223372036854775807]");
    }

    @Test
    void aDegradedResultNamesTheFailedRanksAndRefusesItsWords() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDegraded(0b101);
        assertThat(r.degraded()).isTrue();
        assertThat(r.decided()).isFalse();
        assertThat(r.failedRanks()).isEqualTo(0b101);
        assertThatThrownBy(() -> r.word(0)).isInstanceOf(IllegalStateException.class)
            .hasMessage("word() of a degraded agreement result: a degraded round (failed ranks 0b101)"
                + " carries no words; check degraded() first");
        assertThat(r).hasToString("degraded(failedRanks=0b101)");
    }

    @Test
    void aDegradedRoundMustNameAFailedRankAndARefusedWriteChangesNothing() {
        RankAgreement.Result r = new RankAgreement.Result();
        r.setDecided(new long[] {3, 4}, 0, 2);
        assertThatThrownBy(() -> r.setDegraded(0)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("must name at least one failed rank");
        assertThat(r.decided()).isTrue();
        assertThat(r.word(1)).isEqualTo(4);
    }

    @Test
    void eachWriteReplacesThePreviousResultAndClearEmptiesIt() {
        RankAgreement.Result r = new RankAgreement.Result();
        RankAgreement.Result other = new RankAgreement.Result();
        r.setDegraded(1L << 63);
        r.setDecided(new long[] {-1}, 0, 1);
        assertThat(r.word(0)).isEqualTo(-1);
        other.setDecided(new long[] {-1}, 0, 1);
        assertThat(r.sameOutcome(other)).isTrue();
        other.setDecided(new long[] {-2}, 0, 1);
        assertThat(r.sameOutcome(other)).isFalse();
        assertThatThrownBy(r::failedRanks).isInstanceOf(IllegalStateException.class);
        r.setDegraded(1L << 63);
        assertThat(r.failedRanks()).isEqualTo(Long.MIN_VALUE);
        assertThat(r.sameOutcome(other)).isFalse();
        r.clear();
        assertThat(r.decided()).isFalse();
        assertThat(r.degraded()).isFalse();
    }

    @Test
    void theInProcessAgreementDecidesTheElementWiseMinimumOnceEveryRankContributed() {
        InProcessRankAgreement a = new InProcessRankAgreement(2);
        RankAgreement.Result r = new RankAgreement.Result();
        long v = 0x0123_4567_89AB_CDEFL;
        a.contribute(0, 0, words(5, Long.MAX_VALUE, v, ~v));
        assertThat(a.tryResult(0, 0, r)).isFalse();
        assertThat(r.decided()).isFalse();
        a.contribute(1, 0, words(3, 4, v + 1, ~(v + 1)));
        assertThat(a.tryResult(0, 0, r)).isTrue();
        assertThat(r.decided()).isTrue();
        assertThat(r.word(0)).isEqualTo(3);
        assertThat(r.word(1)).isEqualTo(4);
        // a value and its complement give the minimum and the maximum: the ranks differ
        assertThat(r.word(2)).isEqualTo(v);
        assertThat(~r.word(3)).isEqualTo(v + 1);

        a.contribute(0, 1, words(8, 0, 0, 0));
        assertThat(a.tryResult(0, 1, r)).isFalse();
        assertThat(r.word(0)).as("untouched: still round 0's result").isEqualTo(3);
        assertThatThrownBy(() -> a.tryResult(0, 1, null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> a.contribute(0, 1, words(1, 1, 1, 1))).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("in order, once each");
        assertThatThrownBy(() -> a.contribute(1, 1, words(1))).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("carry 4");
    }

    @Test
    void aRankThatLeavesDegradesTheFirstUndecidedRoundAndEveryLaterOneOnEveryRank() {
        InProcessRankAgreement a = new InProcessRankAgreement(3);
        RankAgreement.Result r = new RankAgreement.Result();
        for (int rank = 0; rank < 3; rank++) {
            a.contribute(rank, 0, words(rank));
        }
        a.contribute(0, 1, words(1));
        a.leave(2);
        assertThat(a.tryResult(0, 0, r)).isTrue();
        assertThat(r.decided()).as("round 0 was decided before the leave").isTrue();
        assertThat(a.tryResult(0, 1, r)).isTrue();
        assertThat(r.degraded()).isTrue();
        assertThat(r.failedRanks()).isEqualTo(0b100);
        a.contribute(1, 1, words(1));
        assertThat(a.tryResult(1, 1, r)).isTrue();
        assertThat(r.degraded()).isTrue();
        a.contribute(1, 2, words(1));
        assertThat(a.tryResult(1, 2, r)).isTrue();
        assertThat(r.degraded()).as("sticky").isTrue();
        assertThat(a.failureDetectionNs()).isEqualTo(Long.MAX_VALUE);
    }
}
