package io.hicache.core;

/**
 * Receives device pages the tree no longer holds (device eviction, duplicates), so the engine can reuse
 * them. Called on the scheduler thread; must not call back into the controller.
 */
@FunctionalInterface
public interface DevicePageSink {
    /** Pages {@code pages[offset .. offset+count)} are free for the engine to reuse. */
    void free(int[] pages, int offset, int count);
}
