package io.hicache.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hicache.radix.spi.PendingLoad;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The LOADING device state: matched as a device prefix, not ready, not evictable, invalidated on failure. */
class LoadingStateTest {

    private static final class Load implements PendingLoad {
    }

    private static int[] seq(int from, int count) {
        int[] t = new int[count];
        for (int i = 0; i < count; i++) {
            t[i] = from + i;
        }
        return t;
    }

    /** Prefix [1..4] device, [5..8] host-only (evicted after backup): returns the host-only node. */
    private static RadixNode hostChain(RadixTree t) {
        t.insert(seq(1, 8), 0, 8, seq(100, 8), 0);
        RadixNode top = t.match(seq(1, 4)).lastDeviceNode();
        RadixNode bottom = t.match(seq(1, 8)).lastDeviceNode();
        TestBackup b = new TestBackup(top);
        t.markPending(top, b);
        b.commit(t, 0);
        TestBackup b2 = new TestBackup(bottom);
        t.markPending(bottom, b2);
        b2.commit(t, 4);
        RadixTreeTest.Evictions ev = new RadixTreeTest.Evictions();
        t.lock(top);
        assertThat(t.evictDevice(4, ev)).isEqualTo(4);
        t.unlock(top);
        assertThat(bottom.isDeviceEvicted()).isTrue();
        return bottom;
    }

    @Test
    void loadingNodeIsADevicePrefixButNotReady() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        Load load = new Load();
        t.beginLoad(chain, seq(500, 4), 0, load);
        MatchResult m = t.match(seq(1, 8), 0, 8, new MatchResult());
        assertThat(m.devicePageCount()).isEqualTo(8);
        assertThat(m.readyPageCount()).isEqualTo(4);
        assertThat(m.loadingNode()).isSameAs(chain);
        assertThat(m.devicePage(4)).isEqualTo(500);
        assertThat(m.hostPageCount()).isZero();
        // not evictable while loading, on either tier
        RadixTreeTest.Evictions ev = new RadixTreeTest.Evictions();
        assertThat(t.evictDevice(100, ev)).isZero();
        assertThat(t.evictHost(100, ev)).isZero();
        assertThat(t.devicePagesEvictable()).isEqualTo(4); // the ready prefix only
        // an insert passes through it; what it adds below may be backed up in the same forward, but depends on
        // the load until it finished
        assertThat(t.insert(seq(1, 10), 0, 10, seq(100, 10), 0)).isEqualTo(8);
        RadixNode below = t.lastInsertNode();
        assertThat(below.parent()).isSameAs(chain);
        assertThat(t.canBackUp(below)).isTrue();
        assertThat(t.dependsOnLoad(below)).isTrue();
        assertThat(t.dependsOnLoad(chain)).isFalse();
        t.checkInvariants();
        t.finishLoad(chain, load);
        assertThat(t.canBackUp(below)).isTrue();
        assertThat(t.dependsOnLoad(below)).isFalse();
        assertThat(t.match(seq(1, 8), 0, 8, new MatchResult()).readyPageCount()).isEqualTo(8);
        assertThat(t.evictDevice(100, ev)).isEqualTo(10);
        t.checkInvariants();
    }

    @Test
    void splitCarriesTheLoadToBothFragments() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        Load load = new Load();
        t.beginLoad(chain, seq(500, 4), 0, load);
        MatchResult m = t.match(seq(1, 6), 0, 6, new MatchResult());
        RadixNode head = m.lastDeviceNode();
        assertThat(head).isNotSameAs(chain);
        assertThat(head.pendingLoad()).isSameAs(load);
        assertThat(chain.pendingLoad()).isSameAs(load);
        assertThat(chain.devicePage(0)).isEqualTo(502);
        t.finishLoad(head, load);
        t.finishLoad(chain, load);
        t.checkInvariants();
    }

    @Test
    void aBackupBelowAFailedLoadIsToldAndItsPagesReachTheSinkWhileItIsStillNamed() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        Load load = new Load();
        t.beginLoad(chain, seq(500, 4), 0, load);
        t.insert(seq(1, 12), 0, 12, new int[] {100, 101, 102, 103, 500, 501, 502, 503, 600, 601, 602, 603}, 0);
        RadixNode suffix = t.lastInsertNode();
        List<RadixNode> told = new ArrayList<>();
        TestBackup backup = new TestBackup(suffix) {
            @Override
            public void onInvalidated(RadixNode node) {
                told.add(node);
            }
        };
        t.markPending(suffix, backup);
        t.lock(suffix);
        assertThat(t.hostPagesPending()).isEqualTo(4);
        t.checkInvariants();
        List<Object> pendingSeen = new ArrayList<>();
        int n = t.failLoad(chain, load, (node, pages, off, count) -> pendingSeen.add(node.pending()));
        assertThat(n).isEqualTo(4);
        assertThat(told).containsExactly(suffix);
        assertThat(pendingSeen).containsExactly(backup);
        assertThat(suffix.isInvalidated()).isTrue();
        assertThat(suffix.pending()).isNull();
        assertThat(t.hostPagesPending()).isZero();
        t.checkInvariants();
        t.unlock(suffix); // the backup's own unlock after the failure is a no-op
        t.checkInvariants();
    }

    @Test
    void failureInvalidatesTheSubtreeAndReturnsEveryTreePageOnce() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        Load load = new Load();
        t.lock(chain.parent()); // the loader's anchor lock
        t.beginLoad(chain, seq(500, 4), 0, load);
        // the owning request inserts its suffix below the loading node and locks it (its forward runs)
        t.insert(seq(1, 12), 0, 12, new int[] {100, 101, 102, 103, 500, 501, 502, 503, 600, 601, 602, 603}, 0);
        RadixNode suffix = t.lastInsertNode();
        t.lock(suffix);
        // a second request branches below the suffix
        int[] other = seq(1, 12);
        other[10] = 99;
        other[11] = 98;
        t.insert(other, 0, 12, new int[] {100, 101, 102, 103, 500, 501, 502, 503, 600, 601, 700, 701}, 0);
        RadixNode branch = t.lastInsertNode();
        t.lock(chain); // a request that joined the load locks its device prefix, which ends on the loading node
        t.checkInvariants();
        assertThat(t.devicePagesLocked()).isEqualTo(4 + 4 + 4); // anchor, chain, suffix path
        List<Integer> freed = new ArrayList<>();
        int n = t.failLoad(chain, load, (node, pages, off, count) -> {
            for (int i = 0; i < count; i++) {
                freed.add(pages[off + i]);
            }
        });
        assertThat(n).isEqualTo(6);
        Set<Integer> unique = new HashSet<>(freed);
        assertThat(unique).hasSize(freed.size()).containsExactlyInAnyOrder(600, 601, 602, 603, 700, 701);
        assertThat(chain.isDeviceEvicted()).isTrue();
        assertThat(chain.isHostResident()).isTrue();
        assertThat(chain.isLoading()).isFalse();
        assertThat(suffix.isAttached()).isFalse();
        assertThat(suffix.isInvalidated()).isTrue();
        assertThat(branch.isInvalidated()).isTrue();
        t.checkInvariants();
        MatchResult m = t.match(seq(1, 12), 0, 12, new MatchResult());
        assertThat(m.devicePageCount()).isEqualTo(4);
        assertThat(m.hostPageCount()).isEqualTo(4);
        t.checkInvariants();
        // the request's unlock after the failure is a no-op; the joiner's and the loader's locks remain theirs
        t.unlock(suffix);
        assertThat(chain.lockRef()).isEqualTo(1);
        t.unlock(chain);
        assertThat(chain.parent().lockRef()).isEqualTo(1);
        t.unlock(chain.parent());
        assertThat(t.devicePagesLocked()).isZero();
        assertThatThrownBy(() -> t.lock(suffix)).isInstanceOf(IllegalStateException.class);
        t.checkInvariants();
    }

    @Test
    void failureDropsAChainedLoadWithoutFreeingItsPages() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        // split the host chain so two loads can cover it
        t.match(seq(1, 6), 0, 6, new MatchResult());
        RadixNode upper = chain.parent();
        Load first = new Load();
        Load second = new Load();
        t.beginLoad(upper, seq(500, 2), 0, first);
        t.beginLoad(chain, seq(600, 2), 0, second);
        List<Integer> freed = new ArrayList<>();
        assertThat(t.failLoad(upper, first, (node, pages, off, count) -> freed.add(count))).isZero();
        assertThat(freed).isEmpty();
        assertThat(chain.isLoading()).isFalse();
        assertThat(chain.isDeviceEvicted()).isTrue();
        assertThatThrownBy(() -> t.finishLoad(chain, second)).isInstanceOf(IllegalStateException.class);
        t.checkInvariants();
    }

    @Test
    void beginLoadNeedsAHostOnlyNodeUnderADeviceParent() {
        RadixTree t = RadixTree.builder().build();
        RadixNode chain = hostChain(t);
        RadixNode device = chain.parent();
        assertThatThrownBy(() -> t.beginLoad(device, seq(1, 4), 0, new Load()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("host-only");
        assertThatThrownBy(() -> t.beginLoad(chain, seq(1, 4), 0, null))
                .isInstanceOf(IllegalArgumentException.class);
        Load load = new Load();
        t.beginLoad(chain, seq(1, 4), 0, load);
        assertThatThrownBy(() -> t.finishLoad(chain, new Load())).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("another load");
    }
}
