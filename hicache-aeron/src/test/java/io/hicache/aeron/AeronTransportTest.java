package io.hicache.aeron;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.hicache.core.cp.RankAgreement;
import org.agrona.CloseHelper;
import org.agrona.concurrent.SystemNanoClock;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Aeron transport with an embedded driver: ranks of one group (here on one thread) agree over a shared channel;
 * frames of another group, token or an out-of-range rank on the same stream are dropped and counted.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AeronTransportTest {
    private MediaDriver driver;
    private Aeron aeron;

    @BeforeEach
    void start() throws Exception {
        String dir = Files.createTempDirectory("aeron-transport").resolve("aeron").toString();
        driver = EmbeddedDriver.launch(dir, 100_000);
        aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir));
    }

    @AfterEach
    void stop() {
        CloseHelper.closeAll(aeron, driver);
    }

    /** A two-word contribution. */
    private static RankAgreement.Contribution two(long a, long b) {
        RankAgreement.Contribution c = new RankAgreement.Contribution(2);
        c.set(0, a);
        c.set(1, b);
        return c;
    }

    private static AgreementConfig config(long group, long token, int size, int rank) {
        return new AgreementConfig(group, token, size, rank, TimeUnit.SECONDS.toNanos(5),
            TimeUnit.MILLISECONDS.toNanos(20));
    }

    @ParameterizedTest
    @ValueSource(strings = {"aeron:ipc?term-length=64k", "aeron:udp?endpoint=224.0.1.1:40456|interface=127.0.0.1"})
    void ranksAgreeOnTheMinimaOverTheChannel(String channel) {
        int n = 3;
        AeronRankGroup[] groups = new AeronRankGroup[n];
        for (int r = 0; r < n; r++) {
            groups[r] = new AeronRankGroup(aeron, channel, 11, config(5, 55, n, r), SystemNanoClock.INSTANCE, 64);
        }
        RankAgreement.Result out = new RankAgreement.Result();
        for (long round = 0; round < 20; round++) {
            for (int r = 0; r < n; r++) {
                groups[r].backupAgreement().contribute(r, round,
                    two(round * 10 + r, r == 1 ? round * 10 + 5 : Long.MAX_VALUE));
            }
            for (int r = 0; r < n; r++) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                boolean got = false;
                while (!got && System.nanoTime() < deadline) {
                    for (AeronRankGroup g : groups) {
                        g.doWork();
                    }
                    got = groups[r].backupAgreement().tryResult(r, round, out);
                }
                assertThat(got).as("%s: round %d on rank %d", channel, round, r).isTrue();
                assertThat(out.decided()).as("%s: round %d on rank %d: %s", channel, round, r, out).isTrue();
                assertThat(out.word(0)).isEqualTo(round * 10);
                assertThat(out.word(1)).isEqualTo(round * 10 + 5);
            }
        }
        assertThat(groups[0].backupRoundLatencies()).hasSize(20);
        CloseHelper.closeAll(groups);
    }

    @Test
    void framesFromOutsideTheGroupAreDroppedAndCounted() {
        AeronRankGroup g0 = new AeronRankGroup(aeron, "aeron:ipc", 12, config(5, 55, 2, 0), SystemNanoClock.INSTANCE, 0);
        AeronRankGroup g1 = new AeronRankGroup(aeron, "aeron:ipc", 12, config(5, 55, 2, 1), SystemNanoClock.INSTANCE, 0);
        // strays on the same stream: another group, a wrong token, a rank out of range, and an unknown channel
        AeronRankGroup otherGroup = new AeronRankGroup(aeron, "aeron:ipc", 12, config(6, 55, 2, 1),
            SystemNanoClock.INSTANCE, 0);
        AeronRankGroup wrongToken = new AeronRankGroup(aeron, "aeron:ipc", 12, config(5, 99, 2, 1),
            SystemNanoClock.INSTANCE, 0);
        AeronRankGroup bigGroup = new AeronRankGroup(aeron, "aeron:ipc", 12, config(5, 55, 4, 3),
            SystemNanoClock.INSTANCE, 0);
        var pub = aeron.addPublication("aeron:ipc", 12);
        UnsafeBuffer junk = new UnsafeBuffer(new byte[Wire.MAX_LENGTH]);
        int junkLength = Wire.encode(junk, Wire.CONTRIBUTION, 9, 5, 55, 1, 0, 0, 0, 0, new long[] {-1, -1}, 2);
        RankAgreement.Result out = new RankAgreement.Result();
        otherGroup.backupAgreement().contribute(1, 0, two(-1, -1));
        wrongToken.backupAgreement().contribute(1, 0, two(-1, -1));
        bigGroup.backupAgreement().contribute(3, 0, two(-1, -1));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (pub.offer(junk, 0, junkLength) < 0 && System.nanoTime() < deadline) {
            g0.doWork();
        }
        g0.backupAgreement().contribute(0, 0, two(7, Long.MAX_VALUE));
        g1.backupAgreement().contribute(1, 0, two(9, Long.MAX_VALUE));
        boolean got = false;
        while (!got && System.nanoTime() < deadline) {
            for (AeronRankGroup g : new AeronRankGroup[] {otherGroup, wrongToken, bigGroup, g1}) {
                g.doWork();
            }
            got = g0.backupAgreement().tryResult(0, 0, out) && g1.backupAgreement().tryResult(1, 0, out);
        }
        assertThat(got).isTrue();
        assertThat(out.decided()).as("%s", out).isTrue();
        assertThat(out.word(0)).isEqualTo(7); // the strays' -1 never counted
        assertThat(out.word(1)).isEqualTo(Long.MAX_VALUE);
        while (g0.droppedFrames() < 4 && System.nanoTime() < deadline) {
            g0.doWork();
        }
        assertThat(g0.droppedFrames()).isGreaterThanOrEqualTo(4);
        CloseHelper.closeAll(pub, g0, g1, otherGroup, wrongToken, bigGroup);
    }
}
