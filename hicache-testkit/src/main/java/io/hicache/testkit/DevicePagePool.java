package io.hicache.testkit;

import io.hicache.core.DevicePageAllocator;

/**
 * A test engine's device page pool: page ids {@code 0 .. capacity-1}, kept in a first-in first-out free list, so
 * pages come back out in the order they were freed (the order a {@code java.util.ArrayDeque} free list gives, which
 * keeps seeded tests reproducible). Refuses a page out of range or freed while already free. Allocation-free after
 * construction.
 *
 * <p>Owned by one thread (a test's scheduler thread); not thread-safe. With context parallelism, ranks scheduled
 * identically take the same ids from one pool each (or share one pool when every rank sees the same answers).
 */
public final class DevicePagePool implements DevicePageAllocator {
    private final int[] ring;
    private final boolean[] free;
    private int head;
    private int size;

    /** A pool of pages {@code 0 .. capacity-1}, all free, handed out in ascending order first. */
    public DevicePagePool(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("a device page pool needs at least one page, got " + capacity);
        }
        ring = new int[capacity];
        free = new boolean[capacity];
        for (int p = 0; p < capacity; p++) {
            ring[p] = p;
            free[p] = true;
        }
        size = capacity;
    }

    /** Pages in the pool, free or not. */
    public int capacity() {
        return ring.length;
    }

    /** Pages free now. */
    public int freePages() {
        return size;
    }

    /** Whether {@code page} is in the free list. */
    public boolean isFree(int page) {
        return page >= 0 && page < ring.length && free[page];
    }

    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (count < 0) {
            throw new IllegalArgumentException("count must be >= 0, was " + count);
        }
        if (size < count) {
            return false;
        }
        for (int i = 0; i < count; i++) {
            out[offset + i] = poll();
        }
        return true;
    }

    /**
     * Takes {@code count} pages from the head of the free list into a new array.
     *
     * @throws IllegalStateException when fewer than {@code count} pages are free (nothing is taken)
     */
    public int[] take(int count) {
        int[] out = new int[count];
        if (!allocate(count, out, 0)) {
            throw new IllegalStateException("device page pool has " + size + " free pages, " + count + " asked for");
        }
        return out;
    }

    /**
     * Takes the page at the head of the free list.
     *
     * @throws IllegalStateException when no page is free
     */
    public int poll() {
        if (size == 0) {
            throw new IllegalStateException("device page pool is empty (" + ring.length + " pages, none free)");
        }
        int p = ring[head];
        head = head + 1 == ring.length ? 0 : head + 1;
        size--;
        free[p] = false;
        return p;
    }

    /**
     * Returns {@code page} to the tail of the free list.
     *
     * @throws IllegalArgumentException when the page is out of range
     * @throws IllegalStateException when the page is already free (a double free)
     */
    public void free(int page) {
        if (page < 0 || page >= ring.length) {
            throw new IllegalArgumentException("device page " + page + " is out of range [0, " + ring.length + ")");
        }
        if (free[page]) {
            throw new IllegalStateException("device page " + page + " freed twice (it was already free)");
        }
        free[page] = true;
        int tail = head + size;
        ring[tail >= ring.length ? tail - ring.length : tail] = page;
        size++;
    }

    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            free(pages[offset + i]);
        }
    }
}
