package io.hicache.aeron;

import io.hicache.aeron.cluster.RankWorkload;
import io.hicache.core.AbortReason;
import io.hicache.core.cp.RankAgreement;
import io.hicache.cuda.CudaError;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Real controllers (one per rank, each on its own simulated device) agreeing through the protocol, stepped in one
 * thread: without faults every rank commits the same backups; when a rank dies mid-run the survivors abort what is
 * in flight with RANK_FAILED, commit nothing afterwards, free every page and keep stepping.
 */
class ControllersOverProtocolTest {
    private static final long TIMEOUT_NS = 50_000_000;
    private static final long TICK_NS = 1_000_000;

    private static RankWorkload[] ranks(InMemoryGroup g) {
        RankWorkload[] w = new RankWorkload[g.n];
        for (int r = 0; r < g.n; r++) {
            w[r] = new RankWorkload(g.n, r, g.agreement(r), g.loadAgreement(r), 99);
        }
        return w;
    }

    private static InMemoryGroup group(int n) {
        InMemoryGroup loads = new InMemoryGroup(n, 1, TIMEOUT_NS, TICK_NS);
        return new InMemoryGroup(n, 0, TIMEOUT_NS, TICK_NS).withLoads(loads);
    }

    /** Runs {@code steps} lockstep steps; rank {@code victim} dies before step {@code killAt}. */
    private static void run(InMemoryGroup g, RankWorkload[] w, int steps, int victim, int killAt) {
        for (int s = 0; s < steps; s++) {
            if (s == killAt) {
                g.dead[victim] = true;
            }
            for (int r = 0; r < g.n; r++) {
                if (!g.dead[r]) {
                    w[r].begin();
                }
            }
            long deadline = g.nowNs + 20 * TIMEOUT_NS;
            boolean all;
            do {
                g.nowNs += TICK_NS;
                all = true;
                for (int r = 0; r < g.n; r++) {
                    if (!g.dead[r] && !w[r].poll()) {
                        all = false;
                    }
                }
            } while (!all && g.nowNs < deadline);
            assertThat(all).as("step %d retires within the timeout", s).isTrue();
        }
    }

    @Test
    void everyRankCommitsTheSameBackups() {
        InMemoryGroup g = group(3);
        RankWorkload[] w = ranks(g);
        run(g, w, 60, -1, -1);
        for (RankWorkload r : w) {
            assertThat(r.committed()).isPositive();
            assertThat(r.commitDigest()).isEqualTo(w[0].commitDigest());
            assertThat(r.abortedRankFailed()).isZero();
            assertThat(r.controller().backupsInFlight()).isZero();
            r.close();
        }
    }

    @Test
    void survivorsOfADeadRankAbortInFlightBackupsConsistentlyAndKeepServing() {
        for (int victim = 0; victim < 3; victim++) {
            InMemoryGroup g = group(3);
            RankWorkload[] w = ranks(g);
            run(g, w, 30, victim, 12);
            long committedAtDeath = -1;
            for (int r = 0; r < 3; r++) {
                if (r == victim) {
                    continue;
                }
                assertThat(g.cores[r].isDegraded()).as("victim %d rank %d", victim, r).isTrue();
                // what the controller's agreement loop read: a degraded result naming the victim, without minima
                RankAgreement.Result result = new RankAgreement.Result();
                assertThat(g.agreement(r).tryResult(r, g.cores[r].degradedFromRound(), result)).isTrue();
                assertThat(result.degraded()).as("victim %d rank %d: %s", victim, r, result).isTrue();
                assertThat(result.failedRanks()).isEqualTo(1L << victim);
                assertThatThrownBy(() -> result.word(0)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("carries no words");
                assertThat(w[r].abortedRankFailed()).as("victim %d rank %d", victim, r).isPositive();
                assertThat(w[r].committed()).as("nothing commits after the death").isLessThanOrEqualTo(12);
                assertThat(w[r].controller().backupsInFlight()).isZero();
                assertThat(w[r].controller().metrics().abortedBy(AbortReason.RANK_FAILED))
                    .isEqualTo(w[r].abortedRankFailed());
                if (committedAtDeath < 0) {
                    committedAtDeath = w[r].commitDigest();
                }
                assertThat(w[r].commitDigest()).as("victim %d: survivors committed the same", victim)
                    .isEqualTo(committedAtDeath);
                assertThat(w[r].steps()).isEqualTo(30);
            }
            for (RankWorkload r : w) {
                r.close();
            }
        }
    }

    @Test
    void aStickyCudaErrorOnOneRankAbortsInFlightBackupsConsistentlyAndTheRankLeavesCleanly() {
        for (int victim = 0; victim < 3; victim++) {
            InMemoryGroup g = group(3);
            RankWorkload[] w = ranks(g);
            run(g, w, 10, -1, -1);
            long committedBefore = w[0].committed();
            for (RankWorkload r : w) {
                r.begin();
            }
            w[victim].device().injectStickyError(CudaError.ILLEGAL_ADDRESS);
            long leftAtNs = -1;
            boolean done = false;
            for (int i = 0; i < 1000 && !done; i++) {
                g.nowNs += TICK_NS;
                done = true;
                for (int r = 0; r < 3; r++) {
                    if (r == victim && leftAtNs >= 0) {
                        continue;
                    }
                    boolean retired = w[r].poll();
                    if (r == victim && w[r].controller().stickyError() != null) {
                        // the controller stopped and told the agreement this rank leaves the group
                        assertThat(g.cores[r].hasLeft()).isTrue();
                        assertThat(g.loads.cores[r].hasLeft()).isTrue();
                        leftAtNs = g.nowNs;
                    } else if (!retired) {
                        done = false;
                    }
                }
            }
            assertThat(done).as("victim %d: survivors retire the step in flight", victim).isTrue();
            assertThat(g.nowNs - leftAtNs).as("the group degrades at the leave, not after the member timeout")
                .isLessThan(TIMEOUT_NS);
            assertThat(w[victim].controller().metrics().abortedBy(AbortReason.CUDA_ERROR)).isPositive();
            for (int r = 0; r < 3; r++) {
                if (r == victim) {
                    continue;
                }
                assertThat(g.cores[r].failedMask()).isEqualTo(1L << victim);
                assertThat(w[r].committed()).as("the failed backup commits nowhere").isEqualTo(committedBefore);
                assertThat(w[r].abortedRankFailed()).isPositive();
                assertThat(w[r].commitDigest()).isEqualTo(w[victim].commitDigest());
                // the survivors keep serving: more steps, each backup aborted with RANK_FAILED, nothing left over
                for (int s = 0; s < 5; s++) {
                    w[r].begin();
                    for (int i = 0; i < 100 && !w[r].poll(); i++) {
                        g.nowNs += TICK_NS;
                    }
                }
                assertThat(w[r].steps()).isEqualTo(16);
                assertThat(w[r].controller().backupsInFlight()).isZero();
            }
            for (RankWorkload r : w) {
                r.close();
            }
        }
    }

    @Test
    void sealedBackupsWaitingForAStalledRankAbortWithinTheTimeoutAndTheRankLeavesOnWaking() {
        for (int stalled = 0; stalled < 3; stalled++) {
            InMemoryGroup g = group(3);
            RankWorkload[] w = ranks(g);
            run(g, w, 8, -1, -1);
            for (RankWorkload r : w) {
                r.begin();
            }
            // the stalled rank is not polled (its frames wait in its inbox); the others' backups seal and wait
            long stallStart = g.nowNs;
            boolean othersDone = false;
            while (!othersDone) {
                g.nowNs += TICK_NS;
                othersDone = true;
                for (int r = 0; r < 3; r++) {
                    if (r != stalled && !w[r].poll()) {
                        othersDone = false;
                    }
                }
                assertThat(g.nowNs - stallStart).as("stalled %d: the others' round ends within the bound", stalled)
                    .isLessThan(4 * TIMEOUT_NS + 10 * TICK_NS);
            }
            for (int r = 0; r < 3; r++) {
                if (r != stalled) {
                    assertThat(w[r].abortedRankFailed()).isEqualTo(1);
                    assertThat(w[r].committed()).isEqualTo(8);
                }
            }
            // the stalled rank wakes: it learns it was declared failed and aborts its backup too
            for (int i = 0; i < 100 && !w[stalled].poll(); i++) {
                g.nowNs += TICK_NS;
            }
            assertThat(g.cores[stalled].hasLeft()).isTrue();
            assertThat(w[stalled].committed()).isEqualTo(8);
            assertThat(w[stalled].commitDigest()).isEqualTo(w[(stalled + 1) % 3].commitDigest());
            for (RankWorkload r : w) {
                assertThat(r.controller().backupsInFlight()).isZero();
                r.close();
            }
        }
    }

    @Test
    void aGroupRestartedAfterADeathCommitsAgain() {
        InMemoryGroup g = group(3);
        RankWorkload[] w = ranks(g);
        run(g, w, 20, 1, 5);
        assertThat(w[0].committed()).isLessThanOrEqualTo(5);
        for (RankWorkload r : w) {
            r.close(); // every rank drops its host tier: the old host values lack rank 1's lanes
        }
        InMemoryGroup again = group(3);
        RankWorkload[] fresh = ranks(again);
        run(again, fresh, 20, -1, -1);
        for (RankWorkload r : fresh) {
            assertThat(r.committed()).isEqualTo(20);
            assertThat(r.commitDigest()).isEqualTo(fresh[0].commitDigest());
            r.close();
        }
    }
}
