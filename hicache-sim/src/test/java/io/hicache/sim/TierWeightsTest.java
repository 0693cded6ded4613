package io.hicache.sim;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TierWeightsTest {
    @Test
    void parsesPairsAliasesAndLeavesTiersNotNamedAtOne() {
        assertThat(TierWeights.parse("device=1,host=0.75,l3=0.25")).isEqualTo(TierWeights.DYNAMO);
        assertThat(TierWeights.parse(" GPU = 1 , cpu=0.8")).isEqualTo(new TierWeights(1, 0.8, 1));
        assertThat(TierWeights.parse("disk=0")).isEqualTo(new TierWeights(1, 1, 0));
        assertThat(TierWeights.parse("storage=0.5").l3()).isEqualTo(0.5);
        assertThat(TierWeights.parse(TierWeights.DYNAMO.toString())).isEqualTo(TierWeights.DYNAMO);
        assertThat(TierWeights.UNIT.isUnit()).isTrue();
        assertThat(TierWeights.DYNAMO.isUnit()).isFalse();
    }

    @Test
    void refusesWeightsOutsideZeroToOneUnknownTiersAndMalformedPairs() {
        assertThatThrownBy(() -> TierWeights.parse("device=1,host=1.5")).hasMessage(
                "--tier-weights: the weight of host must be in [0, 1], got 1.5");
        assertThatThrownBy(() -> TierWeights.parse("host=-0.1")).hasMessageContaining("in [0, 1], got -0.1");
        assertThatThrownBy(() -> TierWeights.parse("device=1,tape=0.5")).hasMessage(
                "--tier-weights: unknown tier 'tape'; valid tiers: device, host, l3");
        assertThatThrownBy(() -> TierWeights.parse("host=NaN")).hasMessageContaining("got NaN");
        assertThatThrownBy(() -> TierWeights.parse("host=much")).hasMessageContaining("got 'much'");
        assertThatThrownBy(() -> TierWeights.parse("host")).hasMessageContaining("expected tier=weight, got 'host'");
        assertThatThrownBy(() -> TierWeights.parse("host=0.5,cpu=0.4")).hasMessageContaining("given twice");
        assertThatThrownBy(() -> TierWeights.parse("")).hasMessageContaining("expected tier=weight pairs");
    }

    @Test
    void aPageCountsTheBestWeightOfTheTiersHoldingIt() {
        TierWeights w = TierWeights.DYNAMO;
        assertThat(w.ofMask(0)).isZero();
        assertThat(w.ofMask(1)).isEqualTo(1);
        assertThat(w.ofMask(2)).isEqualTo(0.75);
        assertThat(w.ofMask(4)).isEqualTo(0.25);
        assertThat(w.ofMask(2 | 4)).isEqualTo(0.75);
        assertThat(w.ofMask(1 | 2 | 4)).isEqualTo(1);
        assertThat(new TierWeights(0.5, 1, 0).ofMask(1 | 2)).isEqualTo(1);
    }
}
