package io.hicache.core.cp;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How evenly each lane strategy spreads the pages a CP group backs up and loads, measured and printed: (a) multi-turn
 * conversations whose turns append nodes after a growing prefix (each node laid out with {@code totalPages} = its own
 * end, as the cache does), the share of appended pages on the busiest rank; (b) one long prefill, the share of causal
 * attention work (position + 1 per owned page) on the busiest rank. The figures are in docs/CP-PROCESSES.md.
 */
class LaneBalanceTest {

    /** The busiest rank's share of the pages appended turn after turn. */
    static double appendedShare(OwnerLanes lanes, int cp, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long[] owned = new long[cp];
        long total = 0;
        for (int conversation = 0; conversation < 200; conversation++) {
            int end = 4 + rnd.nextInt(60); // the system prompt and first question
            for (int turn = 0; turn < 12; turn++) {
                int pages = 1 + rnd.nextInt(8); // an answer and the next question
                for (int r = 0; r < cp; r++) {
                    owned[r] += lanes.ownedCount(r, end, pages, end + pages, cp);
                }
                total += pages;
                end += pages;
            }
        }
        long max = 0;
        for (long o : owned) {
            max = Math.max(max, o);
        }
        return (double) max / total;
    }

    /** The busiest rank's share of causal attention work over one prefill of {@code pages} pages. */
    static double causalShare(OwnerLanes lanes, int cp, int pages) {
        long[] work = new long[cp];
        long total = 0;
        for (int p = 0; p < pages; p++) {
            work[lanes.owner(p, pages, cp)] += p + 1;
            total += p + 1;
        }
        long max = 0;
        for (long w : work) {
            max = Math.max(max, w);
        }
        return (double) max / total;
    }

    @Test
    void stripedZigzagKeepsAppendedTurnsAndOnePrefillBalanced() {
        StringBuilder table = new StringBuilder(String.format("%n%-15s %3s %22s %22s%n", "lanes", "cp",
            "appended turns (max)", "prefill work (max)"));
        for (int cp : new int[] {2, 4, 8}) {
            for (OwnerLanes.Standard lanes : OwnerLanes.Standard.values()) {
                double appended = appendedShare(lanes, cp, 47);
                double causal = causalShare(lanes, cp, 1024);
                table.append(String.format("%-15s %3d %21.1f%% %21.1f%%%n", lanes.name(), cp, 100 * appended,
                    100 * causal));
                double ideal = 1.0 / cp;
                if (lanes == OwnerLanes.Standard.STRIPED_ZIGZAG) {
                    assertThat(appended).as("%s cp %d appended", lanes, cp).isLessThan(ideal * 1.06);
                    assertThat(causal).as("%s cp %d prefill", lanes, cp).isLessThan(ideal * 1.01);
                }
                if (lanes == OwnerLanes.Standard.ZIGZAG && cp == 2) {
                    assertThat(appended).as("ZIGZAG puts appended turns in its last chunk, rank 0's").isGreaterThan(0.6);
                }
            }
        }
        System.out.println("HiCache lane balance (busiest rank's share; ideal 1/cp):" + table);
    }

    @Test
    void stripedZigzagOwnsEachPositionForGoodWhateverTheLength() {
        for (int cp = 1; cp <= 8; cp++) {
            for (int p = 0; p < 64; p++) {
                int owner = OwnerLanes.Standard.STRIPED_ZIGZAG.owner(p, p + 1, cp);
                for (int total = p + 1; total < p + 40; total++) {
                    assertThat(OwnerLanes.Standard.STRIPED_ZIGZAG.owner(p, total, cp)).isEqualTo(owner);
                }
            }
        }
        int[] owners = new int[8];
        for (int p = 0; p < 8; p++) {
            owners[p] = OwnerLanes.Standard.STRIPED_ZIGZAG.owner(p, 8, 2);
        }
        assertThat(owners).containsExactly(0, 1, 1, 0, 0, 1, 1, 0);
    }

    /** An engine's own mapping plugs in: the checks in owner() hold it to the contract. */
    @Test
    void anEnginesOwnMappingIsCheckedWhereItAnswersOutsideTheGroup() {
        OwnerLanes broken = new OwnerLanes() {
            @Override
            public int lane(int pagePosition, int totalPages, int cpSize) {
                return pagePosition == 3 ? cpSize : 0;
            }

            @Override
            public String name() {
                return "BROKEN";
            }
        };
        assertThat(broken.owner(2, 8, 2)).isZero();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> broken.ownedCount(0, 0, 8, 8, 2))
            .isInstanceOf(IllegalStateException.class).hasMessageContaining("BROKEN put position 3 of 8 on rank 2");
    }
}
