package io.hicache.aeron;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.hicache.core.cp.RankAgreement;
import org.agrona.CloseHelper;
import org.agrona.concurrent.SystemNanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Agreement rounds allocate nothing in steady state: the protocol core (frames in preallocated mailboxes) and the
 * Aeron transport (IPC, embedded driver). Counts the calling thread's allocated bytes (exact, not sampled) around
 * many rounds after warm-up and keeps the minimum over a few repetitions.
 */
class AgreementAllocationTest {
    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private static long minBytes(Runnable body) {
        for (int i = 0; i < 3; i++) {
            body.run();
        }
        long min = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            long before = THREADS.getCurrentThreadAllocatedBytes();
            body.run();
            min = Math.min(min, THREADS.getCurrentThreadAllocatedBytes() - before);
        }
        return min;
    }

    /** Two cores whose frames go through fixed rings of buffers. */
    private static final class Pair {
        final AgreementCore[] cores = new AgreementCore[2];
        final UnsafeBuffer[][] ring = new UnsafeBuffer[2][64];
        final int[] head = new int[2];
        final int[] tail = new int[2];
        final int[][] lengths = new int[2][64];
        final RankAgreement.Result out = new RankAgreement.Result();
        final RankAgreement.Contribution[] words = {new RankAgreement.Contribution(RankAgreement.SECTION_WORDS),
            new RankAgreement.Contribution(RankAgreement.SECTION_WORDS)};
        long now;
        long round;

        Pair() {
            for (int r = 0; r < 2; r++) {
                int to = 1 - r;
                for (int i = 0; i < 64; i++) {
                    ring[r][i] = new UnsafeBuffer(new byte[Wire.MAX_LENGTH]);
                }
                cores[r] = new AgreementCore(new AgreementConfig(1, 2, 2, r, 1_000_000_000L, 10_000_000L), 0,
                    (buf, off, len) -> {
                        lengths[to][tail[to] & 63] = len;
                        ring[to][tail[to]++ & 63].putBytes(0, buf, off, len);
                        return true;
                    });
            }
        }

        void rounds(int n) {
            for (int i = 0; i < n; i++) {
                now += 1_000;
                words[0].set(0, round);
                words[1].set(0, round + 1);
                cores[0].contribute(round, words[0], now);
                cores[1].contribute(round, words[1], now);
                boolean done = false;
                while (!done) {
                    for (int r = 0; r < 2; r++) {
                        while (head[r] != tail[r]) {
                            int len = lengths[r][head[r] & 63];
                            cores[r].onMessage(ring[r][head[r]++ & 63], 0, len, now);
                        }
                        cores[r].doWork(now);
                    }
                    done = cores[0].tryResult(round, out) && cores[1].tryResult(round, out);
                }
                round++;
            }
        }
    }

    @Test
    void protocolRoundsAllocateNothing() {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled());
        Pair p = new Pair();
        assertThat(minBytes(() -> p.rounds(5_000))).isZero();
        assertThat(p.cores[0].isDegraded()).isFalse();
    }

    @Test
    void aeronRoundsAllocateNothing() throws Exception {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled());
        String dir = Files.createTempDirectory("aeron-alloc").resolve("aeron").toString();
        try (MediaDriver _ = EmbeddedDriver.launch(dir, 100_000);
             Aeron aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir))) {
            AeronRankGroup[] g = new AeronRankGroup[2];
            RankAgreement[] a = new RankAgreement[2];
            for (int r = 0; r < 2; r++) {
                g[r] = new AeronRankGroup(aeron, "aeron:ipc?term-length=64k", 21,
                    new AgreementConfig(1, 2, 2, r, 10_000_000_000L, 100_000_000L), SystemNanoClock.INSTANCE, 0);
                a[r] = g[r].backupAgreement();
            }
            RankAgreement.Result out = new RankAgreement.Result();
            RankAgreement.Contribution c = new RankAgreement.Contribution(2 * RankAgreement.SECTION_WORDS);
            long[] round = {0};
            Runnable body = () -> {
                for (int i = 0; i < 500; i++) {
                    long k = round[0]++;
                    c.set(0, k);
                    a[0].contribute(0, k, c);
                    a[1].contribute(1, k, c);
                    while (!a[0].tryResult(0, k, out)) {
                        g[1].doWork();
                    }
                    while (!a[1].tryResult(1, k, out)) {
                        g[0].doWork();
                    }
                }
            };
            assertThat(minBytes(body)).isZero();
            CloseHelper.closeAll(g);
        }
    }
}
