package io.hicache.radix;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.radix.spi.PendingLoad;
import io.hicache.radix.TierListener;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The device tier's reports to the observer (KV events) never name a page before the page it extends: what a forward
 * inserts over a prefix still loading back is reported when the load finishes, right after the loaded node and
 * parents first, and not at all when the load fails (before, the insert was reported at once, the loaded prefix only
 * when its load finished: a router following llm-d's rules dropped the new pages as orphans).
 */
class LoadReportsTest {

    private static final class Load implements PendingLoad {
    }

    /** "gpu+FIRST..END" per page range reported stored on the device (sequence positions), "gpu-..." removed. */
    private static final class Recorder implements TierListener {
        final List<String> seen = new ArrayList<>();

        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
            seen.add("gpu+" + firstNewToken + ".." + len);
        }

        @Override
        public void onStored(int tier, RadixNode node) {
            if (tier == DEVICE) {
                seen.add("gpu+" + start(node) + ".." + (start(node) + node.pageCount()));
            }
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
            if (tier == DEVICE) {
                seen.add("gpu-" + start(node) + ".." + (start(node) + node.pageCount()));
            }
        }

        private static int start(RadixNode n) {
            int s = 0;
            for (RadixNode p = n.parent(); !p.isRoot(); p = p.parent()) {
                s += p.pageCount();
            }
            return s;
        }
    }

    private static int[] seq(int from, int count) {
        int[] t = new int[count];
        for (int i = 0; i < count; i++) {
            t[i] = from + i;
        }
        return t;
    }

    /** Tokens 1..8 inserted and backed up as [1..4] and [5..8], then [5..8] evicted from the device. */
    private static RadixNode hostOnlyTail(RadixTree t) {
        t.insert(seq(1, 8), 0, 8, seq(100, 8), 0);
        RadixNode top = t.match(seq(1, 4)).lastDeviceNode();
        RadixNode bottom = t.match(seq(1, 8)).lastDeviceNode();
        TestBackup b = new TestBackup(top);
        t.markPending(top, b);
        b.commit(t, 0);
        TestBackup b2 = new TestBackup(bottom);
        t.markPending(bottom, b2);
        b2.commit(t, 4);
        t.lock(top);
        assertThat(t.evictDevice(4, new RadixTreeTest.Evictions())).isEqualTo(4);
        t.unlock(top);
        return bottom;
    }

    @Test
    void pagesInsertedOverALoadAreReportedAfterItParentsFirst() {
        RadixTree t = RadixTree.builder().build();
        RadixNode tail = hostOnlyTail(t);
        Recorder r = new Recorder();
        t.tierObserver(r);
        Load load = new Load();
        t.beginLoad(tail, seq(500, 4), 0, load);
        t.insert(seq(1, 10), 0, 10, seq(100, 10), 0); // a forward computes pages 8, 9 over the load
        t.insert(seq(1, 12), 0, 12, seq(100, 12), 0); // and 10, 11 below them
        t.insert(seq(1, 6), 0, 6, seq(100, 6), 0); // a match splits the loading node: 4..6 and 6..8
        assertThat(r.seen).as("nothing before the load finishes").isEmpty();
        t.checkInvariants();
        RadixNode head = tail.parent();
        assertThat(head.isLoading()).isTrue();
        t.finishLoad(head, load);
        assertThat(r.seen).as("the tail still loads").containsExactly("gpu+4..6");
        t.finishLoad(tail, load);
        assertThat(r.seen).containsExactly("gpu+4..6", "gpu+6..8", "gpu+8..10", "gpu+10..12");
        // once no load holds them back, pages are reported as the insert makes them
        t.insert(seq(1, 14), 0, 14, seq(100, 14), 0);
        assertThat(r.seen).last().isEqualTo("gpu+12..14");
        t.checkInvariants();
    }

    @Test
    void aFailedLoadReportsNothingOfWhatWasComputedOverIt() {
        RadixTree t = RadixTree.builder().build();
        RadixNode tail = hostOnlyTail(t);
        Recorder r = new Recorder();
        t.tierObserver(r);
        Load load = new Load();
        t.beginLoad(tail, seq(500, 4), 0, load);
        t.insert(seq(1, 10), 0, 10, seq(100, 10), 0);
        t.failLoad(tail, load, new RadixTreeTest.Evictions());
        assertThat(r.seen).as("neither stored nor removed: never reported").isEmpty();
        t.checkInvariants();
    }

    @Test
    void aPageEvictedBeforeTheLoadFinishedIsNeitherReportedStoredNorRemoved() {
        RadixTree t = RadixTree.builder().build();
        RadixNode tail = hostOnlyTail(t);
        Recorder r = new Recorder();
        t.tierObserver(r);
        Load load = new Load();
        t.beginLoad(tail, seq(500, 4), 0, load);
        t.insert(seq(1, 10), 0, 10, seq(100, 10), 0);
        RadixTreeTest.Evictions ev = new RadixTreeTest.Evictions();
        assertThat(t.evictDevice(100, ev)).as("the unlocked leaf over the load").isEqualTo(2);
        t.finishLoad(tail, load);
        assertThat(r.seen).containsExactly("gpu+4..8");
        t.checkInvariants();
    }

    @Test
    void aChainLoadFinishedBottomUpIsReportedTopDown() {
        RadixTree t = RadixTree.builder().build();
        t.insert(seq(1, 12), 0, 12, seq(100, 12), 0);
        RadixNode a = t.match(seq(1, 4)).lastDeviceNode();
        RadixNode b = t.match(seq(1, 8)).lastDeviceNode();
        RadixNode c = t.match(seq(1, 12)).lastDeviceNode();
        for (RadixNode n : new RadixNode[] {a, b, c}) {
            TestBackup backup = new TestBackup(n);
            t.markPending(n, backup);
            backup.commit(t, n == a ? 0 : n == b ? 4 : 8);
        }
        t.lock(a);
        assertThat(t.evictDevice(8, new RadixTreeTest.Evictions())).isEqualTo(8);
        t.unlock(a);
        Recorder r = new Recorder();
        t.tierObserver(r);
        Load load = new Load();
        t.beginLoad(b, seq(500, 4), 0, load);
        t.beginLoad(c, seq(504, 4), 0, load);
        t.insert(seq(1, 14), 0, 14, seq(100, 14), 0);
        t.finishLoad(c, load);
        assertThat(r.seen).as("its parent still loads").isEmpty();
        t.finishLoad(b, load);
        assertThat(r.seen).containsExactly("gpu+4..8", "gpu+8..12", "gpu+12..14");
        t.checkInvariants();
    }
}
