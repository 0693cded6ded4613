package io.hicache.sim.model;

import io.hicache.core.memory.AttentionKind;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PresetsTest {

    @Test
    void kvBytesPerTokenMatchTheModelCards() {
        assertThat(ModelPreset.LLAMA3_70B.kvBytesPerToken()).isEqualTo(320L * 1024);
        assertThat(ModelPreset.LLAMA3_8B.kvBytesPerToken()).isEqualTo(128L * 1024);
        assertThat(ModelPreset.DEEPSEEK_V3.kvBytesPerTokenPerLayer()).isEqualTo((512 + 64) * 2);
        assertThat(ModelPreset.DEEPSEEK_V3.layers()).isEqualTo(61);
        assertThat(ModelPreset.DEEPSEEK_V3.defaultDraftLayers()).isEqualTo(1);
        assertThat(ModelPreset.DEEPSEEK_V3.attention()).isEqualTo(AttentionKind.MLA);
        assertThat(ModelPreset.DEFAULT).isEqualTo(ModelPreset.LLAMA3_70B);
    }

    @Test
    void parameterCountsAddUpToTheAdvertisedSizes() {
        // 80 x 855.65M + embeddings/head 2 x 128256 x 8192 = 70.55B ("70B").
        double llama70 = 80.0 * ModelPreset.LLAMA3_70B.totalParamsPerLayer() + 2.0 * 128_256 * 8192;
        assertThat(llama70 / 1e9).isBetween(70.0, 71.0);
        double llama8 = 32.0 * ModelPreset.LLAMA3_8B.totalParamsPerLayer() + 2.0 * 128_256 * 4096;
        assertThat(llama8 / 1e9).isBetween(7.9, 8.1);
        assertThat(61.0 * ModelPreset.DEEPSEEK_V3.activeParamsPerLayer() / 1e9).isBetween(36.0, 38.0);
    }

    /** Before: weights left out the embedding and the LM head (llama3-8b: 13.96 GB instead of 16.06 GB). */
    @Test
    void weightsAreCountedWholeWithEmbeddingsAndTheLmHead() {
        assertThat(ModelPreset.LLAMA3_8B.weightBytes()).isEqualTo(8_030_261_248L * 2);
        assertThat(ModelPreset.LLAMA3_70B.weightBytes()).isEqualTo(70_553_706_496L * 2);
        assertThat(ModelPreset.DEEPSEEK_V3.weightBytes() / 1e9).isBetween(670.0, 672.0);
        // the MTP module's 14B parameters when the draft layer is loaded
        assertThat(ModelPreset.DEEPSEEK_V3.weightBytes(1) - ModelPreset.DEEPSEEK_V3.weightBytes())
                .isEqualTo(14_000_000_000L);
        // llama3-8b on one H100 80GB: (0.9 x 81,559 MiB - 16.06 GB) / 128 KiB, about 3 % below the old 483,324
        long room = io.hicache.sim.ServingConfig.kvRoomPromptTokens(ModelPreset.LLAMA3_8B, GpuPreset.H100_SXM, 1, 1);
        assertThat(room).isEqualTo((long) ((81_559.0 * (1 << 20) * 0.9 - 16_060_522_496.0) / 131_072));
        assertThat(room).isBetween(460_000L, 470_000L);
    }

    /** Before: h100-pcie5 was an H100 SXM; the H100 PCIe card has its own HBM2e bandwidth and throughput. */
    @Test
    void presetsAreNamedForTheProductsTheyAre() {
        assertThat(GpuPreset.byName("h100-sxm").hbmBytesPerSecond()).isEqualTo(3.35e12);
        assertThat(GpuPreset.byName("h100-pcie").hbmBytesPerSecond()).isEqualTo(2.0e12);
        assertThat(GpuPreset.byName("h100-pcie").denseBf16FlopsPerSecond()).isEqualTo(756.5e12);
        assertThat(GpuPreset.byName("h100-pcie").nvlinkBytesPerSecond()).isLessThan(GpuPreset.H100_SXM.nvlinkBytesPerSecond());
        assertThat(GpuPreset.byName("h100-pcie5")).isEqualTo(GpuPreset.H100_SXM);
        assertThat(GpuPreset.byName("H200-PCIE5")).isEqualTo(GpuPreset.H200_SXM);
        assertThat(GpuPreset.deprecation("h200-pcie5")).contains("now named h200-sxm");
        assertThat(GpuPreset.deprecation("h200-sxm")).isNull();
        assertThat(GpuPreset.DEFAULT).isEqualTo(GpuPreset.H200_SXM);
        assertThat(GpuPreset.H200_SXM.hbmBytes()).isEqualTo(143_771L << 20);
    }

    @Test
    void gpusHaveTheirHostLinks() {
        assertThat(GpuPreset.GH200.hostLinkBytesPerSecond()).isGreaterThan(5 * GpuPreset.H100_SXM.hostLinkBytesPerSecond());
        assertThat(GpuPreset.H200_SXM.hbmBytesPerSecond()).isGreaterThan(GpuPreset.H100_SXM.hbmBytesPerSecond());
        assertThat(GpuPreset.byName("GH200")).isEqualTo(GpuPreset.GH200);
    }

    @Test
    void unknownPresetsListTheValidOnes() {
        assertThatThrownBy(() -> ModelPreset.byName("gpt-5"))
                .isInstanceOf(UnknownPresetException.class)
                .hasMessage("unknown model 'gpt-5'; valid models: llama3-70b, llama3-8b, deepseek-v3");
        assertThatThrownBy(() -> GpuPreset.byName("a100"))
                .hasMessage("unknown gpu 'a100'; valid gpus: h100-sxm, h100-pcie, h200-sxm, gh200");
        assertThatThrownBy(() -> GpuPreset.byName("h200-sxn"))
                .hasMessage("unknown gpu 'h200-sxn' (did you mean 'h200-sxm'?); valid gpus: h100-sxm, h100-pcie, "
                        + "h200-sxm, gh200");
    }

    @Test
    void computeModelScalesSensibly() {
        ComputeModel m = ComputeModel.of(ModelPreset.LLAMA3_70B, GpuPreset.H100_SXM);
        long p1k = m.prefillLayerNs(1024, 0);
        long p2k = m.prefillLayerNs(2048, 0);
        assertThat(p2k).isGreaterThan(p1k);
        assertThat(m.prefillLayerNs(1024, 100_000)).isGreaterThan(p1k);
        // 2 x 855.65M x 1024 flops at 50% of 989 TFLOP/s is about 3.5 ms per layer.
        assertThat(p1k / 1e6).isBetween(3.0, 4.5);
        // Decode of one sequence is memory bound: 1.71 GB of weights at 80% of 3.35 TB/s, about 0.64 ms.
        assertThat(m.decodeStepLayerNs(1, 1000) / 1e6).isBetween(0.55, 0.75);
        assertThat(m.prefillLayerNs(0, 5)).isZero();
        // One layer of 1024 tokens of KV (4 MiB) over PCIe 5: ~77 us plus launch.
        long copy = m.copyNs(m.kvBytesPerLayer(1024));
        assertThat(copy / 1e3).isBetween(70.0, 90.0);
        assertThat(ComputeModel.of(ModelPreset.LLAMA3_70B, GpuPreset.GH200).copyNs(m.kvBytesPerLayer(1024)))
                .isLessThan(copy / 4);
        assertThatThrownBy(() -> new ComputeModel(ModelPreset.LLAMA3_8B, GpuPreset.GH200, 0, 1, 1))
                .hasMessageContaining("flopsEfficiency must be in (0, 1], got 0.0");
    }
}
