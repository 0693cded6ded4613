package io.hicache.cuda.simulated;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * One live allocation or registered range of a test-double runtime: where it starts, how long it is, the
 * real memory behind it and the arena that frees it (null for a caller-owned registered range).
 *
 * <p>The identity fields are final. {@link #live} is cleared (a volatile store) when the range leaves its
 * {@link MemoryTable}, so a lock-free reader that cached it can tell. {@link #pendingOps} is the simulated
 * runtime's count of queued copy ranges using this memory; it is read and written only under that
 * runtime's lock.
 */
final class MemoryRange {
    /** From {@code deviceMalloc}. */
    static final int DEVICE = 0;
    /** From {@code hostAlloc}. */
    static final int PINNED_HOST = 1;
    /** Registered with {@code hostRegister}; the caller owns the memory. */
    static final int REGISTERED_HOST = 2;

    final long base;
    final long bytes;
    final MemorySegment segment;
    final Arena arena;
    final int kind;
    volatile boolean live = true;
    int pendingOps;

    MemoryRange(long base, long bytes, MemorySegment segment, Arena arena, int kind) {
        this.base = base;
        this.bytes = bytes;
        this.segment = segment;
        this.arena = arena;
        this.kind = kind;
    }

    /** True when {@code [ptr, ptr + len)} lies inside this range ({@code len >= 0}). */
    boolean holds(long ptr, long len) {
        long off = ptr - base;
        return len >= 0 && Long.compareUnsigned(off, bytes) < 0 && Long.compareUnsigned(off + len, bytes) <= 0;
    }

    /** True when this is device memory. */
    boolean device() {
        return kind == DEVICE;
    }
}
