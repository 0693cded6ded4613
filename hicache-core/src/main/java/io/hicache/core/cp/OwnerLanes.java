package io.hicache.core.cp;

/**
 * Which rank of a context-parallel (CP) group owns each page position of a sequence. A rank backs up and
 * loads only the pages it owns.
 *
 * <p><b>Positions.</b> A sequence of {@code totalPages} pages has page positions {@code 0 ..
 * totalPages-1}: position {@code p} holds tokens {@code [p * pageSizeTokens, (p+1) * pageSizeTokens)} of
 * the request. {@code totalPages} is the length the lanes are laid out for (the sequence length when the
 * pages were written); {@link #CONTIGUOUS} and {@link #ZIGZAG} depend on it, {@link #ROUND_ROBIN} does
 * not. A radix node covers positions {@code [startPage, startPage + pageCount)}: its page at node offset
 * {@code i} is position {@code startPage + i}. The rank views ({@link #ownedOffsets},
 * {@link #ownedCount}) answer in node offsets, the indices into the node's own page arrays.
 *
 * <p>Every strategy maps each position to exactly one rank in {@code [0, cpSize)} (see
 * a lane verifier). Chunks are split as evenly as possible: chunk {@code k} of {@code n} over
 * {@code T} positions is {@code [floor(k*T/n), floor((k+1)*T/n))}.
 *
 * <p>Stateless; thread-safe; all methods allocate nothing.
 */
public enum OwnerLanes {
    /** Position {@code p} belongs to rank {@code p mod cpSize}. */
    ROUND_ROBIN {
        @Override
        int ownerUnchecked(int pagePosition, int totalPages, int cpSize) {
            return pagePosition % cpSize;
        }
    },
    /** {@code cpSize} contiguous blocks: rank {@code r} owns block {@code r}. */
    CONTIGUOUS {
        @Override
        int ownerUnchecked(int pagePosition, int totalPages, int cpSize) {
            return chunkOf(pagePosition, totalPages, cpSize);
        }
    },
    /**
     * {@code 2 * cpSize} chunks; rank {@code r} owns chunks {@code r} and {@code 2*cpSize-1-r}, which
     * balances causal attention work (early chunks are cheap, late ones dear).
     */
    ZIGZAG {
        @Override
        int ownerUnchecked(int pagePosition, int totalPages, int cpSize) {
            int chunk = chunkOf(pagePosition, totalPages, 2 * cpSize);
            return chunk < cpSize ? chunk : 2 * cpSize - 1 - chunk;
        }
    };

    abstract int ownerUnchecked(int pagePosition, int totalPages, int cpSize);

    /** Chunk {@code k} of {@code n} holding {@code pos}, for chunks {@code [floor(k*T/n), floor((k+1)*T/n))}. */
    static int chunkOf(int pos, int total, int n) {
        return (int) ((((long) pos + 1) * n + total - 1) / total - 1);
    }

    /**
     * The rank owning {@code pagePosition}.
     *
     * @throws IllegalArgumentException naming the value when {@code cpSize < 1}, {@code totalPages < 1} or
     *                                  the position is outside {@code [0, totalPages)}
     */
    public int owner(int pagePosition, int totalPages, int cpSize) {
        checkGroup(totalPages, cpSize);
        if (pagePosition < 0 || pagePosition >= totalPages) {
            throw new IllegalArgumentException("pagePosition " + pagePosition + " out of [0, " + totalPages + ")");
        }
        return ownerUnchecked(pagePosition, totalPages, cpSize);
    }

    /**
     * Writes to {@code out[0 ..)} the node offsets {@code i} (ascending) whose position
     * {@code startPage + i} rank {@code rank} owns, for a node covering {@code [startPage, startPage +
     * pageCount)}.
     *
     * @return how many offsets were written
     * @throws IllegalArgumentException for a bad group, rank or node range, or when {@code out} is too small
     */
    public int ownedOffsets(int rank, int startPage, int pageCount, int totalPages, int cpSize, int[] out) {
        checkNode(rank, startPage, pageCount, totalPages, cpSize);
        if (out == null) {
            throw new IllegalArgumentException("out must not be null");
        }
        int n = 0;
        for (int i = 0; i < pageCount; i++) {
            if (ownerUnchecked(startPage + i, totalPages, cpSize) == rank) {
                if (n == out.length) {
                    throw new IllegalArgumentException("out length " + out.length + " too small for rank " + rank
                            + "'s offsets of node [" + startPage + ", " + (startPage + pageCount) + ")");
                }
                out[n++] = i;
            }
        }
        return n;
    }

    /** How many of the node's positions rank {@code rank} owns; arguments as {@link #ownedOffsets}. */
    public int ownedCount(int rank, int startPage, int pageCount, int totalPages, int cpSize) {
        checkNode(rank, startPage, pageCount, totalPages, cpSize);
        int n = 0;
        for (int i = 0; i < pageCount; i++) {
            if (ownerUnchecked(startPage + i, totalPages, cpSize) == rank) {
                n++;
            }
        }
        return n;
    }

    static void checkGroup(int totalPages, int cpSize) {
        if (cpSize < 1) {
            throw new IllegalArgumentException("cpSize must be >= 1, was " + cpSize);
        }
        if (totalPages < 1) {
            throw new IllegalArgumentException("totalPages must be >= 1, was " + totalPages);
        }
    }

    static void checkNode(int rank, int startPage, int pageCount, int totalPages, int cpSize) {
        checkGroup(totalPages, cpSize);
        if (rank < 0 || rank >= cpSize) {
            throw new IllegalArgumentException("rank " + rank + " out of [0, " + cpSize + ")");
        }
        if (startPage < 0 || pageCount < 0 || (long) startPage + pageCount > totalPages) {
            throw new IllegalArgumentException("node range [" + startPage + ", " + ((long) startPage + pageCount)
                    + ") out of [0, " + totalPages + ")");
        }
    }
}
