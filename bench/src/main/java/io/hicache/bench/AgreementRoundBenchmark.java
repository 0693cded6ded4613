package io.hicache.bench;

import io.aeron.Aeron;
import io.aeron.driver.MediaDriver;
import io.hicache.aeron.AeronRankGroup;
import io.hicache.aeron.AgreementConfig;
import io.hicache.aeron.EmbeddedDriver;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.RankAgreement;
import org.agrona.CloseHelper;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.agrona.concurrent.SystemNanoClock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

import java.nio.file.Files;
import java.util.concurrent.TimeUnit;

/**
 * One agreement round of a CP group as seen by rank 0: contribute, then poll until the result is there. The other
 * ranks run on their own threads, each contributing the next round as soon as it has read the last one, idling on
 * a backoff strategy (spin, yield, then park 1-50 us) so that eight ranks fit a small machine. {@code IN_PROCESS} is
 * {@link InProcessRankAgreement}; {@code AERON_IPC} is the protocol over Aeron IPC (one {@link AeronRankGroup} per
 * rank, sharing one stream, driver embedded in the benchmark JVM). Each contribution is the controller's round: a backup
 * section and a load section ({@code 2 * RankAgreement.SECTION_WORDS} words). Sample mode: JMH prints p50 and p99.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsAppend = {"--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--sun-misc-unsafe-memory-access=allow"})
public class AgreementRoundBenchmark {
    @Param({"2", "4", "8"})
    public int ranks;

    @Param({"IN_PROCESS", "AERON_IPC"})
    public String transport;

    private MediaDriver driver;
    private Aeron aeron;
    private AeronRankGroup[] groups;
    private RankAgreement[] agreements;
    private Thread[] peers;
    private volatile boolean running;
    private long round;
    private final RankAgreement.Result out = new RankAgreement.Result();
    private final RankAgreement.Contribution words = new RankAgreement.Contribution(2 * RankAgreement.SECTION_WORDS);

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        agreements = new RankAgreement[ranks];
        if ("IN_PROCESS".equals(transport)) {
            InProcessRankAgreement a = new InProcessRankAgreement(ranks);
            java.util.Arrays.fill(agreements, a);
        } else {
            String dir = Files.createTempDirectory("agreement-bench").resolve("aeron").toString();
            driver = EmbeddedDriver.launch(dir, 50_000);
            aeron = Aeron.connect(new Aeron.Context().aeronDirectoryName(dir));
            groups = new AeronRankGroup[ranks];
            for (int r = 0; r < ranks; r++) {
                AgreementConfig c = new AgreementConfig(1, 2, ranks, r, TimeUnit.SECONDS.toNanos(30),
                    TimeUnit.MILLISECONDS.toNanos(100));
                groups[r] = new AeronRankGroup(aeron, "aeron:ipc?term-length=4m", 1701, c, SystemNanoClock.INSTANCE, 0);
                agreements[r] = groups[r].backupAgreement();
            }
        }
        running = true;
        peers = new Thread[ranks - 1];
        for (int r = 1; r < ranks; r++) {
            int rank = r;
            peers[r - 1] = new Thread(() -> peer(rank), "rank-" + r);
            peers[r - 1].setDaemon(true);
            peers[r - 1].start();
        }
    }

    private void peer(int rank) {
        RankAgreement a = agreements[rank];
        IdleStrategy idle = new BackoffIdleStrategy(100, 10, 1_000, 50_000);
        RankAgreement.Result result = new RankAgreement.Result();
        RankAgreement.Contribution mine = new RankAgreement.Contribution(2 * RankAgreement.SECTION_WORDS);
        for (long k = 0; running; k++) {
            mine.set(0, k);
            a.contribute(rank, k, mine);
            idle.reset();
            while (!a.tryResult(rank, k, result)) {
                if (!running) {
                    return;
                }
                idle.idle();
            }
        }
    }

    @Benchmark
    public long round() {
        RankAgreement a = agreements[0];
        words.set(0, round);
        a.contribute(0, round, words);
        while (!a.tryResult(0, round, out)) {
            Thread.onSpinWait();
        }
        if (out.degraded()) {
            throw new IllegalStateException("ranks 0b" + Long.toBinaryString(out.failedRanks())
                + " were declared failed during the benchmark");
        }
        return out.word(0) + round++;
    }

    @TearDown(Level.Trial)
    public void tearDown() throws InterruptedException {
        running = false;
        for (Thread t : peers) {
            t.join(5_000);
        }
        if (groups != null) {
            CloseHelper.closeAll(groups);
        }
        CloseHelper.closeAll(aeron, driver);
    }
}
