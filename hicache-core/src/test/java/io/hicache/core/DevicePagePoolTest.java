package io.hicache.core;

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

    @Test
    void nextFitHandsOutRunsFromACursorThatWrapsRound() {
        DevicePagePool pool = DevicePagePool.nextFit(130);
        assertThat(pool.take(3)).containsExactly(0, 1, 2);
        pool.free(new int[] {0, 1}, 0, 2);
        // the cursor follows the last allocation: freed low pages wait until it comes round
        assertThat(pool.take(2)).containsExactly(3, 4);
        assertThat(pool.take(127)).startsWith(5, 6).endsWith(129, 0, 1);
        assertThat(pool.freePages()).isZero();
        assertThat(pool.peakUsedPages()).isEqualTo(130);
        assertThat(pool.allocate(1, new int[1], 0)).isFalse();
        pool.free(new int[] {70, 64, 3}, 0, 3);
        assertThat(pool.freeList()).containsExactly(3, 64, 70);
    }

    @Test
    void nextFitGrowsARequestIntoThePageAfterItsLastAndSkipsPastIt() {
        DevicePagePool pool = DevicePagePool.nextFit(8);
        int[] out = new int[2];
        assertThat(pool.allocate(2, out, 0)).isTrue();
        assertThat(out).containsExactly(0, 1);
        pool.skip(2); // leave pages 2 and 3 to the request that holds 0 and 1
        assertThat(pool.take(1)).containsExactly(4);
        assertThat(pool.allocateAfter(1, out, 0)).isTrue();
        assertThat(out[0]).isEqualTo(2);
        // the page after is taken: any free page, from the cursor
        assertThat(pool.allocateAfter(3, out, 0)).isTrue();
        assertThat(out[0]).isEqualTo(5);
        assertThat(pool.isFree(3)).isTrue();
        assertThat(pool.freePages()).isEqualTo(3);
    }

    @Test
    void nextFitRefusesADoubleFreeAndAPageOutOfRange() {
        DevicePagePool pool = DevicePagePool.nextFit(4);
        int p = pool.poll();
        pool.free(p);
        assertThatThrownBy(() -> pool.free(p)).isInstanceOf(IllegalStateException.class).hasMessageContaining("twice");
        assertThatThrownBy(() -> pool.free(-1)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("out of range");
        assertThat(pool.freePages()).isEqualTo(4);
    }

    @Test
    void onlyANextFitPoolGrowsAfterAPageOrSkips() {
        DevicePagePool pool = new DevicePagePool(4);
        assertThatThrownBy(() -> pool.allocateAfter(0, new int[1], 0)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("nextFit");
        assertThatThrownBy(() -> pool.skip(1)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> pool.allocate(-1, new int[1], 0)).isInstanceOf(IllegalArgumentException.class);
    }
}
