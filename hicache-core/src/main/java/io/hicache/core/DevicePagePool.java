package io.hicache.core;

/**
 * An engine's device KV page pool: page ids {@code 0 .. capacity-1}, handed out to requests and to load-back (as
 * the {@link DevicePageAllocator}) and taken back when requests end or the tree evicts (as the
 * {@link DevicePageSink}). The one pool the simulator, the examples and the tests use; an engine with its own page
 * manager implements {@link DevicePageAllocator} instead.
 *
 * <p>Two orders, chosen at construction:
 * <ul>
 *   <li>{@link #DevicePagePool(int) first freed, first out}: ascending ids first, then pages in the order they came
 *       back (a first-in first-out free list), so seeded runs that free the same pages get the same ids;</li>
 *   <li>{@link #nextFit(int) next fit}: the lowest free ids from a cursor that follows the last allocation, so a
 *       request's pages form runs of consecutive ids whenever free space allows and their copies coalesce; it alone
 *       offers {@link #allocateAfter} and {@link #skip}.</li>
 * </ul>
 *
 * <p>Refuses a page out of range ({@link IllegalArgumentException}) and a page freed while already free
 * ({@link IllegalStateException}); a failed free leaves the pages before the bad one freed. An allocation is all
 * or nothing. Allocation-free after construction.
 *
 * <p>Owned by one thread (the engine's scheduler thread, the one that calls the cache); not thread-safe. With
 * context parallelism, ranks scheduled identically take the same ids from one pool each.
 */
public final class DevicePagePool implements DevicePageAllocator {
    private final int capacity;
    /** Bit {@code p} set: page {@code p} is free. */
    private final long[] freeBits;
    /** First freed, first out: the free pages in the order they leave; {@code null} for next fit. */
    private final int[] ring;
    private int head;
    private int freeCount;
    /** Next fit: the page the next allocation starts its search from. */
    private int cursor;
    /** The fewest pages ever free: {@code capacity - minFree} is the peak in use. */
    private int minFree;

    /**
     * A first-freed-first-out pool of pages {@code 0 .. capacity-1}, all free, handed out in ascending order first.
     *
     * @throws IllegalArgumentException when {@code capacity < 1}
     */
    public DevicePagePool(int capacity) {
        this(capacity, true);
    }

    /**
     * A next-fit pool of pages {@code 0 .. capacity-1}, all free.
     *
     * @throws IllegalArgumentException when {@code capacity < 1}
     */
    public static DevicePagePool nextFit(int capacity) {
        return new DevicePagePool(capacity, false);
    }

    private DevicePagePool(int capacity, boolean fifo) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a device page pool needs at least one page, got " + capacity);
        }
        this.capacity = capacity;
        freeBits = new long[(capacity + 63) >>> 6];
        for (int p = 0; p < capacity; p++) {
            freeBits[p >>> 6] |= 1L << p;
        }
        if (fifo) {
            ring = new int[capacity];
            for (int p = 0; p < capacity; p++) {
                ring[p] = p;
            }
        } else {
            ring = null;
        }
        freeCount = capacity;
        minFree = capacity;
    }

    /** Pages in the pool, free or not. */
    public int capacity() {
        return capacity;
    }

    /** Pages free now. */
    public int freePages() {
        return freeCount;
    }

    /** The most pages ever in use at once. */
    public int peakUsedPages() {
        return capacity - minFree;
    }

    /** Whether {@code page} is free (false for a page out of range). */
    public boolean isFree(int page) {
        return page >= 0 && page < capacity && (freeBits[page >>> 6] & (1L << page)) != 0;
    }

    /**
     * Allocates {@code count} pages into {@code out[offset ..)}, all or nothing.
     *
     * @return false (nothing taken) when fewer than {@code count} pages are free
     * @throws IllegalArgumentException when {@code count < 0}
     */
    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, was " + count);
        }
        if (count > freeCount) {
            return false;
        }
        if (ring != null) {
            for (int i = 0; i < count; i++) {
                out[offset + i] = pollRing();
            }
        } else {
            takeNextFit(count, out, offset);
        }
        return true;
    }

    /**
     * Takes {@code count} pages into a new array (a convenience for tests and set-up; it allocates).
     *
     * @throws IllegalStateException when fewer than {@code count} pages are free (nothing is taken)
     */
    public int[] take(int count) {
        int[] out = new int[count];
        if (!allocate(count, out, 0)) {
            throw new IllegalStateException("device page pool has " + freeCount + " free pages, " + count + " asked for");
        }
        return out;
    }

    /**
     * Takes one page.
     *
     * @throws IllegalStateException when no page is free
     */
    public int poll() {
        if (freeCount == 0) {
            throw new IllegalStateException("device page pool is empty (" + capacity + " pages, none free)");
        }
        if (ring != null) {
            return pollRing();
        }
        int[] one = {0};
        takeNextFit(1, one, 0);
        return one[0];
    }

    /**
     * Next fit: allocates one page, {@code after + 1} if it is free (so a request's decode pages follow its last
     * page and their copies coalesce), else as {@link #allocate}.
     *
     * @return false (nothing taken) when no page is free
     * @throws IllegalStateException on a first-freed-first-out pool
     */
    public boolean allocateAfter(int after, int[] out, int offset) {
        requireNextFit("allocateAfter");
        int p = after + 1;
        if (p > 0 && p < capacity && (freeBits[p >>> 6] & (1L << p)) != 0) {
            freeBits[p >>> 6] &= ~(1L << p);
            taken(1);
            out[offset] = p;
            return true;
        }
        return allocate(1, out, offset);
    }

    /**
     * Next fit: moves the cursor {@code pages} further, leaving the pages right after the last allocation to
     * {@link #allocateAfter} (a request about to decode grows into them); they stay free for anyone once the cursor
     * comes round. Nothing for {@code pages <= 0}.
     *
     * @throws IllegalStateException on a first-freed-first-out pool
     */
    public void skip(int pages) {
        requireNextFit("skip");
        if (pages > 0) {
            cursor = (int) ((cursor + (long) pages) % capacity);
        }
    }

    /**
     * Returns {@code page} to the pool (the tail of a first-freed-first-out list).
     *
     * @throws IllegalArgumentException when the page is out of range
     * @throws IllegalStateException when the page is already free (a double free)
     */
    public void free(int page) {
        if (page < 0 || page >= capacity) {
            throw new IllegalArgumentException("device page " + page + " is out of range [0, " + capacity + ")");
        }
        long bit = 1L << page;
        if ((freeBits[page >>> 6] & bit) != 0) {
            throw new IllegalStateException("device page " + page + " freed twice (it was already free)");
        }
        freeBits[page >>> 6] |= bit;
        if (ring != null) {
            int tail = head + freeCount;
            ring[tail >= capacity ? tail - capacity : tail] = page;
        }
        freeCount++;
    }

    /**
     * Returns {@code pages[offset .. offset+count)} to the pool, in that order.
     *
     * @throws IllegalArgumentException when a page is out of range
     * @throws IllegalStateException when a page is already free (a double free)
     */
    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            free(pages[offset + i]);
        }
    }

    /** The free page ids, ascending (a new array; for checks, not the hot path). */
    public int[] freeList() {
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

    private int pollRing() {
        int p = ring[head];
        head = head + 1 == capacity ? 0 : head + 1;
        freeBits[p >>> 6] &= ~(1L << p);
        taken(1);
        return p;
    }

    /** The lowest free ids from the cursor on, wrapping; the caller has checked {@code count <= freeCount}. */
    private void takeNextFit(int count, int[] out, int offset) {
        int got = 0;
        int w = cursor >>> 6;
        long bits = freeBits[w] & (-1L << (cursor & 63)); // the first word from the cursor on
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
        // an empty allocation puts the cursor back at page 0, as the simulator's pool always did (its runs replay)
        cursor = last + 1 >= capacity ? 0 : last + 1;
        taken(count);
    }

    private void taken(int count) {
        freeCount -= count;
        minFree = Math.min(minFree, freeCount);
    }

    private void requireNextFit(String what) {
        if (ring != null) {
            throw new IllegalStateException(what + " needs a next-fit pool (DevicePagePool.nextFit)");
        }
    }
}
