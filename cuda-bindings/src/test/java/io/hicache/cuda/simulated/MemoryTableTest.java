package io.hicache.cuda.simulated;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

/** The allocation table's lookups, against a linear scan, with its bounds check and last-hit cache in play. */
class MemoryTableTest {

    private static MemoryRange range(long base, long bytes) {
        return new MemoryRange(base, bytes, MemorySegment.NULL, null, MemoryRange.PINNED_HOST);
    }

    private static MemoryRange scan(List<MemoryRange> live, long ptr, long len) {
        for (MemoryRange r : live) {
            if (len >= 0 && ptr >= r.base && ptr - r.base < r.bytes && len <= r.bytes - (ptr - r.base)) {
                return r;
            }
        }
        return null;
    }

    @Test
    void aRemovedRangeIsNotFoundAgainThroughTheLastHit() {
        MemoryTable table = new MemoryTable();
        MemoryRange a = range(4096, 1024);
        table.insert(a);
        assertThat(table.containing(4100, 8)).isSameAs(a); // now the last hit
        table.remove(a);
        assertThat(a.live).isFalse();
        assertThat(table.containing(4100, 8)).isNull();
        assertThat(table.startingAt(4096)).isNull();
    }

    @Test
    void aStaleLastHitCachedByARacingReaderIsNotReused() {
        MemoryTable table = new MemoryTable();
        MemoryRange a = range(4096, 1024);
        table.insert(a);
        table.insert(range(8192, 64));
        table.remove(a);
        // A reader that found a in the snapshot before the removal stores it as the last hit after the removal
        // cleared it; a is no longer live, so the next lookup must not answer with it.
        table.lastHit = a;
        assertThat(table.containing(4100, 8)).isNull();
        assertThat(table.containing(8200, 8)).isNotNull();
    }

    @Test
    void pointersOutsideTheTableAndRangesCrossingAnEndAreRejected() {
        MemoryTable table = new MemoryTable();
        table.insert(range(1L << 60, 4096));
        assertThat(table.containing(0x7000_0000L, 8)).isNull(); // a host pointer, below the lowest base
        assertThat(table.containing((1L << 60) + 4096, 0)).isNull(); // one past the end
        assertThat(table.containing((1L << 60) + 4000, 200)).isNull(); // crosses the end
        assertThat(table.containing((1L << 60) + 4000, -1)).isNull();
        assertThat(table.containing((1L << 60) + 4000, 96)).isNotNull();
        assertThat(table.overlaps((1L << 60) - 8, 9)).isTrue();
        assertThat(table.overlaps((1L << 60) - 8, 8)).isFalse();
        assertThat(table.overlaps((1L << 60) + 4095, 1)).isTrue();
        assertThat(table.overlaps((1L << 60) + 4096, 1)).isFalse();
    }

    @Test
    void lookupsMatchALinearScanThroughInsertsAndRemoves() {
        SplittableRandom random = new SplittableRandom(25);
        MemoryTable table = new MemoryTable();
        List<MemoryRange> live = new ArrayList<>();
        for (int step = 0; step < 20_000; step++) {
            int action = random.nextInt(10);
            if (action == 0 && live.size() < 32) {
                long base = 4096L * random.nextInt(1, 256);
                long bytes = 16L * random.nextInt(1, 200);
                if (!table.overlaps(base, bytes)) {
                    MemoryRange r = range(base, bytes);
                    table.insert(r);
                    live.add(r);
                }
            } else if (action == 1 && !live.isEmpty()) {
                MemoryRange r = live.remove(random.nextInt(live.size()));
                table.remove(r);
            } else {
                long ptr = random.nextLong(0, 4096L * 260);
                long len = random.nextLong(-1, 4096);
                assertThat(table.containing(ptr, len)).as("containing(%d, %d)", ptr, len).isSameAs(scan(live, ptr, len));
            }
            assertThat(table.size()).isEqualTo(live.size());
        }
    }
}
