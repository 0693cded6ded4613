package io.hicache.core.memory;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

class HostLayoutTilingTest {

    static Stream<Arguments> layoutsKindsAndShapes() {
        List<Arguments> cases = new ArrayList<>();
        for (HostLayout layout : HostLayout.values()) {
            for (AttentionKind kind : AttentionKind.values()) {
                for (int layers : new int[] {1, 3}) {
                    for (int pageSizeTokens : new int[] {1, 4}) {
                        for (int pages : new int[] {1, 5}) {
                            cases.add(Arguments.of(layout, kind, layers, pageSizeTokens, pages));
                        }
                    }
                }
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} {1} layers={2} pageSize={3} pages={4}")
    @MethodSource("layoutsKindsAndShapes")
    void everyTokenRowIsDisjointAndTheRowsTileThePool(HostLayout layout, AttentionKind kind, int layers,
                                                       int pageSizeTokens, int pages) {
        long bytesPerToken = kind == AttentionKind.MHA ? 6 : 10;
        KvPageShape shape = new KvPageShape(layers, kind.bufferCount(), pageSizeTokens, bytesPerToken);
        long total = shape.bytesPerPageAllLayers() * pages;
        int[] owner = new int[(int) total];
        java.util.Arrays.fill(owner, -1);
        int region = 0;
        for (int l = 0; l < layers; l++) {
            for (int b = 0; b < kind.bufferCount(); b++) {
                for (int p = 0; p < pages; p++) {
                    long start = layout.pageOffsetBytes(shape, pages, l, b, p);
                    if (p > 0) {
                        assertThat(start - layout.pageOffsetBytes(shape, pages, l, b, p - 1))
                                .as("page pitch").isEqualTo(layout.pagePitchBytes(shape, pages));
                    }
                    for (int t = 0; t < pageSizeTokens; t++) {
                        long row = start + t * layout.tokenPitchBytes(shape);
                        for (long i = row; i < row + bytesPerToken; i++) {
                            if (i < 0 || i >= total) {
                                fail("layer %d buffer %d page %d token %d: byte %d outside [0, %d)", l, b, p, t, i, total);
                            }
                            if (owner[(int) i] >= 0) {
                                fail("layer %d buffer %d page %d token %d overlaps region %d at byte %d",
                                        l, b, p, t, owner[(int) i], i);
                            }
                            owner[(int) i] = region;
                        }
                    }
                    region++;
                }
            }
        }
        assertThat(owner).as("every byte covered").doesNotContain(-1);
        if (layout.pageContiguous(shape)) {
            assertThat(layout.tokenPitchBytes(shape) == bytesPerToken || pageSizeTokens == 1).isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(HostLayout.class)
    void pagesAreContiguousExceptInTokenMajorPageFirst(HostLayout layout) {
        KvPageShape shape = new KvPageShape(4, 2, 16, 8);
        assertThat(layout.pageContiguous(shape)).isEqualTo(layout != HostLayout.PAGE_FIRST);
        assertThat(layout.pageContiguous(new KvPageShape(4, 2, 1, 8))).isTrue();
    }
}
