package io.hicache.events;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class EventRingTest {
    private static void produce(EventRing r, long hash) {
        int i = r.claim();
        r.set(i, EventRing.STORED, 0, hash, hash - 1);
        r.tokens()[i * r.pageSize] = (int) hash;
        r.publish(i);
        r.flush();
    }

    @Test
    void fullRingDropsTheOldestAndCountsThem() {
        EventRing r = new EventRing(4, 1, false);
        for (long h = 0; h < 10; h++) {
            produce(r, h); // never blocks
        }
        EventRing.Drained d = new EventRing.Drained(16, 1);
        assertThat(r.drain(d)).isEqualTo(4);
        assertThat(d.lost).isEqualTo(6);
        assertThat(d.hash).startsWith(6, 7, 8, 9);
        assertThat(d.tokens).startsWith(6, 7, 8, 9);
        assertThat(r.empty()).isTrue();
        produce(r, 10);
        assertThat(r.drain(d)).isEqualTo(1);
        assertThat(d.lost).isZero();
        assertThat(d.hash[0]).isEqualTo(10);
    }

    @Test
    void aReaderTheProducerOvertakesReadsOrLosesEveryRunAndKeepsNoReference() {
        EventRing r = new EventRing(64, 1, false);
        for (int id = 0; id < 64; id++) {
            run(r, id);
        }
        r.flush();
        EventRing.Drained one = new EventRing.Drained(1, 1);
        assertThat(r.drain(one)).isEqualTo(1);
        assertThat(one.tokens[0]).isZero();
        run(r, 64); // overwrite records 0 and 1, not yet visible: the producer is lapping the reader
        run(r, 65);
        EventRing.Drained d = new EventRing.Drained(64, 1);
        assertThat(r.drain(d)).as("records 2 to 63").isEqualTo(62);
        assertThat(d.lost).as("record 1, overwritten").isEqualTo(1);
        assertThat(d.tokens[0]).isEqualTo(2);
        assertThat(d.tokens[61]).isEqualTo(63);
        r.flush();
        assertThat(r.drain(d)).isEqualTo(2);
        assertThat(d.lost).isZero();
        assertThat(d.tokens).startsWith(64, 65);
        assertThat(r.runReferences()).as("every run either read or overwritten: no token array kept").isZero();
    }

    /** A one-page run record whose token is {@code id}. */
    private static void run(EventRing r, int id) {
        int i = r.claim();
        r.setRun(i, EventRing.STORED_RUN, 0, id, new int[] {id}, 0, 1);
        r.publish(i);
    }

    @Test
    void waitingRingLosesNothingAndKeepsOrder() throws Exception {
        EventRing r = new EventRing(4, 1, true);
        int total = 10_000;
        Thread producer = new Thread(() -> {
            for (long h = 0; h < total; h++) {
                produce(r, h);
            }
        });
        producer.start();
        List<Long> got = new ArrayList<>();
        EventRing.Drained d = new EventRing.Drained(3, 1);
        long lost = 0;
        while (got.size() + lost < total) { // a lost record would end the loop early and fail below
            int n = r.drain(d);
            lost += d.lost;
            for (int i = 0; i < n; i++) {
                got.add(d.hash[i]);
            }
            if (n == 0) {
                Thread.onSpinWait();
            }
        }
        producer.join();
        assertThat(lost).isZero();
        for (int i = 0; i < total; i++) {
            assertThat(got.get(i)).isEqualTo(i);
        }
    }

    @Test
    void concurrentDropOldestNeverHandsOutATornRecord() throws Exception {
        EventRing r = new EventRing(8, 4, false);
        int total = 200_000;
        Thread producer = new Thread(() -> {
            for (long h = 0; h < total; h++) {
                int i = r.claim();
                r.set(i, EventRing.STORED, 0, h, h);
                for (int k = 0; k < 4; k++) {
                    r.tokens()[i * 4 + k] = (int) h;
                }
                r.publish(i);
                if (h % 3 == 0) {
                    r.flush(); // records become visible in groups, as a hook call makes them
                }
            }
        });
        producer.start();
        EventRing.Drained d = new EventRing.Drained(5, 4);
        long seen = 0;
        long lost = 0;
        long last = -1;
        while (producer.isAlive() || !r.empty()) {
            int n = r.drain(d);
            lost += d.lost;
            for (int i = 0; i < n; i++) {
                assertThat(d.hash[i]).isGreaterThan(last);
                last = d.hash[i];
                assertThat(d.parent[i]).isEqualTo(d.hash[i]);
                for (int k = 0; k < 4; k++) {
                    assertThat(d.tokens[i * 4 + k]).isEqualTo((int) d.hash[i]);
                }
            }
            seen += n;
        }
        producer.join();
        r.flush(); // (the producer's last group)
        while (!r.empty()) {
            seen += r.drain(d);
            lost += d.lost;
        }
        assertThat(seen + lost).isEqualTo(total);
    }

    /** The chain of {@code pages} pages of {@code tokens} from {@code off}, hashed from {@code before}. */
    private static long[] chain(long before, int[] tokens, int off, int pages, int pageSize) {
        long[] h = new long[pages];
        long prev = before;
        for (int p = 0; p < pages; p++) {
            prev = BlockHasher.page(prev, tokens, off + p * pageSize, pageSize);
            h[p] = prev;
        }
        return h;
    }

    @Test
    void aRunIsHashedPageByPageAndContinuesWhereTheDrainIsFull() {
        EventRing r = new EventRing(8, 2, false);
        int[] node = new int[22];
        for (int i = 0; i < node.length; i++) {
            node[i] = 100 + i;
        }
        produce(r, 7); // a page record before the run
        int i = r.claim();
        r.setRun(i, EventRing.STORED_RUN, 1, 42, node, 4, 8); // pages 2..9 of the node
        r.publish(i);
        i = r.claim();
        r.setRun(i, EventRing.REMOVED_RUN, 0, 42, node, 4, 2);
        r.publish(i);
        r.flush();
        long[] want = chain(42, node, 4, 8, 2);
        EventRing.Drained d = new EventRing.Drained(3, 2);
        List<long[]> got = new ArrayList<>(); // {kind, tier, hash, parent, first token}
        while (r.drain(d) > 0) {
            assertThat(d.lost).isZero();
            for (int k = 0; k < d.count; k++) {
                got.add(new long[] {d.kind[k], d.tier[k], d.hash[k], d.parent[k], d.tokens[k * 2]});
            }
            if (got.size() < 11) {
                assertThat(r.empty()).as("pages of the run still to come").isFalse();
            }
        }
        assertThat(r.empty()).isTrue();
        assertThat(got).hasSize(1 + 8 + 2);
        assertThat(got.get(0)[2]).isEqualTo(7);
        for (int p = 0; p < 8; p++) {
            long[] g = got.get(1 + p);
            assertThat(g[0]).isEqualTo(EventRing.STORED);
            assertThat(g[1]).isEqualTo(1);
            assertThat(g[2]).as("page %d hash", p).isEqualTo(want[p]);
            assertThat(g[3]).as("page %d parent", p).isEqualTo(p == 0 ? 42 : want[p - 1]);
            assertThat(g[4]).as("page %d tokens", p).isEqualTo(node[4 + 2 * p]);
        }
        for (int p = 0; p < 2; p++) {
            long[] g = got.get(9 + p);
            assertThat(g[0]).isEqualTo(EventRing.REMOVED);
            assertThat(g[2]).isEqualTo(want[p]);
        }
        assertThat(r.runReferences()).as("read runs keep no token array").isZero();
    }

    @Test
    void aRunOverwrittenBeforeItWasReadIsLostAndKeepsNothing() {
        EventRing r = new EventRing(2, 1, false);
        for (int k = 0; k < 3; k++) {
            int i = r.claim();
            r.setRun(i, EventRing.STORED_RUN, 0, k, new int[] {k, k, k}, 0, 3);
            r.publish(i);
        }
        r.flush();
        assertThat(r.runReferences()).isEqualTo(2);
        EventRing.Drained d = new EventRing.Drained(16, 1);
        assertThat(r.drain(d)).isEqualTo(6);
        assertThat(d.lost).isEqualTo(1);
        assertThat(d.tokens).startsWith(1, 1, 1, 2, 2, 2);
        assertThat(d.parent[0]).isEqualTo(1);
        assertThat(d.parent[3]).isEqualTo(2);
        assertThat(r.runReferences()).isZero();
    }

    @Test
    void concurrentRunsUnderDropOldestAreNeverTorn() throws Exception {
        EventRing r = new EventRing(8, 2, false);
        int total = 50_000;
        Thread producer = new Thread(() -> {
            for (int run = 0; run < total; run++) {
                int pages = 1 + run % 5;
                int[] tokens = new int[pages * 2];
                java.util.Arrays.fill(tokens, run);
                int i = r.claim();
                r.setRun(i, EventRing.STORED_RUN, 0, run, tokens, 0, pages);
                r.publish(i);
                r.flush();
            }
        });
        producer.start();
        EventRing.Drained d = new EventRing.Drained(7, 2);
        long runs = 0;
        long lost = 0;
        long current = -1;
        long prev = 0;
        int page = 0;
        while (producer.isAlive() || !r.empty()) {
            int n = r.drain(d);
            lost += d.lost;
            for (int k = 0; k < n; k++) {
                int run = d.tokens[2 * k];
                assertThat(d.tokens[2 * k + 1]).isEqualTo(run);
                if (run != current) { // a run's first page: its parent is the run's before-hash
                    assertThat(run).isGreaterThan((int) current);
                    assertThat(current < 0 || page == 1 + current % 5).as("run %d complete", current).isTrue();
                    assertThat(d.parent[k]).isEqualTo(run);
                    current = run;
                    page = 0;
                    runs++;
                } else {
                    assertThat(d.parent[k]).isEqualTo(prev);
                }
                assertThat(d.hash[k]).isEqualTo(BlockHasher.page(d.parent[k], d.tokens, 2 * k, 2));
                prev = d.hash[k];
                page++;
            }
        }
        producer.join();
        assertThat(runs + lost).isEqualTo(total);
        assertThat(r.runReferences()).isZero();
    }
}
