package io.hicache.testkit;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The {@link RankAgreementConformance} kit as JUnit 5 tests: extend it with the implementation's fixture, name the
 * class {@code <Implementation>ConformanceTest}, and every scenario runs as one test (a scenario the fixture cannot
 * stage, such as a crash where the transport has no way to cut a rank off, is reported as skipped).
 *
 * <pre>{@code
 * class MyCollectiveConformanceTest extends RankAgreementConformanceSuite {
 *     protected RankAgreementConformance kit() {
 *         return new RankAgreementConformance("my collective", new MyFixture());
 *     }
 * }
 * }</pre>
 */
public abstract class RankAgreementConformanceSuite {

    /** Only subclasses construct it. */
    protected RankAgreementConformanceSuite() {
    }

    /** The kit over the implementation under test (a new one per test is fine). */
    protected abstract RankAgreementConformance kit();

    @Test
    public void decidesTheMinimum() throws Exception {
        assumeTrue(kit().decidesTheMinimum(), "the fixture cannot stage this scenario");
    }

    @Test
    public void toleratesDelays() throws Exception {
        assumeTrue(kit().toleratesDelays(), "the fixture cannot stage this scenario");
    }

    @Test
    public void revealsDivergentContributions() throws Exception {
        assumeTrue(kit().revealsDivergentContributions(), "the fixture cannot stage this scenario");
    }

    @Test
    public void stalledRankAfterContributing() throws Exception {
        assumeTrue(kit().stalledRankAfterContributing(), "the fixture cannot stage this scenario");
    }

    @Test
    public void stalledRankBeforeContributing() throws Exception {
        assumeTrue(kit().stalledRankBeforeContributing(), "the fixture cannot stage this scenario");
    }

    @Test
    public void killedRank() throws Exception {
        assumeTrue(kit().killedRank(), "the fixture cannot kill a rank, or the agreement detects no crash");
    }

    @Test
    public void leavingRank() throws Exception {
        assumeTrue(kit().leavingRank(), "the fixture cannot stage this scenario");
    }

    @Test
    public void lostMessages() throws Exception {
        assumeTrue(kit().lostMessages(), "the transport cannot lose messages");
    }

    @Test
    public void roundsInOrder() throws Exception {
        assumeTrue(kit().roundsInOrder(), "the fixture cannot stage this scenario");
    }
}
