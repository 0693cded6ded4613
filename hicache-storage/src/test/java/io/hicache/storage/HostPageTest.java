package io.hicache.storage;

import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.KvPageShape;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class HostPageTest {

    /** Every byte of the page id (as the layout places it) is in the object exactly once, nothing else. */
    @ParameterizedTest
    @EnumSource(HostLayout.class)
    void coversExactlyTheBytesOfOnePageId(HostLayout layout) {
        KvPageShape shape = new KvPageShape(3, 2, 4, 8);
        try (HostKvPool pool = HostKvPool.builder(new SimulatedCudaRuntime(), shape).layout(layout).pageCount(5).allocate()) {
            int page = 3;
            HostPage hp = HostPage.of(pool.pageSegments(page));
            assertThat(hp.byteSize()).isEqualTo(shape.bytesPerPageAllLayers());
            int expectedParts = switch (layout) {
                case LAYER_FIRST -> 6;
                case PAGE_FIRST, PAGE_FIRST_DIRECT -> 2;
            };
            assertThat(hp.partCount()).isEqualTo(expectedParts);

            Set<Long> expected = new HashSet<>();
            for (int b = 0; b < 2; b++) {
                for (int l = 0; l < 3; l++) {
                    long start = pool.pageAddress(l, b, page) - pool.baseAddress();
                    for (int t = 0; t < 4; t++) {
                        for (int w = 0; w < 8; w++) {
                            expected.add(start + t * pool.tokenPitchBytes() + w);
                        }
                    }
                }
            }
            Set<Long> actual = new HashSet<>();
            MemorySegment all = pool.segment();
            for (int i = 0; i < hp.partCount(); i++) {
                long off = hp.part(i).address() - all.address();
                for (long j = 0; j < hp.part(i).byteSize(); j++) {
                    assertThat(actual.add(off + j)).isTrue();
                }
            }
            assertThat(actual).isEqualTo(expected);

            // copyTo / copyFrom round trip in object order
            MemorySegment buf = MemorySegment.ofArray(new byte[(int) hp.byteSize()]);
            for (int i = 0; i < buf.byteSize(); i++) {
                buf.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            }
            hp.copyFrom(buf, 0);
            MemorySegment back = MemorySegment.ofArray(new byte[(int) hp.byteSize()]);
            hp.copyTo(back, 0);
            assertThat(back.mismatch(buf)).isEqualTo(-1);
        }
    }
}
