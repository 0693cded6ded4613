package io.hicache.core.internal.memory;

import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class HostPageAllocatorTest {

    @Test
    void allocatesAscendingPagesAllOrNothingAndRecordsHolders() {
        HostPageAllocator allocator = new HostPageAllocator(8);
        int[] out = new int[10];
        assertThat(allocator.allocate(3, out, 1, 42L)).isEqualTo(3);
        assertThat(out).startsWith(0, 0, 1, 2);
        assertThat(allocator.holderOf(1)).isEqualTo(42L);
        assertThat(allocator.holderOf(5)).isEqualTo(HostPageAllocator.NO_HOLDER);
        assertThat(allocator.allocate(6, out, 0, 43L)).isEqualTo(-1);
        assertThat(allocator.freePages()).isEqualTo(5);
        assertThat(allocator.pagesHeldBy(42L)).isEqualTo(3);
        assertThatThrownBy(allocator::checkAllFree).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("page 0 (holder 42)");
        allocator.free(out, 1, 3);
        allocator.checkAllFree();
        assertThat(allocator.allocate(0, out, 10, 1L)).isZero();
    }

    @Test
    void misuseThrowsAndChangesNothing() {
        HostPageAllocator allocator = new HostPageAllocator(4);
        int[] pages = new int[4];
        allocator.allocate(2, pages, 0, 7L);
        assertThatThrownBy(() -> allocator.free(new int[] {3}, 0, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("never-allocated page 3");
        assertThatThrownBy(() -> allocator.free(new int[] {0, 4}, 0, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("page 4 out of");
        assertThatThrownBy(() -> allocator.free(new int[] {1, 0, 1}, 0, 3))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice in one batch");
        assertThat(allocator.freePages()).isEqualTo(2);
        assertThat(allocator.isAllocated(0)).isTrue();
        assertThat(allocator.isAllocated(1)).isTrue();

        allocator.free(pages, 0, 1);
        assertThatThrownBy(() -> allocator.free(new int[] {1, 0}, 0, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("double free of page 0")
                .hasMessageContaining("holder 7");
        assertThat(allocator.isAllocated(1)).isTrue();
        assertThatThrownBy(() -> allocator.allocate(1, pages, 0, -5L)).hasMessageContaining("holder");
        assertThatThrownBy(() -> allocator.allocate(2, pages, 3, 1L)).hasMessageContaining("out of array length");

        allocator.close();
        allocator.close();
        assertThatThrownBy(() -> allocator.free(pages, 1, 1))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> allocator.allocate(1, pages, 0, 1L))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThat(allocator.isAllocated(1)).isTrue();
    }

    @Test
    void allocateAndFreeAllocateNothing() {
        HostPageAllocator allocator = new HostPageAllocator(1024);
        int[] pages = new int[64];
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        for (int i = 0; i < 100; i++) {
            allocator.allocate(64, pages, 0, i);
            allocator.free(pages, 0, 64);
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 10_000; i++) {
            allocator.allocate(64, pages, 0, i);
            allocator.free(pages, 0, 64);
        }
        assertThat(threads.getCurrentThreadAllocatedBytes() - before).isLessThan(1024);
    }

    @Test
    void aFreedRunIsHandedOutAgainInItsOrderSoItStaysContiguous() {
        HostPageAllocator allocator = new HostPageAllocator(16);
        int[] run = new int[6];
        allocator.allocate(6, run, 0, 1L);
        assertThat(run).containsExactly(0, 1, 2, 3, 4, 5);
        allocator.free(run, 0, 6);
        int[] again = new int[6];
        allocator.allocate(6, again, 0, 2L);
        assertThat(again).containsExactly(0, 1, 2, 3, 4, 5);
    }
}
