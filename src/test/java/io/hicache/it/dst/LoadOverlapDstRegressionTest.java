package io.hicache.it.dst;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeds of {@link LoadOverlapDstTest} that once failed, replayed on every build and by {@code -Dtest='*Dst*'} (each
 * takes well under a second once the JVM is warm).
 *
 * <p>10,000,217, 11,000,471, 11,001,682, 11,004,207 (CP 2), 11,005,350, 11,008,758 and 11,009,813 reported "compute
 * of layer N started before its load landed"; 11,002,203 and 11,007,896 threw a {@code NullPointerException} in the
 * harness. All nine were the harness: a request that joined a load whose chain a match had split used only the
 * chain's head, yet at the layer's compute the harness read the whole chain, whose tail the request never locked and
 * which was meanwhile evicted (its device page reused, or its node removed from the tree). The harness now checks the
 * pages a request reads, taken when its forward is issued.
 *
 * <p>12,008,708 (CP 2) reported "rank 1 insert found 0 tokens present, match 48": the harness, again. Waiting for a
 * free load event set in the middle of a request advanced the device and polled, and the agreement handed the failure
 * of a load to rank 1 one poll before rank 0, so rank 1 matched an invalidated chain where rank 0 matched a loading
 * one. The harness now lets every rank catch up (as between steps) before the request goes on.
 */
class LoadOverlapDstRegressionTest {

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {10_000_217L, 11_000_471L, 11_001_682L, 11_002_203L, 11_004_207L, 11_005_350L, 11_007_896L,
        11_008_758L, 11_009_813L, 12_008_708L})
    void onceFailingSeedKeepsEveryInvariant(long seed) {
        Map<String, Long> counts = LoadOverlapDstTest.runSeed(seed);
        // each of them joined a load in flight and checked the layers it computed on
        assertThat(counts).containsKeys("load.joined", "layerChecked");
    }
}
