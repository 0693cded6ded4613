package io.hicache.sim.engine;

import io.hicache.core.DevicePageAllocator;

/**
 * The serving engine's device KV page pool, shared by every CP rank (identical scheduling gives every rank
 * the same ids, so one pool serves the group; see {@link Mirror}). Free pages are a bitmap handed out
 * next-fit in ascending order, so a request's pages form runs of consecutive ids whenever free space allows,
 * and the controller's copies of them coalesce. Refuses a page freed twice. Owned by the engine's scheduler
 * thread; not thread-safe. Allocation-free.
 */
final class DevicePagePool implements DevicePageAllocator {
    private final long[] freeBits;
    private final int capacity;
    private int freeCount;
    private int cursorPage;
    /** The fewest pages ever free: {@code capacity - minFree} is the peak in use. */
    private int minFree;

    /** A pool of pages {@code 0 .. capacityPages-1}, all free. */
    DevicePagePool(int capacityPages) {
        if (capacityPages < 1) {
            throw new IllegalArgumentException("device pool needs at least one page, got " + capacityPages);
        }
        capacity = capacityPages;
        freeBits = new long[(capacityPages + 63) >>> 6];
        for (int p = 0; p < capacityPages; p++) {
            freeBits[p >>> 6] |= 1L << p;
        }
        freeCount = capacityPages;
        minFree = capacityPages;
    }

    /** The most pages ever in use at once (held by requests or cached in the tree). */
    int peakUsedPages() {
        return capacity - minFree;
    }

    int capacityPages() {
        return capacity;
    }

    int freePages() {
        return freeCount;
    }

    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (count > freeCount) {
            return false;
        }
        int got = 0;
        int w = cursorPage >>> 6;
        long bits = freeBits[w] & (-1L << (cursorPage & 63)); // the first word from the cursor on
        int last = -1;
        int scanned = 0;
        while (got < count) {
            while (bits != 0 && got < count) {
                long low = bits & -bits;
                last = (w << 6) + Long.numberOfTrailingZeros(low);
                out[offset + got++] = last;
                freeBits[w] &= ~low;
                bits ^= low;
            }
            if (got < count) {
                w = w + 1 == freeBits.length ? 0 : w + 1;
                bits = freeBits[w];
                if (++scanned > freeBits.length + 1) {
                    throw new IllegalStateException("device pool free count " + freeCount + " disagrees with its bitmap");
                }
            }
        }
        cursorPage = last + 1 >= capacity ? 0 : last + 1;
        freeCount -= count;
        minFree = Math.min(minFree, freeCount);
        return true;
    }

    /**
     * Allocates one page, {@code after + 1} if it is free (so a request's decode pages follow its last page and
     * their copies coalesce), else as {@link #allocate}.
     */
    boolean allocateAfter(int after, int[] out, int offset) {
        int p = after + 1;
        if (p > 0 && p < capacity && (freeBits[p >>> 6] & (1L << p)) != 0) {
            freeBits[p >>> 6] &= ~(1L << p);
            freeCount--;
            minFree = Math.min(minFree, freeCount);
            out[offset] = p;
            return true;
        }
        return allocate(1, out, offset);
    }

    /**
     * Moves the next-fit cursor {@code pages} further, leaving the pages right after the last allocation to
     * {@link #allocateAfter} (a request about to decode grows into them); they stay free for anyone once the
     * cursor comes round.
     */
    void skip(int pages) {
        if (pages > 0) {
            cursorPage = (int) ((cursorPage + (long) pages) % capacity);
        }
    }

    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            int p = pages[offset + i];
            long bit = 1L << p;
            if ((freeBits[p >>> 6] & bit) != 0) {
                throw new IllegalStateException("device page " + p + " freed twice (it was already free)");
            }
            freeBits[p >>> 6] |= bit;
        }
        freeCount += count;
    }

    /** The free page ids, ascending. */
    int[] freeList() {
        int[] out = new int[freeCount];
        int n = 0;
        for (int w = 0; w < freeBits.length; w++) {
            long bits = freeBits[w];
            while (bits != 0) {
                long low = bits & -bits;
                out[n++] = (w << 6) + Long.numberOfTrailingZeros(low);
                bits ^= low;
            }
        }
        return out;
    }

    /**
     * The allocator rank 0 hands to its controller during one load-back: allocates from the pool and records
     * each answer so that the other ranks' {@link Mirror}s give the same answers (their trees make the same
     * calls in the same order). Scheduler thread only.
     */
    static final class Recorder implements DevicePageAllocator {
        private final DevicePagePool pool;
        private boolean[] results = new boolean[4];
        private int[][] pages = new int[4][];
        private int count;

        Recorder(DevicePagePool pool) {
            this.pool = pool;
        }

        void reset() {
            count = 0;
        }

        @Override
        public boolean allocate(int n, int[] out, int offset) {
            boolean ok = pool.allocate(n, out, offset);
            if (count == results.length) {
                results = java.util.Arrays.copyOf(results, count * 2);
                pages = java.util.Arrays.copyOf(pages, count * 2);
            }
            results[count] = ok;
            pages[count] = ok ? java.util.Arrays.copyOfRange(out, offset, offset + n) : null;
            count++;
            return ok;
        }

        @Override
        public void free(int[] p, int offset, int n) {
            pool.free(p, offset, n);
        }
    }

    /**
     * The allocator of ranks other than 0: replays the answers {@link Recorder} gave rank 0 for the same load
     * and frees nothing (rank 0 returns the shared ids to the pool). Scheduler thread only.
     */
    static final class Mirror implements DevicePageAllocator {
        private final Recorder source;
        private int next;

        Mirror(Recorder source) {
            this.source = source;
        }

        void reset() {
            next = 0;
        }

        @Override
        public boolean allocate(int n, int[] out, int offset) {
            if (next >= source.count) {
                throw new IllegalStateException("CP ranks diverged: rank 0 made " + source.count
                        + " device allocations for this load, another rank asks for more");
            }
            int i = next++;
            if (!source.results[i]) {
                return false;
            }
            if (source.pages[i].length != n) {
                throw new IllegalStateException("CP ranks diverged: rank 0 allocated " + source.pages[i].length
                        + " device pages, another rank asks for " + n);
            }
            System.arraycopy(source.pages[i], 0, out, offset, n);
            return true;
        }

        @Override
        public void free(int[] p, int offset, int n) {
            // rank 0 frees the shared ids
        }
    }
}
