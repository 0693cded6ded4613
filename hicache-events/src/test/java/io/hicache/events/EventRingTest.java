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
}
