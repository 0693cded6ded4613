package io.hicache.it.dst;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeds of {@link DivergenceDstTest} that once failed, replayed on every build. In each a rank released a sealed
 * backup past its time limit while another committed it; the cache settled it as designed, the harness did not:
 *
 * <ul>
 *   <li>80,005,565, 80,011,196 and 80,012,303: "still committed on a rank although another released it past its
 *       sealed time limit". The committing rank revokes the backup when it applies the next round, whose digests
 *       differ; the drain stopped once nothing was in flight, before that rank had polled again. The end check now
 *       polls every rank again while such a commit is still published.</li>
 *   <li>80,007,593: "rank 1 reserved seq 5 (2 pages) where another rank reserved seq 5 (1 pages)", and 80,015,478:
 *       "cannot reserve ...: it is already backed up". After the release the ranks' trees differ, so the same request
 *       reserves different nodes on each (the fingerprints then differ and the degraded group aborts them). The
 *       lockstep engine now lets each rank ask its own tree whether a node can be backed up, accepts reservations of
 *       different sizes after a release (as it already accepted different numbers of them) and counts each rank's
 *       own range in the host budget check.</li>
 * </ul>
 */
class DivergenceDstRegressionTest {

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {80_005_565L, 80_011_196L, 80_012_303L})
    void aCommitAnotherRankReleasedIsRevokedByTheEnd(long seed) {
        DstHarness h = new DstHarness(seed, false, false, true);
        h.run();
        assertThat(h.stats).containsKeys("aborted.AGREEMENT_TIMEOUT", "settled.afterMorePolls")
            .doesNotContainKey("settled.notRevoked");
    }

    @ParameterizedTest(name = "seed {0}")
    @ValueSource(longs = {80_007_593L, 80_015_478L})
    void reservationsThatDifferAfterAReleaseDegradeTheGroup(long seed) {
        DstHarness h = new DstHarness(seed, false, false, true);
        h.run();
        assertThat(h.stats).containsKeys("aborted.AGREEMENT_TIMEOUT", "diverge.afterTimeLimit");
    }
}
