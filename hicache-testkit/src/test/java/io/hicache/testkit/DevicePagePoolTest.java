package io.hicache.testkit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DevicePagePoolTest {
    @Test
    void handsOutAscendingIdsThenFreedPagesInTheOrderTheyCameBack() {
        DevicePagePool pool = new DevicePagePool(4);
        assertThat(pool.take(3)).containsExactly(0, 1, 2);
        pool.free(new int[] {9, 2, 0}, 1, 2);
        assertThat(pool.freePages()).isEqualTo(3);
        int[] out = new int[5];
        assertThat(pool.allocate(3, out, 2)).isTrue();
        assertThat(out).containsExactly(0, 0, 3, 2, 0);
        assertThat(pool.freePages()).isZero();
    }

    @Test
    void anAllocationLargerThanTheFreeListTakesNothing() {
        DevicePagePool pool = new DevicePagePool(3);
        pool.poll();
        assertThat(pool.allocate(3, new int[3], 0)).isFalse();
        assertThat(pool.freePages()).isEqualTo(2);
        assertThatThrownBy(() -> pool.take(3)).isInstanceOf(IllegalStateException.class).hasMessageContaining("2 free");
        assertThat(pool.take(2)).containsExactly(1, 2);
        assertThatThrownBy(pool::poll).isInstanceOf(IllegalStateException.class).hasMessageContaining("empty");
    }

    @Test
    void refusesADoubleFreeAndAPageOutOfRange() {
        DevicePagePool pool = new DevicePagePool(2);
        int p = pool.poll();
        assertThat(pool.isFree(p)).isFalse();
        pool.free(p);
        assertThat(pool.isFree(p)).isTrue();
        assertThatThrownBy(() -> pool.free(p)).isInstanceOf(IllegalStateException.class).hasMessageContaining("twice");
        assertThatThrownBy(() -> pool.free(2)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("out of range");
        assertThat(pool.freePages()).isEqualTo(2);
        assertThatThrownBy(() -> new DevicePagePool(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theRingWrapsAroundManyTimes() {
        DevicePagePool pool = new DevicePagePool(3);
        int[] one = new int[1];
        for (int i = 0; i < 10; i++) {
            assertThat(pool.allocate(1, one, 0)).isTrue();
            assertThat(one[0]).isEqualTo(i % 3);
            pool.free(one, 0, 1);
        }
        assertThat(pool.freePages()).isEqualTo(3);
    }
}
