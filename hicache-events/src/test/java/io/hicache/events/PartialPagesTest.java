package io.hicache.events;

import io.hicache.core.HiCache.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
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
        int[] tokens = new int[24];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = 1000 + 7 * i;
        }
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
    void aRemovedNodeIsNotKeptByTheHashCacheAndStillHashesTheSameAfterwards() {
        int[] tokens = new int[16];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = 50 + i;
        }
        RadixTree tree = RadixTree.builder().pageSize(4).build();
        tree.insert(tokens, 0, 8, new int[] {0, 1}, 0);
        RadixNode head = tree.lastInsertNode();
        tree.insert(tokens, 0, 16, new int[] {0, 1, 2, 3}, 0);
        RadixNode tail = tree.lastInsertNode();
        Recorder r = new Recorder();
        TierEventCollector c = new TierEventCollector(r, 4, 0);
        c.onStored(TierListener.HOST, tail); // caches head (the path) and tail
        assertThat(c.caches(tail)).isTrue();
        assertThat(c.caches(head)).isTrue();

        c.onRemoving(TierListener.DEVICE, tail);
        c.onRemoving(TierListener.DEVICE, head);

        // an entry would keep a node the tree let go of reachable until its slot was reused
        assertThat(c.caches(tail)).isFalse();
        assertThat(c.caches(head)).isFalse();
        // a node still in the tree that misses is hashed again: the same blocks as before
        c.onRemoving(TierListener.HOST, tail);
        assertThat(r.seen.get(r.seen.size() - 2).split(" ")[2]).isEqualTo(r.seen.get(2).split(" ")[2]);
        assertThat(r.seen.get(r.seen.size() - 1).split(" ")[2]).isEqualTo(r.seen.get(3).split(" ")[2]);
    }
}
