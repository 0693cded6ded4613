package io.hicache.radix;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The storage tier's hooks: page hashes kept on nodes and split with them; host-only nodes published by prefetch. */
class StorageHooksTest {

    private static byte[] hashes(int pages, int seed) {
        byte[] h = new byte[pages * RadixNode.PAGE_HASH_BYTES];
        for (int i = 0; i < h.length; i++) {
            h[i] = (byte) (seed + i / RadixNode.PAGE_HASH_BYTES);
        }
        return h;
    }

    private static byte[] hashOf(RadixNode n, int page) {
        byte[] out = new byte[RadixNode.PAGE_HASH_BYTES];
        n.copyPageHash(page, out, 0);
        return out;
    }

    @Test
    void pageHashesAreSetOnceAndSplitWithTheNode() {
        RadixTree t = RadixTree.builder().pageSize(2).build();
        int[] tokens = {1, 2, 3, 4, 5, 6, 7, 8};
        t.insert(tokens, 0, 8, new int[] {10, 11, 12, 13}, 0);
        RadixNode n = t.lastInsertNode();
        assertThat(n.hasPageHashes()).isFalse();
        assertThatThrownBy(() -> n.copyPageHash(0, new byte[32], 0)).isInstanceOf(IllegalStateException.class);
        assertThat(t.setPageHashes(n, hashes(4, 40), 0)).isTrue();
        assertThat(t.setPageHashes(n, hashes(4, 90), 0)).isFalse(); // computed once
        t.match(new int[] {1, 2, 3, 4}); // splits after page 2
        RadixNode head = n.parent();
        assertThat(head.pageCount()).isEqualTo(2);
        assertThat(hashOf(head, 0)[0]).isEqualTo((byte) 40);
        assertThat(hashOf(head, 1)[0]).isEqualTo((byte) 41);
        assertThat(hashOf(n, 0)[0]).isEqualTo((byte) 42);
        assertThat(hashOf(n, 1)[0]).isEqualTo((byte) 43);
        assertThatThrownBy(() -> n.copyPageHash(2, new byte[32], 0)).isInstanceOf(IndexOutOfBoundsException.class);
        t.checkInvariants();
    }

    @Test
    void insertHostPublishesAHostOnlyNodeBelowABackedUpPath() {
        RadixTree t = RadixTree.builder().pageSize(1).build();
        int[] tokens = {1, 2, 3, 4, 5};
        t.insert(tokens, 0, 2, new int[] {7, 8}, 0);
        RadixNode top = t.lastInsertNode();
        // the parent is device-only: a host-only child would break contiguity
        assertThat(t.insertHost(tokens, 0, 5, 2, new TestHostValue(0, 3), null, 0)).isNull();
        TestBackup b = new TestBackup(top);
        t.markPending(top, b);
        b.commit(t, 50);
        RadixNode n = t.insertHost(tokens, 0, 5, 2, new TestHostValue(0, 3), hashes(3, 1), 0);
        assertThat(n).isNotNull();
        assertThat(n.hasDeviceValue()).isFalse();
        assertThat(n.hostValue()).isEqualTo(new TestHostValue(0, 3));
        assertThat(hashOf(n, 2)[0]).isEqualTo((byte) 3);
        MatchResult m = t.match(tokens);
        assertThat(m.devicePageCount()).isEqualTo(2);
        assertThat(m.hostPageCount()).isEqualTo(3);
        assertThat(t.hostPagesCommitted()).isEqualTo(5);
        // already there: refused
        assertThat(t.insertHost(tokens, 0, 5, 2, new TestHostValue(9, 3), null, 0)).isNull();
        // a path that is not in the tree: refused
        assertThat(t.insertHost(new int[] {9, 9, 9}, 0, 3, 1, new TestHostValue(0, 2), null, 0)).isNull();
        t.checkInvariants();
        RadixTreeTest.Evictions ev = new RadixTreeTest.Evictions();
        assertThat(t.evictHost(3, ev)).isEqualTo(3);
        assertThat(ev.hostValues).containsExactly(new TestHostValue(0, 3));
        t.checkInvariants();
    }

    @Test
    void insertHostFromTheRootAndBadArguments() {
        RadixTree t = RadixTree.builder().pageSize(1).build();
        int[] tokens = {4, 5, 6};
        assertThatThrownBy(() -> t.insertHost(tokens, 0, 3, 3, new TestHostValue(0, 0), null, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> t.insertHost(tokens, 0, 3, 0, new TestHostValue(0, 2), null, 0))
                .isInstanceOf(IllegalArgumentException.class);
        RadixNode n = t.insertHost(tokens, 0, 3, 0, new TestHostValue(0, 3), null, 0);
        assertThat(n.parent().isRoot()).isTrue();
        assertThat(t.match(tokens).hostPageCount()).isEqualTo(3);
        // load-back adopts device pages into the prefetched node
        t.insert(tokens, 0, 3, new int[] {1, 2, 3}, 0);
        assertThat(t.match(tokens).devicePageCount()).isEqualTo(3);
        t.checkInvariants();
    }
}
