package io.hicache.aeron;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Deterministic simulation of the agreement protocol ({@link ProtocolSim}): many seeds, each with a lossy, delaying,
 * duplicating, reordering network, stray frames, and rank deaths and stalls at every step. Invariants: every round
 * is decided within the bound on every rank that runs; live members decide every round identically; a normal
 * decision is the minimum over every rank's contribution (strays never count); degradation is sticky. A failure
 * prints the seed; rerun one with {@code -Dhicache.dst.seed=N}; run more random seeds with
 * {@code -Dhicache.aeron.dst.seeds=N}.
 */
class AgreementProtocolDstTest {
    private static final long RUN_NS = 1_500_000_000L;

    private static long[] seeds(int count, long base) {
        String fixed = System.getProperty("hicache.dst.seed");
        if (fixed != null) {
            return new long[] {Long.parseLong(fixed)};
        }
        long[] s = new long[count];
        for (int i = 0; i < count; i++) {
            s[i] = base + i;
        }
        return s;
    }

    private static void assertClean(ProtocolSim sim, long seed, boolean noFault) {
        List<String> v = sim.check(noFault);
        assertThat(v).as("seed %d", seed).isEmpty();
    }

    private static ProtocolSim network(int n, long seed) {
        ProtocolSim sim = new ProtocolSim(n, seed);
        SplittableRandom r = new SplittableRandom(seed * 31 + 7);
        sim.lossRate = r.nextDouble() * 0.2;
        sim.duplicateRate = r.nextDouble() * 0.2;
        sim.maxDelayNs = 500_000 + r.nextLong(4_000_000);
        sim.strayRate = 0.05;
        return sim;
    }

    @Test
    void withoutRankFaultsEveryRoundIsDecidedNormallyAndIdentically() {
        for (long seed : seeds(40, 1000)) {
            int n = 2 + (int) (seed % 5);
            ProtocolSim sim = network(n, seed);
            sim.run(RUN_NS, Long.MAX_VALUE);
            assertClean(sim, seed, true);
            for (int r = 0; r < n; r++) {
                assertThat(sim.round[r]).as("seed %d rank %d rounds", seed, r).isGreaterThan(50);
                assertThat(sim.cores[r].droppedForeign() + sim.cores[r].droppedBadRank() + sim.cores[r].droppedStale()
                    + sim.cores[r].droppedMalformed()).as("strays counted").isPositive();
            }
        }
    }

    @Test
    void aRankDyingAtEverySendLeavesTheOthersAgreedAndLive() {
        for (long seed : seeds(1, 2000)) {
            for (int n : new int[] {3, 4}) {
                for (int victim = 0; victim < 2; victim++) {
                    for (long k = 0; k < 60; k++) {
                        ProtocolSim sim = network(n, seed * 1000 + k);
                        sim.killAfterSends[victim] = k;
                        sim.run(RUN_NS / 2, Long.MAX_VALUE);
                        assertClean(sim, seed * 1000 + k, false);
                        for (int r = 0; r < n; r++) {
                            if (r != victim && sim.member(r)) {
                                assertThat(sim.cores[r].isDegraded()).as("n %d victim %d k %d rank %d sees the death",
                                    n, victim, k, r).isTrue();
                            }
                        }
                        long members = java.util.stream.IntStream.range(0, n).filter(sim::member).count();
                        assertThat(members).as("n %d victim %d k %d: survivors stay members", n, victim, k)
                            .isEqualTo(n - 1);
                    }
                }
            }
        }
    }

    @Test
    void aRankThatLeavesDegradesTheGroupBeforeTheMemberTimeout() {
        for (long seed : seeds(20, 4000)) {
            for (int leaver = 0; leaver < 3; leaver++) {
                ProtocolSim sim = network(3, seed);
                sim.run(200_000_000L, Long.MAX_VALUE);
                sim.cores[leaver].leave(sim.nowNs);
                long leftAt = sim.nowNs;
                while (sim.nowNs - leftAt < ProtocolSim.MEMBER_TIMEOUT_NS / 2) {
                    sim.run(sim.nowNs + ProtocolSim.STEP_NS, Long.MAX_VALUE);
                }
                for (int r = 0; r < 3; r++) {
                    assertThat(sim.cores[r].isDegraded()).as("seed %d leaver %d rank %d", seed, leaver, r).isTrue();
                    assertThat(sim.cores[r].failedMask()).isEqualTo(1L << leaver);
                }
                sim.run(sim.nowNs + 200_000_000L, Long.MAX_VALUE);
                assertClean(sim, seed, false);
            }
        }
    }

    @Test
    void randomDeathsAndStallsNeverSplitDecisionsNorHang() {
        List<Long> degradedSeeds = new ArrayList<>();
        for (long seed : seeds(Integer.getInteger("hicache.aeron.dst.seeds", 150), 3000)) {
            int n = 2 + (int) (seed % 5);
            ProtocolSim sim = network(n, seed);
            SplittableRandom faults = new SplittableRandom(seed ^ 0x9E3779B97F4A7C15L);
            long[] faultAt = new long[3];
            int[] faultRank = new int[3];
            long[] stallFor = new long[3];
            int count = 1 + faults.nextInt(3);
            for (int i = 0; i < count; i++) {
                faultAt[i] = faults.nextLong(RUN_NS / 2);
                faultRank[i] = faults.nextInt(n);
                // kill, leave (and linger), or stall for a while shorter or longer than the timeouts
                int kind = faults.nextInt(4);
                stallFor[i] = kind == 0 ? -1 : kind == 1 ? -2 : faults.nextLong(8 * ProtocolSim.MEMBER_TIMEOUT_NS);
            }
            long t = 0;
            while (t < RUN_NS) {
                long next = RUN_NS;
                for (int i = 0; i < count; i++) {
                    if (faultAt[i] > t && faultAt[i] < next) {
                        next = faultAt[i];
                    }
                }
                sim.run(next, Long.MAX_VALUE);
                for (int i = 0; i < count; i++) {
                    if (faultAt[i] == next) {
                        if (stallFor[i] == -1) {
                            sim.dead[faultRank[i]] = true;
                        } else if (stallFor[i] == -2) {
                            sim.cores[faultRank[i]].leave(sim.nowNs);
                        } else if (!sim.dead[faultRank[i]]) {
                            sim.stall(faultRank[i], stallFor[i]);
                        }
                    }
                }
                t = next;
            }
            assertClean(sim, seed, false);
            if (sim.cores[0].isDegraded()) {
                degradedSeeds.add(seed);
            }
        }
        assertThat(degradedSeeds).as("the faults exercise degradation").isNotEmpty();
    }
}
