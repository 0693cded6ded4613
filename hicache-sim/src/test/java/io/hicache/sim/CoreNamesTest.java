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
class CoreNamesTest {

    @Test
    void hyphensAndUnderscoresAndCaseAreTakenAlike() {
        assertThat(CoreNames.writePolicy("write-back")).isEqualTo(WritePolicy.WRITE_BACK);
        assertThat(CoreNames.writePolicy("write_back")).isEqualTo(WritePolicy.WRITE_BACK);
        assertThat(CoreNames.writePolicy("Write-Through-Selective")).isEqualTo(WritePolicy.WRITE_THROUGH_SELECTIVE);
        assertThat(CoreNames.loadOverlap("previous_batch")).isEqualTo(LoadOverlap.PREVIOUS_BATCH);
        assertThat(CoreNames.lanes("round_robin")).isEqualTo(OwnerLanes.ROUND_ROBIN);
        assertThat(CoreNames.eviction("LRU")).isEqualTo(EvictionPolicy.LRU);
        // the storage tier's options too (before, only SGLang's underscored spelling was taken there)
        assertThat(CoreNames.storageWritePolicy("write-back")).isEqualTo(StorageWritePolicy.WRITE_BACK);
        assertThat(CoreNames.storageWritePolicy("write_through")).isEqualTo(StorageWritePolicy.WRITE_THROUGH);
        assertThat(CoreNames.prefetchPolicy("Wait-Complete")).isEqualTo(PrefetchPolicy.WAIT_COMPLETE);
    }

    @Test
    void everyPrintedSpellingParsesBack() {
        for (WritePolicy p : WritePolicy.values()) {
            assertThat(CoreNames.writePolicy(CoreNames.of(p))).isEqualTo(p);
        }
        for (LoadOverlap o : LoadOverlap.values()) {
            assertThat(CoreNames.loadOverlap(CoreNames.of(o))).isEqualTo(o);
        }
        for (OwnerLanes l : OwnerLanes.values()) {
            assertThat(CoreNames.lanes(CoreNames.of(l))).isEqualTo(l);
        }
        for (StorageWritePolicy p : StorageWritePolicy.values()) {
            assertThat(CoreNames.storageWritePolicy(p.cliName())).isEqualTo(p);
        }
        for (PrefetchPolicy p : PrefetchPolicy.values()) {
            assertThat(CoreNames.prefetchPolicy(p.cliName())).isEqualTo(p);
        }
    }

    @Test
    void anUnknownNameStillListsTheValidOnes() {
        assertThatThrownBy(() -> CoreNames.writePolicy("write-around"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown write-policy 'write-around'; valid values: write_through, write_through_selective, "
                        + "write_back");
        assertThatThrownBy(() -> CoreNames.writePolicy("writeback")).isInstanceOf(IllegalArgumentException.class);
    }
}
