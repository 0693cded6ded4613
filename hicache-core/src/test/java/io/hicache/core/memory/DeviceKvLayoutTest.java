package io.hicache.core.memory;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DeviceKvLayoutTest {

    private static DeviceKvLayout.Builder mha() {
        return DeviceKvLayout.builder(AttentionKind.MHA).layerCount(2).pageSizeTokens(16)
                .bytesPerTokenPerBuffer(DeviceKvLayout.mhaBytesPerToken(8, 128, 2)).pageCount(10);
    }

    @Test
    void computesPageAddressesFromBasesAndStride() {
        DeviceKvLayout layout = mha().pageStrideBytes(40_000)
                .bufferBase(0, AttentionKind.K, 0x1000_0000L).bufferBase(0, AttentionKind.V, 0x2000_0000L)
                .bufferBase(1, AttentionKind.K, 0x3000_0000L).bufferBase(1, AttentionKind.V, 0x4000_0000L).build();
        assertThat(layout.pageBytes()).isEqualTo(16 * 8 * 128 * 2);
        assertThat(layout.bufferCount()).isEqualTo(2);
        assertThat(layout.pageAddress(1, AttentionKind.V, 3)).isEqualTo(0x4000_0000L + 3 * 40_000L);
        assertThat(layout.bytesPerPageAllLayers()).isEqualTo(4 * layout.pageBytes());
        assertThat(layout.totalPageBytes()).isEqualTo(10 * layout.bytesPerPageAllLayers());
        assertThatThrownBy(() -> layout.pageAddress(0, 0, 10)).isInstanceOf(IndexOutOfBoundsException.class)
                .hasMessageContaining("devicePage 10");
        assertThatThrownBy(() -> layout.pageAddress(0, 2, 0)).hasMessageContaining("buffer 2");
    }

    @Test
    void mlaHasOneLatentBufferOfLoraRankPlusRopeWidth() {
        long perToken = DeviceKvLayout.mlaBytesPerToken(512, 64, 2);
        assertThat(perToken).isEqualTo(1152);
        DeviceKvLayout layout = DeviceKvLayout.builder(AttentionKind.MLA).layerCount(61).pageSizeTokens(64)
                .bytesPerTokenPerBuffer(perToken).pageCount(100).packedFrom(0x10_0000L).build();
        assertThat(layout.bufferCount()).isEqualTo(1);
        assertThat(layout.pageAddress(1, AttentionKind.LATENT, 0)).isEqualTo(0x10_0000L + 100 * 64 * 1152L);
        assertThat(layout.shape()).isEqualTo(new KvPageShape(61, 1, 64, 1152));
    }

    @Test
    void validationNamesTheBadField() {
        assertThatThrownBy(() -> DeviceKvLayout.builder(AttentionKind.MHA).layerCount(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("layerCount");
        assertThatThrownBy(() -> mha().pageSizeTokens(0).packedFrom(0x1000).build())
                .hasMessageContaining("pageSizeTokens");
        assertThatThrownBy(() -> mha().bytesPerTokenPerBuffer(0).packedFrom(0x1000).build())
                .hasMessageContaining("bytesPerTokenPerBuffer");
        assertThatThrownBy(() -> mha().packedFrom(0x1000).pageCount(0).build()).hasMessageContaining("pageCount");
        assertThatThrownBy(() -> mha().pageStrideBytes(100).packedFrom(0x1000).build())
                .hasMessageContaining("pageStrideBytes");
        assertThatThrownBy(() -> mha().bufferBase(0, 0, 0x1000).build())
                .hasMessageContaining("bufferBase(layer=0, buffer=1) is not set");
        assertThatThrownBy(() -> mha().packedFrom(0x100000).bufferBase(1, 1, 0x100000 + 100).build())
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("overlaps");
        assertThatThrownBy(() -> DeviceKvLayout.mhaBytesPerToken(0, 128, 2)).hasMessageContaining("kvHeads");
        assertThatThrownBy(() -> DeviceKvLayout.mlaBytesPerToken(512, -1, 2)).hasMessageContaining("qkRopeHeadDim");
    }
}
