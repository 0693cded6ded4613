package io.hicache.core;

/**
 * The engine's device page pool, as load-back sees it: pages are allocated for host pages copied back to the
 * device and returned when a load fails (or when the tree evicts them). Called on the scheduler thread.
 */
public interface DevicePageAllocator extends DevicePageSink {
    /**
     * Allocates {@code count} device pages into {@code out[offset ..)}, all or nothing.
     *
     * @return true if allocated; false (and nothing allocated) when the pool has too few free pages
     */
    boolean allocate(int count, int[] out, int offset);
}
