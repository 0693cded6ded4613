package io.hicache.core.internal.cp;

import io.hicache.core.cp.OwnerLanes;

/**
 * Checks that the rank views of an {@link OwnerLanes} strategy tile a node's page positions exactly once:
 * every position owned by one rank, none by two, none by none (cf. vLLM's CP sharding verifier). Used by
 * tests and as a debug assertion. Allocates scratch arrays: a cold-path check.
 *
 * <p>Stateless; thread-safe.
 */
public final class LaneVerifier {
    private LaneVerifier() {
    }

    /** Verifies a whole sequence of {@code totalPages} pages. */
    public static void verifySequence(OwnerLanes strategy, int totalPages, int cpSize) {
        verifyNode(strategy, 0, totalPages, totalPages, cpSize);
    }

    /**
     * Verifies that the offsets every rank of the group reports for the node {@code [startPage, startPage +
     * pageCount)} cover each offset exactly once and agree with {@link OwnerLanes#owner}.
     *
     * @throws IllegalStateException naming the strategy, group, node and the first offset with a gap,
     *                               an overlap or a disagreement
     */
    public static void verifyNode(OwnerLanes strategy, int startPage, int pageCount, int totalPages, int cpSize) {
        int[] coveredBy = new int[pageCount];
        java.util.Arrays.fill(coveredBy, -1);
        int[] offsets = new int[pageCount];
        for (int rank = 0; rank < cpSize; rank++) {
            int n = strategy.ownedOffsets(rank, startPage, pageCount, totalPages, cpSize, offsets);
            int previous = -1;
            for (int k = 0; k < n; k++) {
                int offset = offsets[k];
                if (offset <= previous || offset >= pageCount) {
                    throw failure(strategy, startPage, pageCount, totalPages, cpSize,
                            "rank " + rank + " lists offset " + offset + " out of order or range");
                }
                previous = offset;
                if (coveredBy[offset] >= 0) {
                    throw failure(strategy, startPage, pageCount, totalPages, cpSize, "offset " + offset
                            + " (position " + (startPage + offset) + ") owned by ranks " + coveredBy[offset]
                            + " and " + rank);
                }
                coveredBy[offset] = rank;
            }
        }
        for (int offset = 0; offset < pageCount; offset++) {
            if (coveredBy[offset] < 0) {
                throw failure(strategy, startPage, pageCount, totalPages, cpSize, "offset " + offset
                        + " (position " + (startPage + offset) + ") owned by no rank");
            }
            int owner = strategy.owner(startPage + offset, totalPages, cpSize);
            if (owner != coveredBy[offset]) {
                throw failure(strategy, startPage, pageCount, totalPages, cpSize, "offset " + offset
                        + " listed by rank " + coveredBy[offset] + " but owner() says " + owner);
            }
        }
    }

    private static IllegalStateException failure(OwnerLanes strategy, int startPage, int pageCount, int totalPages,
                                                 int cpSize, String what) {
        return new IllegalStateException("lanes do not tile: " + strategy + ", cpSize=" + cpSize + ", node ["
                + startPage + ", " + (startPage + pageCount) + ") of " + totalPages + " pages: " + what);
    }
}
