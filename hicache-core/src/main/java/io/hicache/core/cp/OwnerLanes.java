package io.hicache.core.cp;

/**
 * Which rank of a context-parallel (CP) group owns each page position of a sequence: the rank whose lane holds that
 * page's KV. A rank backs up, loads and stores in L3 only the pages it owns. An engine states its real KV sharding
 * by implementing {@link #lane}; {@link Standard} holds the strategies the library ships.
 *
 * <p><b>Positions and {@code totalPages}.</b> A sequence has page positions {@code 0, 1, ...}: position {@code p} holds
 * tokens {@code [p * pageSizeTokens, (p+1) * pageSizeTokens)} of the request. {@code totalPages} is what the cache
 * passes as the sequence length: <em>the end of the node being written</em>. A backup of the radix node covering
 * positions {@code [startPage, startPage + pageCount)} lays its lanes out with {@code totalPages = startPage +
 * pageCount}, the sequence as it stood when that node ended, and the node's host value keeps that layout for every
 * later load of it; a storage prefetch passes the end of the prefix it publishes. So nodes appended turn after turn
 * are laid out over growing lengths, and a strategy that depends on {@code totalPages} ({@link Standard#CONTIGUOUS},
 * {@link Standard#ZIGZAG}) puts each appended node in the last chunks of its own layout; one that does not
 * ({@link Standard#ROUND_ROBIN}, {@link Standard#STRIPED_ZIGZAG}) gives every position one owner for good.
 * A node's page at offset {@code i} is position {@code startPage + i}; the rank views ({@link #ownedOffsets},
 * {@link #ownedCount}) answer in node offsets, the indices into the node's own page arrays.
 *
 * <p><b>What an implementation must do.</b> {@link #lane} maps every position of {@code [0, totalPages)} to exactly one
 * rank in {@code [0, cpSize)}; it is a pure function of its arguments (the same answer on every rank, in every
 * process, at every time), thread-safe and allocation-free; {@link #name} is stable (it names the layout in logs, in
 * the simulator's reports and in L3 key seeds). {@link #owner} checks the arguments and the answer.
 */
public interface OwnerLanes {

    // The shipped strategies are OwnerLanes.Standard's constants. They are not repeated here as interface fields:
    // Standard initializes this interface (it declares default methods) before its own constants exist, so such a
    // field read Standard.X while Standard was being initialized and stayed null whenever Standard was touched first.

    /**
     * The rank owning {@code pagePosition} of a sequence laid out over {@code totalPages} pages, for arguments already
     * checked ({@code cpSize >= 1}, {@code 0 <= pagePosition < totalPages}). Pure; allocation-free.
     */
    int lane(int pagePosition, int totalPages, int cpSize);

    /** A stable name for this layout (an enum's constant name, or the engine's own). */
    String name();

    /**
     * The rank owning {@code pagePosition}.
     *
     * @throws IllegalArgumentException naming the value when {@code cpSize < 1}, {@code totalPages < 1} or the position
     *                                  is outside {@code [0, totalPages)}
     * @throws IllegalStateException    if {@link #lane} answers a rank outside {@code [0, cpSize)}
     */
    default int owner(int pagePosition, int totalPages, int cpSize) {
        checkGroup(totalPages, cpSize);
        if (pagePosition < 0 || pagePosition >= totalPages) {
            throw new IllegalArgumentException("pagePosition " + pagePosition + " out of [0, " + totalPages + ")");
        }
        return checkedLane(pagePosition, totalPages, cpSize);
    }

    /**
     * Writes to {@code out[0 ..)} the node offsets {@code i} (ascending) whose position {@code startPage + i} rank
     * {@code rank} owns, for a node covering {@code [startPage, startPage + pageCount)}.
     *
     * @return how many offsets were written
     * @throws IllegalArgumentException for a bad group, rank or node range, or when {@code out} is too small
     */
    default int ownedOffsets(int rank, int startPage, int pageCount, int totalPages, int cpSize, int[] out) {
        checkNode(rank, startPage, pageCount, totalPages, cpSize);
        if (out == null) {
            throw new IllegalArgumentException("out must not be null");
        }
        int n = 0;
        for (int i = 0; i < pageCount; i++) {
            if (checkedLane(startPage + i, totalPages, cpSize) == rank) {
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
    default int ownedCount(int rank, int startPage, int pageCount, int totalPages, int cpSize) {
        checkNode(rank, startPage, pageCount, totalPages, cpSize);
        int n = 0;
        for (int i = 0; i < pageCount; i++) {
            if (checkedLane(startPage + i, totalPages, cpSize) == rank) {
                n++;
            }
        }
        return n;
    }

    private int checkedLane(int pagePosition, int totalPages, int cpSize) {
        int r = lane(pagePosition, totalPages, cpSize);
        if (r < 0 || r >= cpSize) {
            throw new IllegalStateException("lane strategy " + name() + " put position " + pagePosition + " of "
                    + totalPages + " on rank " + r + ", outside [0, " + cpSize + ")");
        }
        return r;
    }

    private static void checkGroup(int totalPages, int cpSize) {
        if (cpSize < 1) {
            throw new IllegalArgumentException("cpSize must be >= 1, was " + cpSize);
        }
        if (totalPages < 1) {
            throw new IllegalArgumentException("totalPages must be >= 1, was " + totalPages);
        }
    }

    private static void checkNode(int rank, int startPage, int pageCount, int totalPages, int cpSize) {
        checkGroup(totalPages, cpSize);
        if (rank < 0 || rank >= cpSize) {
            throw new IllegalArgumentException("rank " + rank + " out of [0, " + cpSize + ")");
        }
        if (startPage < 0 || pageCount < 0 || (long) startPage + pageCount > totalPages) {
            throw new IllegalArgumentException("node range [" + startPage + ", " + ((long) startPage + pageCount)
                    + ") out of [0, " + totalPages + ")");
        }
    }

    /**
     * The strategies the library ships. Chunks are split as evenly as possible: chunk {@code k} of {@code n} over
     * {@code T} positions is {@code [floor(k*T/n), floor((k+1)*T/n))}. Stateless; thread-safe; allocation-free.
     */
    enum Standard implements OwnerLanes {
        /** Position {@code p} belongs to rank {@code p mod cpSize}; independent of {@code totalPages}. */
        ROUND_ROBIN {
            @Override
            public int lane(int pagePosition, int totalPages, int cpSize) {
                return pagePosition % cpSize;
            }
        },
        /** {@code cpSize} contiguous blocks of {@code [0, totalPages)}: rank {@code r} owns block {@code r}. */
        CONTIGUOUS {
            @Override
            public int lane(int pagePosition, int totalPages, int cpSize) {
                return chunkOf(pagePosition, totalPages, cpSize);
            }
        },
        /**
         * {@code 2 * cpSize} chunks of {@code [0, totalPages)}; rank {@code r} owns chunks {@code r} and
         * {@code 2*cpSize-1-r}, which balances causal attention work over one prefill (early chunks are cheap, late
         * ones dear). Appended turns land in the last chunks, rank 0's (see {@code docs/CP-PROCESSES.md}).
         */
        ZIGZAG {
            @Override
            public int lane(int pagePosition, int totalPages, int cpSize) {
                int chunk = chunkOf(pagePosition, totalPages, 2 * cpSize);
                return chunk < cpSize ? chunk : 2 * cpSize - 1 - chunk;
            }
        },
        /**
         * Zigzag within every stripe of {@code 2 * cpSize} pages: position {@code p} with {@code q = p mod 2*cpSize}
         * belongs to {@code q} for {@code q < cpSize}, else to {@code 2*cpSize-1-q}. Every stripe gives each rank one
         * early and one late page (the causal balance of {@link #ZIGZAG}), the owner of a position never depends on
         * {@code totalPages}, and any run of {@code n} consecutive pages (an appended turn) gives each rank
         * {@code floor(n / (2*cpSize)) * 2} pages plus at most 2.
         */
        STRIPED_ZIGZAG {
            @Override
            public int lane(int pagePosition, int totalPages, int cpSize) {
                int q = pagePosition % (2 * cpSize);
                return q < cpSize ? q : 2 * cpSize - 1 - q;
            }
        };

        /** Chunk {@code k} of {@code n} holding {@code pos}, for chunks {@code [floor(k*T/n), floor((k+1)*T/n))}. */
        static int chunkOf(int pos, int total, int n) {
            return (int) ((((long) pos + 1) * n + total - 1) / total - 1);
        }
    }
}
