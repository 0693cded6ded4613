package io.hicache.core.cp;

import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.internal.cp.LaneVerifier;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OwnerLanesTest {

    private static int[] owners(OwnerLanes lanes, int totalPages, int cpSize) {
        int[] out = new int[totalPages];
        for (int p = 0; p < totalPages; p++) {
            out[p] = lanes.owner(p, totalPages, cpSize);
        }
        return out;
    }

    @Test
    void strategiesAssignTheDocumentedOwners() {
        assertThat(owners(OwnerLanes.Standard.ROUND_ROBIN, 7, 3)).containsExactly(0, 1, 2, 0, 1, 2, 0);
        assertThat(owners(OwnerLanes.Standard.CONTIGUOUS, 7, 3)).containsExactly(0, 0, 1, 1, 2, 2, 2);
        assertThat(owners(OwnerLanes.Standard.ZIGZAG, 8, 2)).containsExactly(0, 0, 1, 1, 1, 1, 0, 0);
        assertThat(owners(OwnerLanes.Standard.ZIGZAG, 12, 3)).containsExactly(0, 0, 1, 1, 2, 2, 2, 2, 1, 1, 0, 0);
        // fewer pages than chunks: chunks 0-2 and 4-6 are empty; position 0 is chunk 3, position 1 chunk 7
        assertThat(owners(OwnerLanes.Standard.ZIGZAG, 2, 4)).containsExactly(3, 0);
    }

    @Test
    void rankViewListsNodeOffsets() {
        int[] out = new int[8];
        // node covering positions [5, 11) of a 12-page sequence, zigzag over 3 ranks: owners 2,2,2,1,1,0
        int n = OwnerLanes.Standard.ZIGZAG.ownedOffsets(1, 5, 6, 12, 3, out);
        assertThat(n).isEqualTo(2);
        assertThat(out).startsWith(3, 4);
        assertThat(OwnerLanes.Standard.ZIGZAG.ownedCount(2, 5, 6, 12, 3)).isEqualTo(3);
        assertThatThrownBy(() -> OwnerLanes.Standard.ZIGZAG.ownedOffsets(2, 5, 6, 12, 3, new int[2]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("too small");
        assertThatThrownBy(() -> OwnerLanes.Standard.ROUND_ROBIN.ownedCount(3, 0, 1, 1, 3)).hasMessageContaining("rank 3");
        assertThatThrownBy(() -> OwnerLanes.Standard.ROUND_ROBIN.ownedCount(0, 5, 8, 12, 3)).hasMessageContaining("node range");
        assertThatThrownBy(() -> OwnerLanes.Standard.CONTIGUOUS.owner(0, 4, 0)).hasMessageContaining("cpSize");
        assertThatThrownBy(() -> OwnerLanes.Standard.CONTIGUOUS.owner(4, 4, 2)).hasMessageContaining("pagePosition 4");
    }

    @Property(tries = 500)
    void everyStrategyTilesEveryNodeExactlyOnce(@ForAll OwnerLanes.Standard lanes,
                                               @ForAll @IntRange(min = 1, max = 300) int totalPages,
                                               @ForAll @IntRange(min = 1, max = 16) int cpSize,
                                               @ForAll @IntRange(min = 0, max = 299) int start,
                                               @ForAll @IntRange(min = 0, max = 300) int length) {
        LaneVerifier.verifySequence(lanes, totalPages, cpSize);
        int startPage = start % totalPages;
        int pageCount = Math.min(length, totalPages - startPage);
        LaneVerifier.verifyNode(lanes, startPage, pageCount, totalPages, cpSize);
    }

    @Property(tries = 200)
    void blockStrategiesBalanceWithinOnePagePerChunk(@ForAll @IntRange(min = 1, max = 500) int totalPages,
                                                     @ForAll @IntRange(min = 1, max = 16) int cpSize) {
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (int r = 0; r < cpSize; r++) {
            int n = OwnerLanes.Standard.ZIGZAG.ownedCount(r, 0, totalPages, totalPages, cpSize);
            min = Math.min(min, n);
            max = Math.max(max, n);
        }
        assertThat(max - min).isLessThanOrEqualTo(2);
        for (int r = 0; r < cpSize; r++) {
            int n = OwnerLanes.Standard.CONTIGUOUS.ownedCount(r, 0, totalPages, totalPages, cpSize);
            assertThat(n).isBetween(totalPages / cpSize, totalPages / cpSize + 1);
        }
    }

    @Test
    void verifierReportsTheFirstBadOffset() {
        // a node range outside the sequence is rejected with the range named
        assertThatThrownBy(() -> LaneVerifier.verifyNode(OwnerLanes.Standard.ROUND_ROBIN, 3, 5, 6, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("node range [3, 8)");
    }

    @Test
    void laneDescriptionSlicesKeepOwnersStable() {
        LaneDescription d = new LaneDescription(OwnerLanes.Standard.ZIGZAG, 3, 1, 2, 10, 12);
        int[] all = new int[10];
        int n = d.ownedOffsets(all);
        LaneDescription head = d.slice(0, 4);
        LaneDescription tail = d.slice(4, 6);
        assertThat(head.ownedCount() + tail.ownedCount()).isEqualTo(n);
        assertThat(d.ownedCountBefore(4)).isEqualTo(head.ownedCount());
        for (int i = 0; i < 10; i++) {
            assertThat(d.ownsOffset(i)).isEqualTo(i < 4 ? head.ownsOffset(i) : tail.ownsOffset(i - 4));
        }
        assertThat(tail.startPage()).isEqualTo(6);
        assertThat(LaneDescription.singleRank(0, 5, 5).ownedCount()).isEqualTo(5);
        assertThatThrownBy(() -> new LaneDescription(OwnerLanes.Standard.ZIGZAG, 3, 3, 0, 1, 1)).hasMessageContaining("rank 3");
        assertThatThrownBy(() -> new LaneDescription(null, 3, 0, 0, 1, 1)).hasMessageContaining("strategy");
        assertThatThrownBy(() -> d.slice(8, 3)).hasMessageContaining("slice [8, 11)");
    }
}
