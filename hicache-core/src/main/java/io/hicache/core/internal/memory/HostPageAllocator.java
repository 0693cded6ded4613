package io.hicache.core.internal.memory;

/**
 * Hands out host page ids {@code 0 .. capacityPages-1} of a {@link HostKvPool} (and of its draft pool,
 * which shares the ids). A free-list stack: {@link #allocate} and {@link #free} cost O(1) per page and
 * allocate nothing. Each allocated page records its holder (e.g. a backup reservation id) so a leak check
 * can name it. A fresh allocator hands out ascending ids, so early allocations are contiguous, and a batch
 * freed together is handed out again in the order it was freed (a contiguous run stays contiguous).
 *
 * <p><b>Threads.</b> Owned by the scheduler thread; not thread-safe.
 *
 * <p><b>Failures.</b> Misuse throws and changes nothing: every page of a batch is validated before any
 * state changes. {@link IllegalArgumentException} for a page out of range, a double free (also within one
 * batch), a free of a never-allocated page, a negative holder or bad array bounds;
 * {@link IllegalStateException} for use after {@link #close()} and for a double allocation (a page on the
 * free list that is already allocated, i.e. a corrupted free list). Running out of pages is not an error:
 * {@link #allocate} returns {@code -1}.
 */
public final class HostPageAllocator {
    /** {@link #holderOf} of a free page. Holders are {@code >= 0}. */
    public static final long NO_HOLDER = -1L;

    private static final byte NEVER_ALLOCATED = 0;
    private static final byte ALLOCATED = 1;
    private static final byte FREED = 2;

    private final int capacityPages;
    private final int[] freeStack;
    private int freeTop;
    private final byte[] state;
    /** Holder of an allocated page; the last holder of a freed one (for messages). */
    private final long[] holders;
    /** Per-page stamp to find duplicates within one {@link #free} batch without allocating. */
    private final int[] batchStamp;
    private int batchEpoch;
    private boolean closed;

    /**
     * @param capacityPages number of page ids, at least 1 (normally {@link HostKvPool#pageCount()})
     * @throws IllegalArgumentException when {@code capacityPages < 1}
     */
    public HostPageAllocator(int capacityPages) {
        if (capacityPages < 1) {
            throw new IllegalArgumentException("capacityPages must be >= 1, was " + capacityPages);
        }
        this.capacityPages = capacityPages;
        this.freeStack = new int[capacityPages];
        for (int i = 0; i < capacityPages; i++) {
            freeStack[i] = capacityPages - 1 - i;
        }
        this.freeTop = capacityPages;
        this.state = new byte[capacityPages];
        this.holders = new long[capacityPages];
        this.batchStamp = new int[capacityPages];
    }

    /**
     * Allocates {@code count} pages for {@code holder}, all or nothing, writing their ids to
     * {@code out[outOffset .. outOffset+count)}.
     *
     * @return {@code count}, or {@code -1} with no state change when fewer than {@code count} pages are free
     */
    public int allocate(int count, int[] out, int outOffset, long holder) {
        checkOpen();
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, was " + count);
        }
        if (holder < 0) {
            throw new IllegalArgumentException("holder must be >= 0, was " + holder);
        }
        checkBounds(out, outOffset, count, "out");
        if (count > freeTop) {
            return -1;
        }
        for (int i = 1; i <= count; i++) {
            int page = freeStack[freeTop - i];
            if (state[page] == ALLOCATED) {
                throw new IllegalStateException("double allocation: page " + page
                        + " is on the free list but held by holder " + holders[page]);
            }
        }
        for (int i = 0; i < count; i++) {
            int page = freeStack[--freeTop];
            state[page] = ALLOCATED;
            holders[page] = holder;
            out[outOffset + i] = page;
        }
        return count;
    }

    /** Frees {@code pages[offset .. offset+count)}, all or nothing. */
    public void free(int[] pages, int offset, int count) {
        checkOpen();
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, was " + count);
        }
        checkBounds(pages, offset, count, "pages");
        int epoch = nextEpoch();
        for (int i = 0; i < count; i++) {
            int page = pages[offset + i];
            if (page < 0 || page >= capacityPages) {
                throw new IllegalArgumentException("page " + page + " out of [0, " + capacityPages + ")");
            }
            if (state[page] == NEVER_ALLOCATED) {
                throw new IllegalArgumentException("free of never-allocated page " + page);
            }
            if (state[page] == FREED) {
                throw new IllegalArgumentException("double free of page " + page + " (last held by holder "
                        + holders[page] + ")");
            }
            if (batchStamp[page] == epoch) {
                throw new IllegalArgumentException("double free of page " + page
                        + ": it appears twice in one batch (held by holder " + holders[page] + ")");
            }
            batchStamp[page] = epoch;
        }
        // Pushed last to first, so the next allocate pops the batch in its original order: a freed run of
        // ascending pages comes back ascending and its copies still coalesce.
        for (int i = count - 1; i >= 0; i--) {
            int page = pages[offset + i];
            state[page] = FREED;
            freeStack[freeTop++] = page;
        }
    }

    private int nextEpoch() {
        batchEpoch++;
        if (batchEpoch == 0) {
            java.util.Arrays.fill(batchStamp, 0);
            batchEpoch = 1;
        }
        return batchEpoch;
    }

    /** Free pages. */
    public int freePages() {
        return freeTop;
    }

    /** Allocated pages. */
    public int allocatedPages() {
        return capacityPages - freeTop;
    }

    /** Page ids this allocator manages. */
    public int capacityPages() {
        return capacityPages;
    }

    /** True when {@code page} is allocated. */
    public boolean isAllocated(int page) {
        checkPage(page);
        return state[page] == ALLOCATED;
    }

    /** The holder of an allocated page, or {@link #NO_HOLDER} when it is free. */
    public long holderOf(int page) {
        checkPage(page);
        return state[page] == ALLOCATED ? holders[page] : NO_HOLDER;
    }

    /** Pages held by {@code holder}. O(capacity): a cold-path check. */
    public int pagesHeldBy(long holder) {
        int n = 0;
        for (int p = 0; p < capacityPages; p++) {
            if (state[p] == ALLOCATED && holders[p] == holder) {
                n++;
            }
        }
        return n;
    }

    /**
     * Leak check: throws {@link IllegalStateException} naming up to 8 allocated pages and their holders when
     * any page is allocated. O(capacity): a cold-path check (tests, shutdown, debug assertions).
     */
    public void checkAllFree() {
        if (freeTop == capacityPages) {
            return;
        }
        StringBuilder sb = new StringBuilder().append(allocatedPages()).append(" host pages still allocated:");
        int shown = 0;
        for (int p = 0; p < capacityPages && shown < 8; p++) {
            if (state[p] == ALLOCATED) {
                sb.append(" page ").append(p).append(" (holder ").append(holders[p]).append(')');
                shown++;
            }
        }
        throw new IllegalStateException(sb.toString());
    }

    /** Closes the allocator; later allocate and free calls throw. Idempotent. */
    public void close() {
        closed = true;
    }

    /** True once closed. */
    public boolean isClosed() {
        return closed;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("host page allocator is closed");
        }
    }

    private void checkPage(int page) {
        if (page < 0 || page >= capacityPages) {
            throw new IllegalArgumentException("page " + page + " out of [0, " + capacityPages + ")");
        }
    }

    private static void checkBounds(int[] array, int offset, int count, String name) {
        if (array == null) {
            throw new IllegalArgumentException(name + " must not be null");
        }
        if (offset < 0 || offset > array.length - count) {
            throw new IllegalArgumentException(name + " range [" + offset + ", " + ((long) offset + count)
                    + ") out of array length " + array.length);
        }
    }
}
