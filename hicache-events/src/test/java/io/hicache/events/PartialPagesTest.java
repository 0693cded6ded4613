package io.hicache.events;

import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.PendingBackup;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * L3 transitions reported page by page (part of a node, or by sequence when no node holds the pages) name the same
 * blocks, with the same parents, as the whole-node and insert reports: a router sees one chain whatever the batching.
 */
class PartialPagesTest {
    /** "stored TIER HASH PARENT" / "removed TIER HASH". */
    private static final class Recorder implements BlockEventSink {
        final List<String> seen = new ArrayList<>();

        @Override
        public void stored(int tier, long hash, long parent) {
            seen.add("stored " + tier + " " + hash + " " + parent);
        }

        @Override
        public void removed(int tier, long hash) {
            seen.add("removed " + tier + " " + hash);
        }

        @Override
        public void cleared() {
            seen.add("cleared");
        }
    }

    @Test
    void partsOfANodeAndSequencePagesHashAsTheWholeNode() {
        int[] tokens = tokens(24, 1000, 7);
        RadixTree tree = RadixTree.builder().pageSize(4).build();
        tree.insert(tokens, 0, 8, new int[] {0, 1}, 0);
        tree.insert(tokens, 0, 24, new int[] {0, 1, 2, 3, 4, 5}, 0);
        RadixNode tail = tree.lastInsertNode(); // pages 2..5 of the sequence, below a 2-page node

        Recorder whole = new Recorder();
        TierListener w = KvEventPublisher.observer(4, 9, whole);
        w.onStored(TierListener.STORAGE, tail);

        Recorder parts = new Recorder();
        TierListener p = KvEventPublisher.observer(4, 9, parts);
        p.onPagesStored(TierListener.STORAGE, tail, 0, 1);
        p.onPagesStored(TierListener.STORAGE, tail, 1, 3);
        assertThat(parts.seen).containsExactlyElementsOf(whole.seen).hasSize(4);

        Recorder sequence = new Recorder();
        TierListener s = KvEventPublisher.observer(4, 9, sequence);
        s.onSequencePages(TierListener.STORAGE, true, tokens, 0, 2, 4);
        assertThat(sequence.seen).containsExactlyElementsOf(whole.seen);

        Recorder gone = new Recorder();
        TierListener g = KvEventPublisher.observer(4, 9, gone);
        g.onSequencePages(TierListener.STORAGE, false, tokens, 0, 3, 1);
        String second = whole.seen.get(1).split(" ")[2];
        assertThat(gone.seen).containsExactly("removed " + TierListener.STORAGE + " " + second);

        Recorder bad = new Recorder();
        TierListener b = KvEventPublisher.observer(4, 9, bad);
        b.onPagesStored(TierListener.STORAGE, tail, 3, 2); // past the node's end: ignored
        b.onSequencePages(TierListener.STORAGE, true, tokens, 0, 1, 0);
        assertThat(bad.seen).isEmpty();
    }

    @Test
    void eventsHashTheSameWhetherTheCacheHoldsThePagesOrNot() {
        int[] tokens = tokens(16, 50, 1);
        RadixTree tree = RadixTree.builder().pageSize(4).build();
        tree.insert(tokens, 0, 8, new int[] {0, 1}, 0);
        RadixNode head = tree.lastInsertNode();
        tree.insert(tokens, 0, 16, new int[] {0, 1, 2, 3}, 0);
        RadixNode tail = tree.lastInsertNode();
        Recorder r = new Recorder();
        TierEventCollector c = new TierEventCollector(r, 4, 0, TierEventCollector.CACHE_BITS);
        c.onStored(TierListener.HOST, tail); // hashes and caches the path (head) and tail
        assertThat(c.caches(tail)).isTrue();
        assertThat(c.caches(head)).isTrue();
        List<String> hashes = r.seen.stream().map(e -> e.split(" ")[2]).toList();
        assertThat(hashes).hasSize(2).doesNotHaveDuplicates();

        c.onRemoving(TierListener.DEVICE, tail); // from the cache
        c.clearCache();
        c.onRemoving(TierListener.HOST, tail); // hashed again, from the tokens alone
        c.clearCache();
        c.onPagesStored(TierListener.STORAGE, tail, 1, 1); // a later page alone: its parent is hashed first
        assertThat(c.caches(tail)).isTrue();
        assertThat(r.seen.subList(2, 7)).extracting(e -> e.split(" ")[2])
                .containsExactly(hashes.get(0), hashes.get(1), hashes.get(0), hashes.get(1), hashes.get(1));
        assertThat(r.seen.get(6)).endsWith(" " + hashes.get(0)); // its parent, the tail's first page
    }

    @Test
    void aPageIsHashedOnceFromItsInsertToItsLastRemoval() {
        int[] tokens = tokens(40, 300, 11);
        RadixTree tree = RadixTree.builder().pageSize(4).build();
        Recorder r = new Recorder();
        TierEventCollector c = new TierEventCollector(r, 4, 0, TierEventCollector.CACHE_BITS);
        tree.tierObserver(c);
        tree.insert(tokens, 0, 8, new int[] {0, 1}, 0);
        RadixNode head = tree.lastInsertNode();
        tree.insert(tokens, 0, 40, new int[] {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 0);
        RadixNode tail = tree.lastInsertNode(); // 8 pages below a 2-page node
        assertThat(c.pagesHashed()).isEqualTo(10);

        PendingBackup handle = (x, y) -> { };
        for (RadixNode n : List.of(head, tail)) {
            tree.markPending(n, handle);
            tree.commitHost(n, handle, new HostCopy(n.pageCount()));
        }
        tree.evictDevice(Integer.MAX_VALUE, (n, pg, off, cnt) -> { });
        tree.evictHost(Integer.MAX_VALUE, (n, v) -> { });

        // every page stored on the device and the host, and removed from both: 40 events, no page hashed again
        assertThat(r.seen).hasSize(40);
        assertThat(r.seen.stream().map(e -> e.split(" ")[0] + " " + e.split(" ")[1]).distinct())
                .containsExactlyInAnyOrder("stored 0", "stored 1", "removed 0", "removed 1");
        assertThat(c.pagesHashed()).isEqualTo(10);
    }

    /** {@code n} token ids from {@code first}, {@code step} apart. */
    private static int[] tokens(int n, int first, int step) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = first + step * i;
        }
        return t;
    }
}
