package io.hicache.cuda.simulated;

import java.util.Arrays;

/**
 * The live allocations and registered ranges of a test-double runtime, sorted by base address (unsigned),
 * answering "which range holds this pointer" for every copy.
 *
 * <p><b>Lookups</b> are lock-free and allocation-free: a bounds check against the lowest base and the highest
 * end rejects pointers of another table at once (the simulated device's addresses lie above every host
 * address), then the range of the last hit is tried (copies of one pool hit it nearly always), then a binary
 * search. A profile of simulator replays found a third of the time in these lookups before the bounds check
 * and the last-hit cache.
 *
 * <p><b>Threads.</b> One writer at a time ({@link #insert}, {@link #remove}, {@link #clear}: the owner
 * serialises them under its lock); any number of readers. Writers publish a new sorted array (copy on write,
 * a cold path) with a volatile store; a reader sees a consistent snapshot. A removed range is marked
 * {@linkplain MemoryRange#live not live} so a last hit cached by a racing reader is not reused.
 */
final class MemoryTable {
    private static final MemoryRange[] EMPTY = new MemoryRange[0];

    private volatile MemoryRange[] ranges = EMPTY;
    /** The range the last successful lookup found; a hint, checked before use (package-private for a test). */
    volatile MemoryRange lastHit;

    /** The range holding all of {@code [ptr, ptr + len)}, or null (also for {@code len < 0}). */
    MemoryRange containing(long ptr, long len) {
        MemoryRange hit = lastHit;
        if (hit != null && hit.holds(ptr, len) && hit.live) {
            return hit;
        }
        MemoryRange[] rs = ranges;
        int n = rs.length;
        if (n == 0 || Long.compareUnsigned(ptr, rs[0].base) < 0 || Long.compareUnsigned(ptr, end(rs[n - 1])) >= 0) {
            return null; // below the lowest base or at or above the highest end: not in this table
        }
        int i = floorIndex(rs, ptr);
        if (i < 0) {
            return null;
        }
        MemoryRange r = rs[i];
        if (!r.holds(ptr, len)) {
            return null;
        }
        lastHit = r;
        return r;
    }

    /** The range whose first byte is {@code ptr}, or null. */
    MemoryRange startingAt(long ptr) {
        MemoryRange r = containing(ptr, 0);
        return r != null && r.base == ptr ? r : null;
    }

    /** True when any range shares a byte with {@code [ptr, ptr + len)} ({@code len > 0}). */
    boolean overlaps(long ptr, long len) {
        MemoryRange[] rs = ranges;
        int i = floorIndex(rs, ptr + len - 1);
        // ranges do not overlap, so only the last one starting before the end can reach back to ptr
        return i >= 0 && Long.compareUnsigned(end(rs[i]), ptr) > 0;
    }

    /** Adds {@code r}; it must not overlap a range already here. Writer only. */
    void insert(MemoryRange r) {
        MemoryRange[] rs = ranges;
        int i = floorIndex(rs, r.base) + 1;
        MemoryRange[] next = new MemoryRange[rs.length + 1];
        System.arraycopy(rs, 0, next, 0, i);
        next[i] = r;
        System.arraycopy(rs, i, next, i + 1, rs.length - i);
        ranges = next;
    }

    /** Removes {@code r} and marks it not live. Writer only. */
    void remove(MemoryRange r) {
        MemoryRange[] rs = ranges;
        int i = Arrays.asList(rs).indexOf(r);
        if (i < 0) {
            return;
        }
        MemoryRange[] next = new MemoryRange[rs.length - 1];
        System.arraycopy(rs, 0, next, 0, i);
        System.arraycopy(rs, i + 1, next, i, rs.length - i - 1);
        ranges = next;
        r.live = false;
        if (lastHit == r) {
            lastHit = null;
        }
    }

    /** Every live range, by address (the array is not shared with the table's later states). */
    MemoryRange[] snapshot() {
        return ranges;
    }

    /** How many ranges are live. */
    int size() {
        return ranges.length;
    }

    /** Removes every range, marking each not live. Writer only. */
    void clear() {
        MemoryRange[] rs = ranges;
        ranges = EMPTY;
        lastHit = null;
        for (MemoryRange r : rs) {
            r.live = false;
        }
    }

    private static long end(MemoryRange r) {
        return r.base + r.bytes;
    }

    /** Index of the last range whose base is at or below {@code ptr} (unsigned), or -1. */
    private static int floorIndex(MemoryRange[] rs, long ptr) {
        int lo = 0;
        int hi = rs.length - 1;
        int found = -1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            if (Long.compareUnsigned(rs[mid].base, ptr) <= 0) {
                found = mid;
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        return found;
    }
}
