package io.hicache.radix;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Scenarios ported from SGLang's radix cache and hierarchical radix cache unit suites. */
class RadixTreeTest {

    private static RadixTree tree(int pageSize) {
        return RadixTree.builder().pageSize(pageSize).build();
    }

    private static int[] seq(int... t) {
        return t;
    }

    private static int[] pages(int first, int count) {
        int[] p = new int[count];
        for (int i = 0; i < count; i++) {
            p[i] = first + i;
        }
        return p;
    }

    private static int insert(RadixTree t, int[] tokens, int firstPage) {
        return t.insert(tokens, 0, tokens.length, pages(firstPage, tokens.length / t.pageSize()), 0);
    }

    /** Records evictions. */
    static final class Evictions implements DeviceEvictionListener, HostEvictionListener {
        final List<RadixNode> deviceNodes = new ArrayList<>();
        final List<Integer> devicePages = new ArrayList<>();
        final List<HostValue> hostValues = new ArrayList<>();

        @Override
        public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
            deviceNodes.add(node);
            for (int i = 0; i < count; i++) {
                devicePages.add(pages[offset + i]);
            }
        }

        @Override
        public void onHostEvicted(RadixNode node, HostValue value) {
            hostValues.add(value);
        }
    }

    private static void backUp(RadixTree t, RadixNode node, int hostStart) {
        TestBackup b = new TestBackup(node);
        t.markPending(node, b);
        b.commit(t, hostStart);
    }

    @Test
    void insertAndMatch() {
        RadixTree t = tree(1);
        assertThat(insert(t, seq(1, 2, 3), 100)).isZero();
        assertThat(t.match(seq(1, 2, 3, 4)).devicePageCount()).isEqualTo(3);
        MatchResult m = t.match(seq(1, 2));
        assertThat(m.devicePageCount()).isEqualTo(2);
        assertThat(m.devicePage(0)).isEqualTo(100);
        assertThat(m.devicePage(1)).isEqualTo(101);
        assertThat(t.nodeCount()).isEqualTo(2); // split by the partial match
        assertThat(insert(t, seq(1, 2, 4, 5), 200)).isEqualTo(2);
        assertThat(t.lastInsertNode().pageCount()).isEqualTo(2);
        assertThat(t.match(seq(1, 2, 4, 5)).devicePages()).startsWith(100, 101, 202, 203);
        assertThat(t.match(seq(9)).devicePageCount()).isZero();
        assertThat(t.devicePagesCached()).isEqualTo(5);
        t.checkInvariants();
    }

    @Test
    void emptyAndShortKeysAreNoOps() {
        RadixTree t = tree(4);
        assertThat(insert(t, seq(1, 2, 3), 0)).isZero();
        assertThat(t.lastInsertNode().isRoot()).isTrue();
        assertThat(t.nodeCount()).isZero();
        MatchResult m = t.match(new int[0]);
        assertThat(m.devicePageCount()).isZero();
        assertThat(m.lastDeviceNode()).isSameAs(t.root());
    }

    @Test
    void pageAlignment() {
        RadixTree t = tree(4);
        int[] key = seq(1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        assertThat(t.insert(key, 0, key.length, pages(0, 2), 0)).isZero();
        assertThat(t.devicePagesCached()).isEqualTo(2); // the partial third page is not cached
        assertThat(t.match(key).deviceTokenCount()).isEqualTo(8);
        // a mismatch inside the second page matches only the first page
        MatchResult m = t.match(seq(1, 2, 3, 4, 5, 6, 0, 8));
        assertThat(m.deviceTokenCount()).isEqualTo(4);
        assertThat(m.devicePage(0)).isZero();
        // siblings that differ only at the end of their first page are told apart
        int[] sibling = seq(1, 2, 3, 0, 5, 6, 7, 8);
        assertThat(t.insert(sibling, 0, 8, pages(10, 2), 0)).isZero();
        assertThat(t.match(sibling).devicePages()).startsWith(10, 11);
        assertThat(t.match(key).devicePages()).startsWith(0, 1);
        t.checkInvariants();
    }

    @Test
    void manyChildrenGrowTheChildTableAndSurviveRemoval() {
        RadixTree t = tree(2);
        for (int i = 0; i < 200; i++) {
            t.insert(seq(i, i + 1, 7, 7), 0, 4, pages(i * 2, 2), 0);
        }
        t.checkInvariants();
        assertThat(t.root().childCount()).isEqualTo(200);
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(300, ev)).isEqualTo(300);
        t.checkInvariants();
        assertThat(t.root().childCount()).isEqualTo(50);
        for (int i = 0; i < 200; i++) {
            int hit = t.match(seq(i, i + 1, 7, 7)).devicePageCount();
            assertThat(hit).isEqualTo(i >= 150 ? 2 : 0);
        }
    }

    @Test
    void lockRefsProtectThePath() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3), 0);
        insert(t, seq(1, 2, 4), 10);
        RadixNode leaf = t.match(seq(1, 2, 3)).lastDeviceNode();
        t.lock(leaf);
        assertThat(leaf.lockRef()).isEqualTo(1);
        assertThat(leaf.parent().lockRef()).isEqualTo(1);
        assertThat(t.devicePagesLocked()).isEqualTo(3);
        assertThat(t.devicePagesEvictable()).isEqualTo(1);
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(10, ev)).isEqualTo(1);
        assertThat(ev.devicePages).containsExactly(12);
        t.unlock(leaf);
        assertThat(t.devicePagesLocked()).isZero();
        assertThat(t.devicePagesEvictable()).isEqualTo(3);
        assertThatThrownBy(() -> t.unlock(leaf)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("lockRef");
        assertThat(t.devicePagesEvictable()).isEqualTo(3);
        t.checkInvariants();
        assertThat(t.evictDevice(10, ev)).isEqualTo(3);
        assertThat(t.nodeCount()).isZero();
        t.checkInvariants();
    }

    @Test
    void deviceEvictionDemotesToHostOnlyAndMatchReportsTheHostExtension() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode n = t.lastInsertNode();
        backUp(t, n, 500);
        assertThat(n.isHostResident()).isTrue();
        assertThat(t.hostPagesCommitted()).isEqualTo(4);
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(1, ev)).isEqualTo(4);
        assertThat(n.isDeviceEvicted()).isTrue();
        assertThat(n.isAttached()).isTrue();
        assertThat(t.devicePagesCached()).isZero();
        MatchResult m = t.match(seq(1, 2, 3, 4, 5));
        assertThat(m.devicePageCount()).isZero();
        assertThat(m.hostPageCount()).isEqualTo(4);
        assertThat(m.lastDeviceNode()).isSameAs(t.root());
        assertThat(m.lastHostNode()).isSameAs(n);
        t.checkInvariants();
    }

    @Test
    void cachedPrefixPagesCountsWhatMatchReportsButSplitsAndTouchesNothing() {
        RadixTree t = tree(2);
        int[] old = seq(1, 1, 2, 2, 3, 3, 4, 4);
        int[] young = seq(5, 5, 6, 6);
        insert(t, old, 0);
        RadixNode oldNode = t.lastInsertNode();
        insert(t, young, 10);
        int nodes = t.nodeCount();
        int[] partial = seq(1, 1, 2, 2, 3, 3, 9, 9);
        assertThat(t.cachedPrefixPages(partial, 0, partial.length)).isEqualTo(3);
        assertThat(t.cachedPrefixPages(old, 0, old.length)).isEqualTo(4);
        assertThat(t.cachedPrefixPages(old, 2, 4)).isZero(); // not a prefix
        assertThat(t.cachedPrefixPages(old, 0, 5)).isEqualTo(2); // whole pages only
        assertThat(t.nodeCount()).as("no split").isEqualTo(nodes);
        // the older sequence was looked at last, yet LRU still evicts it first: its access order did not move
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(1, ev)).isEqualTo(4);
        assertThat(ev.deviceNodes).containsExactly(oldNode);
        // a committed host-only extension counts, as in match
        insert(t, old, 20);
        RadixNode again = t.lastInsertNode();
        backUp(t, again, 100);
        t.evictDevice(6, new Evictions()); // young, then old (now host-only)
        assertThat(again.isDeviceEvicted()).isTrue();
        MatchResult m = t.match(old);
        assertThat(t.cachedPrefixPages(old, 0, old.length)).isEqualTo(m.devicePageCount() + m.hostPageCount())
                .isEqualTo(4);
        assertThatThrownBy(() -> t.cachedPrefixPages(old, 6, 4)).isInstanceOf(IllegalArgumentException.class);
        t.checkInvariants();
    }

    @Test
    void matchThroughEvictedNodesAndPartialMatchSplitsAHostOnlyNode() {
        RadixTree t = tree(2);
        int[] a = seq(1, 1, 2, 2);
        int[] ab = seq(1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6);
        t.insert(ab, 0, ab.length, pages(0, 6), 0);
        RadixNode top = t.match(a).lastDeviceNode(); // splits after 2 pages
        backUp(t, top, 0);
        RadixNode tail = t.match(ab).lastDeviceNode();
        backUp(t, tail, 2);
        Evictions ev = new Evictions();
        t.evictDevice(1, ev); // the 4-page tail becomes host-only
        assertThat(ev.devicePages).containsExactly(2, 3, 4, 5);
        MatchResult m = t.match(ab);
        assertThat(m.devicePageCount()).isEqualTo(2);
        assertThat(m.hostPageCount()).isEqualTo(4);
        // partial match inside the host-only node splits it, cutting the host value
        MatchResult p = t.match(seq(1, 1, 2, 2, 3, 3, 9, 9));
        assertThat(p.devicePageCount()).isEqualTo(2);
        assertThat(p.hostPageCount()).isEqualTo(1);
        RadixNode head = p.lastHostNode();
        assertThat(head.hostValue()).isEqualTo(new TestHostValue(2, 1));
        assertThat(tail.hostValue()).isEqualTo(new TestHostValue(3, 3));
        assertThat(tail.parent()).isSameAs(head);
        t.checkInvariants();
    }

    @Test
    void insertOverHostOnlyNodesAdoptsTheCallersPages() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2), 0);
        RadixNode n = t.lastInsertNode();
        backUp(t, n, 0);
        t.evictDevice(2, new Evictions());
        int present = t.insert(seq(1, 2, 3), 0, 3, pages(50, 3), 0);
        assertThat(present).isZero(); // nothing on device: no duplicates to free
        assertThat(t.lastInsertAdoptedPages()).isEqualTo(2);
        assertThat(n.isDeviceEvicted()).isFalse();
        assertThat(t.match(seq(1, 2, 3)).devicePages()).startsWith(50, 51, 52);
        assertThat(t.devicePagesCached()).isEqualTo(3);
        t.checkInvariants();
    }

    /**
     * revokeHost withdraws a committed host value outside eviction order (a CP group found another rank never committed
     * it): the child first (a parent's host copy is refused while a child is backed up), a device-resident node keeps
     * its device pages, a host-only leaf leaves the tree; a protected node is refused and nothing changes.
     */
    @Test
    void revokeHostWithdrawsACommittedValueChildFirstAndRefusesProtectedOnes() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode parent = t.match(seq(1, 2)).lastDeviceNode();
        backUp(t, parent, 0);
        RadixNode child = t.match(seq(1, 2, 3, 4)).lastDeviceNode();
        backUp(t, child, 2);
        Evictions ev = new Evictions();
        assertThat(t.revokeHost(parent, ev)).as("its child is backed up").isFalse();
        t.protectHost(child);
        assertThat(t.revokeHost(child, ev)).as("a load reads it").isFalse();
        t.releaseHost(child);
        assertThat(ev.hostValues).isEmpty();
        assertThat(t.revokeHost(child, ev)).isTrue();
        assertThat(child.hostValue()).isNull();
        assertThat(child.hasDeviceValue()).as("still a device hit").isTrue();
        assertThat(t.hostPagesCommitted()).isEqualTo(2);
        t.checkInvariants();
        t.evictDevice(4, ev); // the child, device-only now, leaves; the parent becomes host-only
        assertThat(child.isAttached()).isFalse();
        assertThat(parent.isDeviceEvicted()).isTrue();
        assertThat(t.revokeHost(parent, ev)).isTrue();
        assertThat(parent.isAttached()).as("a host-only leaf is removed").isFalse();
        assertThat(ev.hostValues).containsExactly(new TestHostValue(2, 2), new TestHostValue(0, 2));
        assertThat(t.nodeCount()).isZero();
        assertThat(t.hostPagesCommitted()).isZero();
        t.checkInvariants();
        assertThatThrownBy(() -> t.revokeHost(t.root(), ev)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void hostLeafEvictionRemovesTheNodeAndExposesItsParent() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode parent = t.match(seq(1, 2)).lastDeviceNode();
        backUp(t, parent, 0);
        RadixNode child = t.match(seq(1, 2, 3, 4)).lastDeviceNode();
        backUp(t, child, 2);
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(4, ev)).isEqualTo(4);
        assertThat(t.hostPagesCommitted()).isEqualTo(4);
        assertThat(t.evictHost(1, ev)).isEqualTo(2);
        assertThat(ev.hostValues).containsExactly(new TestHostValue(2, 2));
        assertThat(child.isAttached()).isFalse();
        assertThat(parent.childCount()).isZero();
        t.checkInvariants();
        assertThat(t.evictHost(1, ev)).isEqualTo(2);
        assertThat(t.nodeCount()).isZero();
        assertThat(t.hostPagesCommitted()).isZero();
        t.checkInvariants();
    }

    @Test
    void hostProtectionAndLocksBlockHostEviction() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2), 0);
        RadixNode n = t.lastInsertNode();
        backUp(t, n, 0);
        t.evictDevice(2, new Evictions());
        t.protectHost(n);
        Evictions ev = new Evictions();
        assertThat(t.evictHost(2, ev)).isZero();
        t.releaseHost(n);
        assertThatThrownBy(() -> t.releaseHost(n)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("hostRef");
        t.lock(n);
        assertThat(t.evictHost(2, ev)).isZero();
        t.unlock(n);
        assertThat(t.evictHost(2, ev)).isEqualTo(2);
        t.checkInvariants();
    }

    @Test
    void backupContinuityRequiresABackedUpParent() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode top = t.match(seq(1, 2)).lastDeviceNode();
        RadixNode bottom = t.match(seq(1, 2, 3, 4)).lastDeviceNode();
        assertThat(t.canBackUp(bottom)).isFalse();
        assertThatThrownBy(() -> t.markPending(bottom, new TestBackup(bottom)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("parent");
        assertThat(bottom.pending()).isNull();
        assertThat(t.canBackUp(top)).isTrue();
        TestBackup b = new TestBackup(top);
        t.markPending(top, b);
        assertThat(t.canBackUp(top)).isFalse();
        assertThat(t.canBackUp(bottom)).isTrue(); // a pending parent counts
        assertThat(t.hostPagesPending()).isEqualTo(2);
        b.commit(t, 0);
        backUp(t, bottom, 2);
        assertThat(t.hostPagesCommitted()).isEqualTo(4);
        t.checkInvariants();
    }

    @Test
    void pendingIsADeviceHitOnlyAndNeverEvicted() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3), 0);
        RadixNode n = t.lastInsertNode();
        TestBackup b = new TestBackup(n);
        t.markPending(n, b);
        assertThat(n.isHostResident()).isFalse();
        assertThat(n.isBackedUp()).isTrue();
        assertThat(t.devicePagesEvictable()).isZero();
        Evictions ev = new Evictions();
        assertThat(t.evictDevice(3, ev)).isZero();
        assertThat(t.evictHost(3, ev)).isZero();
        MatchResult m = t.match(seq(1, 2, 3));
        assertThat(m.devicePageCount()).isEqualTo(3);
        assertThat(m.hostPageCount()).isZero();
        b.abort(t);
        assertThat(t.hostPagesPending()).isZero();
        assertThat(n.isBackedUp()).isFalse();
        assertThat(t.evictDevice(3, ev)).isEqualTo(3);
        t.checkInvariants();
    }

    @Test
    void writeBackBacksUpSkippedLeavesBeforeEvictingThem() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2), 0);
        insert(t, seq(3, 4), 2);
        List<RadixNode> skipped = new ArrayList<>();
        DeviceEvictionListener writeBack = new DeviceEvictionListener() {
            @Override
            public boolean mayEvict(RadixNode node) {
                if (!node.isHostResident()) {
                    skipped.add(node);
                    return false;
                }
                return true;
            }

            @Override
            public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
            }
        };
        assertThat(t.evictDevice(4, writeBack)).isZero();
        assertThat(skipped).hasSize(2);
        int host = 0;
        for (RadixNode n : skipped) {
            backUp(t, n, host);
            host += n.pageCount();
        }
        assertThat(t.evictDevice(4, writeBack)).isEqualTo(4);
        assertThat(t.nodeCount()).isEqualTo(2);
        assertThat(t.match(seq(1, 2)).hostPageCount()).isEqualTo(2);
        t.checkInvariants();
    }

    @Test
    void splitDuringPendingBackupPublishesBothFragments() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode n = t.lastInsertNode();
        t.lock(n);
        TestBackup b = new TestBackup(n);
        t.markPending(n, b);
        // an insert that diverges in the middle splits the pending node
        assertThat(insert(t, seq(1, 2, 9), 10)).isEqualTo(2);
        assertThat(b.splits).isEqualTo(1);
        assertThat(b.fragments).hasSize(2);
        RadixNode prefix = b.fragments.get(0);
        assertThat(prefix.pending()).isSameAs(b);
        assertThat(n.pending()).isSameAs(b);
        assertThat(prefix.lockRef()).isEqualTo(1);
        assertThat(prefix.pageCount()).isEqualTo(2);
        assertThat(t.hostPagesPending()).isEqualTo(4);
        t.checkInvariants();
        b.commit(t, 100);
        assertThat(prefix.hostValue()).isEqualTo(new TestHostValue(100, 2));
        assertThat(n.hostValue()).isEqualTo(new TestHostValue(102, 2));
        assertThat(t.hostPagesCommitted()).isEqualTo(4);
        t.unlock(n);
        t.checkInvariants();
    }

    @Test
    void splitPreservesDeviceHostLocksAndCounts() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        insert(t, seq(1, 2, 3, 4), 10);
        RadixNode n = t.lastInsertNode();
        backUp(t, n, 40);
        t.protectHost(n);
        t.lock(n);
        RadixNode p = t.match(seq(1, 2)).lastDeviceNode();
        assertThat(p.parent()).isSameAs(t.root());
        assertThat(n.parent()).isSameAs(p);
        assertThat(p.hitCount()).isEqualTo(n.hitCount()).isEqualTo(2);
        assertThat(p.lockRef()).isEqualTo(1);
        assertThat(p.hostRef()).isEqualTo(1);
        assertThat(p.devicePage(1)).isEqualTo(1);
        assertThat(n.devicePage(0)).isEqualTo(2);
        assertThat(p.hostValue()).isEqualTo(new TestHostValue(40, 2));
        assertThat(n.hostValue()).isEqualTo(new TestHostValue(42, 2));
        assertThat(p.token(0)).isEqualTo(1);
        assertThat(n.token(0)).isEqualTo(3);
        int[] copied = {-1, -1, -1};
        n.copyTokens(1, 1, copied, 2); // the tail fragment reads its own tokens, not the shared array's start
        assertThat(copied).containsExactly(-1, -1, 4);
        assertThatThrownBy(() -> n.copyTokens(1, 2, copied, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        t.unlock(n);
        t.releaseHost(n);
        assertThat(p.lockRef()).isZero();
        assertThat(p.hostRef()).isZero();
        t.checkInvariants();
    }

    @Test
    void loadBackAttachesAndDetachesDevicePages() {
        RadixTree t = tree(1);
        insert(t, seq(1, 2, 3, 4), 0);
        RadixNode top = t.match(seq(1, 2)).lastDeviceNode();
        RadixNode bottom = t.match(seq(1, 2, 3, 4)).lastDeviceNode();
        backUp(t, top, 0);
        backUp(t, bottom, 2);
        t.evictDevice(4, new Evictions());
        assertThatThrownBy(() -> t.attachDevice(bottom, pages(0, 2), 0))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("top-down");
        t.attachDevice(top, pages(70, 2), 0);
        t.attachDevice(bottom, pages(72, 2), 0);
        assertThat(t.match(seq(1, 2, 3, 4)).devicePages()).startsWith(70, 71, 72, 73);
        assertThat(t.devicePagesCached()).isEqualTo(4);
        assertThatThrownBy(() -> t.detachDevice(top)).isInstanceOf(IllegalStateException.class);
        t.detachDevice(bottom);
        t.detachDevice(top);
        MatchResult m = t.match(seq(1, 2, 3, 4));
        assertThat(m.devicePageCount()).isZero();
        assertThat(m.hostPageCount()).isEqualTo(4);
        t.checkInvariants();
    }

    @Test
    void mixedBackupEvictInsertKeepsDeviceAndHostLeavesDisjoint() {
        RadixTree t = tree(1);
        java.util.Random rnd = new java.util.Random(7);
        int page = 0;
        int host = 0;
        Evictions ev = new Evictions();
        for (int step = 0; step < 2_000; step++) {
            int[] key = new int[1 + rnd.nextInt(6)];
            for (int i = 0; i < key.length; i++) {
                key[i] = rnd.nextInt(3);
            }
            t.insert(key, 0, key.length, pages(page, key.length), 0);
            page += key.length;
            for (RadixNode n = t.lastInsertNode(); n != t.root(); n = n.parent()) {
                if (rnd.nextBoolean() && t.canBackUp(n)) {
                    backUp(t, n, host);
                    host += n.pageCount();
                }
            }
            if (t.devicePagesCached() > 12) {
                t.evictDevice((int) t.devicePagesCached() - 12, ev);
            }
            if (t.hostPagesCommitted() > 20) {
                t.evictHost((int) t.hostPagesCommitted() - 20, ev);
            }
            t.checkInvariants();
        }
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicy.class)
    void everyPolicyEvictsInItsOrder(EvictionPolicy policy) {
        long[] clock = {0};
        RadixTree t = RadixTree.builder().pageSize(1).devicePolicy(policy).hostPolicy(policy)
                .tickSource(() -> ++clock[0]).build();
        insert(t, seq(1), 0); // created first, hit 3 times, touched last
        RadixNode a = t.lastInsertNode();
        insert(t, seq(2), 1); // created second, hit 2 times
        RadixNode b = t.lastInsertNode();
        insert(t, seq(3), 2); // created last, hit once
        RadixNode c = t.lastInsertNode();
        insert(t, seq(2), 9);
        insert(t, seq(1), 9);
        insert(t, seq(1), 9);
        t.setPriority(a, 5);
        t.setPriority(b, 1);
        t.setPriority(c, 3);
        Evictions ev = new Evictions();
        t.evictDevice(1, ev);
        RadixNode expected = switch (policy) {
            case LRU -> c;   // touched: c(3) < b(4) < a(6)
            case LFU -> c;   // hits 1 < 2 < 3
            case FIFO -> a;
            case MRU -> a;
            case FILO -> c;
            case PRIORITY -> b;
            case SLRU -> c;  // only c is on probation
        };
        assertThat(ev.deviceNodes).containsExactly(expected);
        t.checkInvariants();
    }

    @Test
    void builderRejectsBadConfiguration() {
        assertThatThrownBy(() -> RadixTree.builder().pageSize(3).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("pageSize 3");
        assertThatThrownBy(() -> RadixTree.builder().pageSize(0).build())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> RadixTree.builder().devicePolicy(null).build())
                .isInstanceOf(IllegalArgumentException.class);
    }
}
