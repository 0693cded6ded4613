package io.hicache.serve.engine;

import io.hicache.core.DevicePageAllocator;

/**
 * The engine's device KV page pool: a stack of free page ids. Load-back allocates from it and device eviction
 * returns pages to it. An allocation takes the top block of the stack in the order it was pushed, so pages freed
 * together (an evicted node's, in sequence order) come back together and in order: consecutive page ids, which the
 * cache copies as one range per layer. Engine thread only (the cache's scheduler thread).
 */
final class DevicePool implements DevicePageAllocator {
    private final int[] free;
    private int top;

    DevicePool(int pages) {
        free = new int[pages];
        for (int i = 0; i < pages; i++) {
            free[i] = i;
        }
        top = pages;
    }

    @Override
    public boolean allocate(int count, int[] out, int offset) {
        if (top < count) {
            return false;
        }
        top -= count;
        System.arraycopy(free, top, out, offset, count);
        return true;
    }

    @Override
    public void free(int[] pages, int offset, int count) {
        for (int i = 0; i < count; i++) {
            int p = pages[offset + i];
            if (p < 0 || p >= free.length || top == free.length) {
                throw new IllegalStateException("device page " + p + " freed twice or out of range (pool of "
                    + free.length + ", " + top + " free)");
            }
            free[top++] = p;
        }
    }

    void freeOne(int page) {
        if (page < 0 || page >= free.length || top == free.length) {
            throw new IllegalStateException("device page " + page + " freed twice or out of range");
        }
        free[top++] = page;
    }

    int freePages() {
        return top;
    }

    int capacity() {
        return free.length;
    }

    /** Every page free again (the cache that held them is gone). */
    void reset() {
        for (int i = 0; i < free.length; i++) {
            free[i] = i;
        }
        top = free.length;
    }
}
