package io.hicache.serve.bench;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

class GapProbesTest {
    private static final long S = TimeUnit.SECONDS.toNanos(1);

    @Test
    void readsInAGapDropsTheReadingARequestOverlappedAndWaitsWhileARequestIsInFlight() throws Exception {
        CountDownLatch first = new CountDownLatch(1);
        CountDownLatch secondRunning = new CountDownLatch(1);
        CountDownLatch releaseSecond = new CountDownLatch(1);
        CountDownLatch third = new CountDownLatch(1);
        CountDownLatch stop = new CountDownLatch(1);
        AtomicBoolean requestOut = new AtomicBoolean();
        AtomicBoolean readWhileOut = new AtomicBoolean();
        AtomicInteger calls = new AtomicInteger();
        GapProbes g = new GapProbes(() -> {
            int n = calls.incrementAndGet();
            switch (n) {
                case 1 -> first.countDown();
                case 2 -> {
                    secondRunning.countDown();
                    releaseSecond.await();
                }
                default -> {
                    readWhileOut.compareAndSet(false, requestOut.get());
                    third.countDown();
                    stop.await();
                }
            }
            return 10 * n;
        }, 1);
        long now = System.nanoTime();
        g.start(now, new long[] {now + 600 * S, now + 601 * S}); // both far off: a gap
        assertThat(first.await(30, TimeUnit.SECONDS)).isTrue();
        assertThat(secondRunning.await(30, TimeUnit.SECONDS)).isTrue();
        g.sending(0); // request 0 goes out while the second reading runs: that reading shared the cores, dropped
        requestOut.set(true);
        releaseSecond.countDown();
        requestOut.set(false); // what the prober does meanwhile must not be a reading (request 0 is in flight)
        g.finished();
        assertThat(third.await(30, TimeUnit.SECONDS)).isTrue(); // request 1 is far off: a gap again
        stop.countDown();
        g.close();
        assertThat(g.readings()).extracting(GapProbes.Reading::forwardMs).startsWith(10.0, 30.0);
        assertThat(g.readings().get(0).atMs()).isBetween(0.0, 600_000.0);
        assertThat(g.overlapped()).isEqualTo(1);
        assertThat(readWhileOut).isFalse();
        assertThat(g.failure()).isNull();
    }

    @Test
    void aGapShorterThanAReadingIsNoGapAndNothingIsReadOnceEveryRequestIsSent() throws Exception {
        CountDownLatch reading = new CountDownLatch(1);
        CountDownLatch stop = new CountDownLatch(1);
        GapProbes g = new GapProbes(() -> {
            reading.countDown();
            stop.await();
            return 1;
        }, 1000); // a reading takes about a second
        long now = System.nanoTime();
        g.start(now, new long[] {now + 10 * S, now + 20 * S});
        assertThat(reading.await(30, TimeUnit.SECONDS)).isTrue(); // 10 s to the next request: room for one
        assertThat(g.gapAt(now)).isTrue();
        assertThat(g.gapAt(now + 8 * S)).isTrue();
        assertThat(g.gapAt(now + 9 * S)).isFalse(); // 1 s left, and a reading takes 1 s plus the margin
        assertThat(g.gapAt(now + 11 * S)).isFalse(); // request 0 is due (and about to be sent): no gap
        g.sending(0);
        assertThat(g.gapAt(now)).isFalse(); // in flight
        g.finished();
        assertThat(g.gapAt(now + 12 * S)).isTrue(); // request 1 is 8 s off
        g.sending(1);
        g.finished();
        assertThat(g.gapAt(now)).isFalse(); // nothing left to send: the replay is over
        stop.countDown();
        g.close();
        assertThat(g.overlapped()).isEqualTo(1); // the one reading ran while requests went out
        assertThat(g.readings()).isEmpty();
    }

    @Test
    void aFailingProbeStopsTheReadingsWithItsReason() throws Exception {
        CountDownLatch called = new CountDownLatch(1);
        GapProbes g = new GapProbes(() -> {
            called.countDown();
            throw new java.io.IOException("the engine answered /hicache/speed_probe with HTTP 500");
        }, 1);
        long now = System.nanoTime();
        g.start(now, new long[] {now + 600 * S});
        assertThat(called.await(30, TimeUnit.SECONDS)).isTrue();
        g.close(); // joins the prober, which stopped at the failure
        assertThat(g.readings()).isEmpty();
        assertThat(g.failure()).contains("HTTP 500");
    }
}
