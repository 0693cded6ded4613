package io.hicache.core.internal.cp;

import io.hicache.core.cp.OwnerLanes;

/**
 * How one rank's host value for a radix node was written: the lane strategy, the CP group size, the rank,
 * the node's page positions {@code [startPage, startPage + pageCount)} and the sequence length
 * {@code totalPages} the lanes were laid out for. Stored with the committed host value so the metadata
 * cannot drift from the data it describes: the host value's page ids are, in order, the pages of the node
 * offsets {@link #ownedOffsets} lists.
 *
 * <p>Immutable value; thread-safe. See {@link OwnerLanes} for what positions and offsets mean. The constructor
 * throws {@link IllegalArgumentException} naming the bad field.
 */
public record LaneDescription(OwnerLanes strategy, int cpSize, int rank, int startPage, int pageCount,
                              int totalPages) {

    public LaneDescription {
        if (strategy == null) {
            throw new IllegalArgumentException("strategy must not be null");
        }
        if (cpSize < 1) {
            throw new IllegalArgumentException("cpSize must be >= 1, was " + cpSize);
        }
        if (totalPages < 1) {
            throw new IllegalArgumentException("totalPages must be >= 1, was " + totalPages);
        }
        if (rank < 0 || rank >= cpSize) {
            throw new IllegalArgumentException("rank " + rank + " out of [0, " + cpSize + ")");
        }
        if (startPage < 0 || pageCount < 0 || (long) startPage + pageCount > totalPages) {
            throw new IllegalArgumentException("node range [" + startPage + ", " + ((long) startPage + pageCount)
                    + ") out of [0, " + totalPages + ")");
        }
    }

    /** The single-rank description (no CP): the rank owns every page of the node. */
    public static LaneDescription singleRank(int startPage, int pageCount, int totalPages) {
        return new LaneDescription(OwnerLanes.Standard.ROUND_ROBIN, 1, 0, startPage, pageCount, totalPages);
    }

    /** True when this rank owns node offset {@code offset}. */
    public boolean ownsOffset(int offset) {
        if (offset < 0 || offset >= pageCount) {
            throw new IllegalArgumentException("offset " + offset + " out of [0, " + pageCount + ")");
        }
        return strategy.owner(startPage + offset, totalPages, cpSize) == rank;
    }

    /** Pages of the node this rank owns (the length of its host value). */
    public int ownedCount() {
        return strategy.ownedCount(rank, startPage, pageCount, totalPages, cpSize);
    }

    /** Pages this rank owns among node offsets {@code [0, offset)}: where a split cuts its host pages. */
    public int ownedCountBefore(int offset) {
        if (offset < 0 || offset > pageCount) {
            throw new IllegalArgumentException("offset " + offset + " out of [0, " + pageCount + "]");
        }
        return strategy.ownedCount(rank, startPage, offset, totalPages, cpSize);
    }

    /** The node offsets this rank owns, ascending, into {@code out}; returns how many. */
    public int ownedOffsets(int[] out) {
        return strategy.ownedOffsets(rank, startPage, pageCount, totalPages, cpSize, out);
    }

    /**
     * The description of node offsets {@code [fromOffset, fromOffset + count)}, for a radix split: same
     * strategy, group, rank and sequence length, so the owners of those positions do not change.
     */
    public LaneDescription slice(int fromOffset, int count) {
        if (fromOffset < 0 || count < 0 || (long) fromOffset + count > pageCount) {
            throw new IllegalArgumentException("slice [" + fromOffset + ", " + ((long) fromOffset + count)
                    + ") out of [0, " + pageCount + ")");
        }
        return new LaneDescription(strategy, cpSize, rank, startPage + fromOffset, count, totalPages);
    }
}
