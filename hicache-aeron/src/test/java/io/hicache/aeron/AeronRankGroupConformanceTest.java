package io.hicache.aeron;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.hicache.core.cp.RankAgreement;
import io.hicache.testkit.RankAgreementConformance;
import io.hicache.testkit.RankAgreementConformanceSuite;
import org.agrona.CloseHelper;
import org.agrona.concurrent.SystemNanoClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The conformance kit over {@link AeronRankGroup}: every rank its own group member on one embedded media driver over
 * {@code aeron:ipc}, driven on its own thread. A killed rank closes its publication and subscription without leaving
 * (a crash). Aeron's IPC loses nothing, so the lost-message scenario runs in {@link AgreementCoreConformanceTest},
 * over the same protocol core on a lossy network.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class AeronRankGroupConformanceTest extends RankAgreementConformanceSuite {
    private static final long MEMBER_TIMEOUT_NS = TimeUnit.MILLISECONDS.toNanos(750);
    private static final long RETRANSMIT_NS = TimeUnit.MILLISECONDS.toNanos(20);
    private static final AtomicInteger STREAMS = new AtomicInteger(3100);
    private static MediaDriver driver;
    private static Aeron aeron;

    @BeforeAll
    static void start() throws Exception {
        String dir = Files.createTempDirectory("aeron-conformance").resolve("aeron").toString();
        driver = EmbeddedDriver.launch(dir, 100_000);
        aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir));
    }

    @AfterAll
    static void stop() {
        CloseHelper.closeAll(aeron, driver);
    }

    @Override
    protected RankAgreementConformance kit() {
        return new RankAgreementConformance("AeronRankGroup", new RankAgreementConformance.Fixture() {
            @Override
            public RankAgreementConformance.Group open(int size) {
                int stream = STREAMS.incrementAndGet();
                AeronRankGroup[] ranks = new AeronRankGroup[size];
                for (int r = 0; r < size; r++) {
                    ranks[r] = new AeronRankGroup(aeron, "aeron:ipc?term-length=64k", stream,
                        new AgreementConfig(stream, 0x5EC, size, r, MEMBER_TIMEOUT_NS, RETRANSMIT_NS),
                        SystemNanoClock.INSTANCE, 0);
                }
                return new RankAgreementConformance.Group() {
                    @Override
                    public RankAgreement agreement(int rank) {
                        return ranks[rank].backupAgreement();
                    }

                    @Override
                    public void idle(int rank) {
                        ranks[rank].doWork();
                    }

                    @Override
                    public boolean kill(int rank) {
                        ranks[rank].close();
                        return true;
                    }

                    @Override
                    public void close() {
                        CloseHelper.closeAll(ranks);
                    }
                };
            }

            @Override
            public long stallNs() {
                // past a follower's suspicion of a silent coordinator and the election after it
                return 2 * (2 * MEMBER_TIMEOUT_NS + 2 * RETRANSMIT_NS) + 2 * MEMBER_TIMEOUT_NS;
            }
        });
    }
}
