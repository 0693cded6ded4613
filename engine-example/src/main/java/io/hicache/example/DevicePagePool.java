package io.hicache.example;

import io.hicache.core.DevicePageAllocator;

import java.util.ArrayDeque;

/**
 * The toy engine's device page pool: page ids {@code 0 .. pageCount-1}, handed out and taken back by the
 * cache through {@link DevicePageAllocator}. Scheduler thread only; not thread-safe.
 */
public final class DevicePagePool implements DevicePageAllocator {
    private final ArrayDeque<Integer> free = new ArrayDeque<>();

    /** A pool of {@code pageCount} free pages. */
    public DevicePagePool(int pageCount) {
        if (pageCount < 1) {
            throw new IllegalArgumentException("pageCount must be >= 1, was " + pageCount);
        }
        for (int p = 0; p < pageCount; p++) {
            free.add(p);
        }
    }

    /** Pages free now. */
    public int freePages() {
        return free.size();
    }

    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (free.size() < count) {
            return false;
        }
        for (int i = 0; i < count; i++) {
            out[offset + i] = free.poll();
        }
        return true;
    }

    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            free.add(pages[offset + i]);
        }
    }
}
