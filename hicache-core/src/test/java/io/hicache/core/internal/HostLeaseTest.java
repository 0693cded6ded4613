package io.hicache.core.internal;

import io.hicache.core.cp.OwnerLanes;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The storage tier's host leases: reserved, published (whole or in part) or released, never leaked. */
@org.junit.jupiter.api.extension.ExtendWith(LeakCheckExtension.class)
class HostLeaseTest {

    @Test
    void publishedPrefixBecomesAHostHitAndTheRestIsFreed() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            int[] tokens = ControllerBasicTest.tokens(0, 24);
            HostLease lease = c.reserveHost(0, 6, 6);
            assertThat(lease.ownedPageCount()).isEqualTo(6);
            assertThat(c.allocator().allocatedPages()).isEqualTo(6);
            assertThat(c.hostBudgetUsedPages()).isEqualTo(6);
            RadixNode n = c.publishHost(lease, tokens, 0, 4, null, 0);
            assertThat(n).isNotNull();
            assertThat(lease.ended()).isTrue();
            assertThat(c.allocator().allocatedPages()).isEqualTo(4);
            assertThat(c.hostBudgetUsedPages()).isEqualTo(4);
            MatchResult m = c.tree().match(tokens, 0, 24, new MatchResult());
            assertThat(m.devicePageCount()).isZero();
            assertThat(m.hostPageCount()).isEqualTo(4);
            assertThat(((HostPages) n.hostValue()).hostPage(3)).isEqualTo(lease.hostPage(3));
            assertThatThrownBy(() -> c.publishHost(lease, tokens, 0, 1, null, 0)).isInstanceOf(IllegalStateException.class);
            assertThat(c.releaseHost(lease)).isFalse();
            assertThat(c.hostLeasesOpen()).isZero();
            assertThat(c.allocator().allocatedPages()).isEqualTo(c.tree().hostPagesCommitted());
        }
    }

    @Test
    void aLeaseCarriesDraftKvOnlyInACacheWithDraftLayers() {
        int[] tokens = ControllerBasicTest.tokens(0, 16);
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            HostLease lease = c.reserveHost(0, 4, 4);
            assertThatThrownBy(() -> c.publishHost(lease, tokens, 0, 4, null, 0, true))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no draft KV layout");
            assertThat(lease.ended()).isFalse(); // refused before anything changed
            assertThat(c.releaseHost(lease)).isTrue();
        }
        try (SimRig rig = SimRig.builder().layers(2, 1).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            RadixNode n = c.publishHost(c.reserveHost(0, 4, 4), tokens, 0, 4, null, 0, true);
            assertThat(((HostPages) n.hostValue()).hasDraft()).isTrue(); // its load-backs copy the draft KV too
        }
    }

    @Test
    void aPathThatChangedMeanwhileFreesEverything() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            HiCacheController c = rig.ctl[0];
            int[] tokens = ControllerBasicTest.tokens(0, 16);
            HostLease lease = c.reserveHost(2, 2, 4); // pages 0..1 are not in the tree
            assertThat(c.publishHost(lease, tokens, 0, 2, null, 0)).isNull();
            assertThat(c.allocator().allocatedPages()).isZero();
            assertThat(c.hostBudgetUsedPages()).isZero();
        }
    }

    @Test
    void noRoomGivesNullAndCloseReleasesOpenLeases() {
        SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 8).build();
        HiCacheController c = rig.ctl[0];
        HostLease a = c.reserveHost(0, 6, 6);
        assertThat(c.reserveHost(0, 3, 3)).isNull();
        assertThat(c.releaseHost(a)).isTrue();
        HostLease b = c.reserveHost(0, 8, 8);
        assertThat(b).isNotNull();
        assertThat(c.hostLeasesOpen()).isEqualTo(1);
        rig.close(); // the leak check of the rig sees every host page freed
        assertThat(b.ended()).isTrue();
        assertThat(c.hostLeasesOpen()).isZero();
        assertThat(c.hostBudgetUsedPages()).isZero();
    }

    @Test
    void cpLanesEachRankHoldsItsOwnedPositions() {
        try (SimRig rig = SimRig.builder().cp(2, OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0).pages(4, 64, 16).build()) {
            List<HostLease> leases = new ArrayList<>();
            for (HiCacheController c : rig.ctl) {
                leases.add(c.reserveHost(0, 5, 5));
            }
            assertThat(leases.get(0).ownedPageCount() + leases.get(1).ownedPageCount()).isEqualTo(5);
            int[] tokens = ControllerBasicTest.tokens(0, 20);
            for (int r = 0; r < 2; r++) {
                assertThat(rig.ctl[r].publishHost(leases.get(r), tokens, 0, 3, null, 0)).isNotNull();
            }
            assertThat(rig.ctl[0].allocator().allocatedPages() + rig.ctl[1].allocator().allocatedPages()).isEqualTo(3);
            for (HiCacheController c : rig.ctl) {
                assertThat(c.tree().match(tokens, 0, 20, new MatchResult()).hostPageCount()).isEqualTo(3);
            }
        }
    }

    @Test
    void underCpARangeCostsTheGroupItsPagesNotItsLargestShareOnEveryRank() {
        // one-page ranges at positions 0..7, round-robin lanes: each lands on one rank, so 4 pages a rank hold all
        // 8 (charging each range's largest share to every rank held 4)
        try (SimRig rig = SimRig.builder().cp(2, OwnerLanes.Standard.ROUND_ROBIN).layers(2, 0).pages(4, 64, 4).build()) {
            for (int k = 0; k < 8; k++) {
                for (HiCacheController c : rig.ctl) {
                    assertThat(c.reserveHost(k, 1, k + 1)).as("position %d", k).isNotNull();
                }
            }
            for (HiCacheController c : rig.ctl) {
                assertThat(c.allocator().allocatedPages()).isEqualTo(4);
                assertThat(c.hostBudgetUsedPages()).isEqualTo(4);
                assertThat(c.reserveHost(8, 1, 9)).as("rank 0's lane is full: both ranks refuse").isNull();
            }
        }
    }

    @Test
    void badArgumentsNameTheRule() {
        try (SimRig rig = SimRig.builder().layers(2, 0).pages(4, 64, 16).build()) {
            assertThatThrownBy(() -> rig.ctl[0].reserveHost(0, 0, 4)).hasMessageContaining("pages >= 1");
            assertThatThrownBy(() -> rig.ctl[0].reserveHost(3, 2, 4)).hasMessageContaining("totalPages");
        }
    }
}
