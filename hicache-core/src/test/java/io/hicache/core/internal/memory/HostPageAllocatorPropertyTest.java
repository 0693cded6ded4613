package io.hicache.core.internal.memory;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Random reserve/release sequences (with misuse mixed in) against a reference model: pages are
 * conserved, holders are tracked, and every rejected call leaves the allocator unchanged.
 */
class HostPageAllocatorPropertyTest {

    /** One step: kind 0 reserve, 1 release a live reservation, 2 double free, 3 free a never-allocated page,
     *  4 release part of a reservation twice in one batch. */
    record Step(int kind, int count, int pick) {
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Step> step = net.jqwik.api.Combinators.combine(
                Arbitraries.integers().between(0, 4), Arbitraries.integers().between(0, 20),
                Arbitraries.integers().between(0, 1000)).as(Step::new);
        return step.list().ofMinSize(1).ofMaxSize(80);
    }

    @Property(tries = 300)
    void pagesAreConservedAndMisuseChangesNothing(@ForAll @IntRange(min = 1, max = 48) int capacity,
                                                  @ForAll("steps") @Size(max = 80) List<Step> steps) {
        HostPageAllocator allocator = new HostPageAllocator(capacity);
        Map<Long, int[]> live = new HashMap<>();
        List<int[]> released = new ArrayList<>();
        boolean[] everAllocated = new boolean[capacity];
        long nextHolder = 0;
        for (Step s : steps) {
            switch (s.kind()) {
                case 0 -> {
                    int[] out = new int[s.count()];
                    int free = allocator.freePages();
                    int got = allocator.allocate(s.count(), out, 0, nextHolder);
                    if (s.count() > free) {
                        assertThat(got).isEqualTo(-1);
                    } else {
                        assertThat(got).isEqualTo(s.count());
                        for (int p : out) {
                            assertThat(allocator.holderOf(p)).isEqualTo(nextHolder);
                            everAllocated[p] = true;
                        }
                        live.put(nextHolder, out);
                    }
                    nextHolder++;
                }
                case 1 -> {
                    if (!live.isEmpty()) {
                        long holder = pickKey(live, s.pick());
                        int[] pages = live.remove(holder);
                        allocator.free(pages, 0, pages.length);
                        released.add(pages);
                    }
                }
                case 2 -> {
                    if (!released.isEmpty()) {
                        int[] pages = released.get(s.pick() % released.size());
                        // a page of it may have been reallocated since: only a still-free one is a double free
                        for (int p : pages) {
                            if (!allocator.isAllocated(p)) {
                                assertRejectedUnchanged(allocator, live, new int[] {p});
                                break;
                            }
                        }
                    }
                }
                case 3 -> {
                    for (int p = 0; p < capacity; p++) {
                        int page = (p + s.pick()) % capacity;
                        if (!everAllocated[page]) {
                            assertRejectedUnchanged(allocator, live, new int[] {page});
                            break;
                        }
                    }
                }
                default -> {
                    if (!live.isEmpty()) {
                        int[] pages = live.get(pickKey(live, s.pick()));
                        if (pages.length > 0) {
                            int[] twice = new int[pages.length + 1];
                            System.arraycopy(pages, 0, twice, 0, pages.length);
                            twice[pages.length] = pages[s.pick() % pages.length];
                            assertRejectedUnchanged(allocator, live, twice);
                        }
                    }
                }
            }
            assertConserved(allocator, live, capacity);
        }
        for (int[] pages : live.values()) {
            allocator.free(pages, 0, pages.length);
        }
        allocator.checkAllFree();
    }

    private static long pickKey(Map<Long, int[]> live, int pick) {
        List<Long> keys = new ArrayList<>(live.keySet());
        keys.sort(null);
        return keys.get(pick % keys.size());
    }

    private static void assertRejectedUnchanged(HostPageAllocator allocator, Map<Long, int[]> live, int[] pages) {
        int freeBefore = allocator.freePages();
        assertThatThrownBy(() -> allocator.free(pages, 0, pages.length)).isInstanceOf(IllegalArgumentException.class);
        assertThat(allocator.freePages()).isEqualTo(freeBefore);
        for (Map.Entry<Long, int[]> e : live.entrySet()) {
            for (int p : e.getValue()) {
                assertThat(allocator.holderOf(p)).isEqualTo(e.getKey());
            }
        }
    }

    private static void assertConserved(HostPageAllocator allocator, Map<Long, int[]> live, int capacity) {
        boolean[] seen = new boolean[capacity];
        int held = 0;
        for (int[] pages : live.values()) {
            for (int p : pages) {
                assertThat(seen[p]).as("page %d held twice", p).isFalse();
                seen[p] = true;
                held++;
            }
        }
        assertThat(allocator.allocatedPages()).isEqualTo(held);
        assertThat(allocator.freePages() + held).isEqualTo(capacity);
        for (int p = 0; p < capacity; p++) {
            assertThat(allocator.isAllocated(p)).isEqualTo(seen[p]);
        }
    }
}
