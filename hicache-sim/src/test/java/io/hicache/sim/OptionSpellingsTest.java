package io.hicache.sim;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.EvictionPolicy;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The command line's spellings of core options: printed one way, parsed with either word separator. */
class OptionSpellingsTest {

    @Test
    void hyphensAndUnderscoresAndCaseAreTakenAlike() {
        assertThat(OptionSpellings.writePolicy("write-back")).isEqualTo(WritePolicy.WRITE_BACK);
        assertThat(OptionSpellings.writePolicy("write_back")).isEqualTo(WritePolicy.WRITE_BACK);
        assertThat(OptionSpellings.writePolicy("Write-Through-Selective")).isEqualTo(WritePolicy.WRITE_THROUGH_SELECTIVE);
        assertThat(OptionSpellings.loadOverlap("previous_batch")).isEqualTo(LoadOverlap.PREVIOUS_BATCH);
        assertThat(OptionSpellings.lanes("round_robin")).isEqualTo(OwnerLanes.Standard.ROUND_ROBIN);
        assertThat(OptionSpellings.eviction("LRU")).isEqualTo(EvictionPolicy.LRU);
        // the storage tier's options too (before, only SGLang's underscored spelling was taken there)
        assertThat(OptionSpellings.storageWritePolicy("write-back")).isEqualTo(StorageWritePolicy.WRITE_BACK);
        assertThat(OptionSpellings.storageWritePolicy("write_through")).isEqualTo(StorageWritePolicy.WRITE_THROUGH);
        assertThat(OptionSpellings.prefetchPolicy("Wait-Complete")).isEqualTo(PrefetchPolicy.WAIT_COMPLETE);
    }

    @Test
    void everyPrintedSpellingParsesBack() {
        for (WritePolicy p : WritePolicy.values()) {
            assertThat(OptionSpellings.writePolicy(OptionSpellings.of(p))).isEqualTo(p);
        }
        for (LoadOverlap o : LoadOverlap.values()) {
            assertThat(OptionSpellings.loadOverlap(OptionSpellings.of(o))).isEqualTo(o);
        }
        for (OwnerLanes l : OwnerLanes.Standard.values()) {
            assertThat(OptionSpellings.lanes(OptionSpellings.of(l))).isEqualTo(l);
        }
        for (StorageWritePolicy p : StorageWritePolicy.values()) {
            assertThat(OptionSpellings.storageWritePolicy(p.cliName())).isEqualTo(p);
        }
        for (PrefetchPolicy p : PrefetchPolicy.values()) {
            assertThat(OptionSpellings.prefetchPolicy(p.cliName())).isEqualTo(p);
        }
    }

    @Test
    void anUnknownNameStillListsTheValidOnes() {
        assertThatThrownBy(() -> OptionSpellings.writePolicy("write-around"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown write-policy 'write-around'; valid values: write_through, write_through_selective, "
                        + "write_back");
        assertThatThrownBy(() -> OptionSpellings.writePolicy("writeback")).isInstanceOf(IllegalArgumentException.class);
    }
}
