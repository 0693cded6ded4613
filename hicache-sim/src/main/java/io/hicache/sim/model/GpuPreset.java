package io.hicache.sim.model;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Registry of GPU presets: peak dense bf16 throughput, HBM capacity and bandwidth, the host link and the
 * GPU-to-GPU link, per device, each named for the product it is. Figures are the vendor's peak numbers; the
 * {@link ComputeModel} applies efficiency factors. Immutable and thread-safe.
 *
 * <p>HBM capacity is what the driver reports ({@code nvidia-smi}'s {@code memory.total}: 81,559 MiB for an
 * H100 80GB, SXM or PCIe; 143,771 MiB for an H200; 97,871 MiB for a GH200 96GB), the figure a serving engine's
 * static memory fraction is taken of. Dense bf16 throughput is half the datasheet's "with sparsity" figure.
 * Host link: PCIe 5.0 x16 signals 32 GT/s per lane with 128b/130b coding, i.e. 63 GB/s per direction
 * (PCI-SIG PCIe 5.0 specification; NVIDIA quotes "128 GB/s" bidirectional for every Hopper board). NVLink-C2C
 * on GH200 is 900 GB/s bidirectional, 450 GB/s per direction (NVIDIA Grace Hopper Superchip datasheet). Copy
 * launch latency is an estimate of the host-side cost of one {@code cudaMemcpyAsync} plus DMA start (a few
 * microseconds; CUDA C++ Best Practices Guide, "Asynchronous transfers"), not a datasheet figure.
 *
 * <p>Names before 2026-12: {@code h100-pcie5} was an H100 SXM on a PCIe 5.0 link (now {@code h100-sxm}) and
 * {@code h200-pcie5} an H200 SXM (now {@code h200-sxm}); both old names still resolve, with a
 * {@linkplain #deprecation deprecation notice}.
 */
public enum GpuPreset {
    /**
     * H100 SXM5 80GB on its PCIe 5.0 x16 host link. NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS
     * with sparsity = 989.4 TFLOPS dense; HBM3 at 3.35 TB/s; NVLink 4 900 GB/s bidirectional.
     */
    H100_SXM("h100-sxm", 989.4e12, 3.35e12, 81_559L << 20, 63.0e9, 450.0e9, 2_000L, "PCIe 5.0 x16", "NVLink 4"),
    /**
     * H100 PCIe 80GB, the add-in card. NVIDIA H100 PCIe product brief (PB-11133-001) and datasheet: BF16
     * 1,513 TFLOPS with sparsity = 756.5 dense; HBM2e at 2.0 TB/s; PCIe 5.0 x16 host link; cards pair over an
     * NVLink bridge at 600 GB/s bidirectional (300 GB/s per direction), the figure TP all-reduces use here
     * (a TP group wider than a bridged pair would reduce over PCIe, which the preset does not model).
     */
    H100_PCIE("h100-pcie", 756.5e12, 2.0e12, 81_559L << 20, 63.0e9, 300.0e9, 2_000L, "PCIe 5.0 x16",
            "NVLink bridge"),
    /**
     * H200 SXM 141GB on its PCIe 5.0 x16 host link. NVIDIA H200 Tensor Core GPU datasheet: BF16 1,979 TFLOPS
     * with sparsity = 989.4 dense; HBM3e at 4.8 TB/s; NVLink 4 900 GB/s bidirectional.
     */
    H200_SXM("h200-sxm", 989.4e12, 4.8e12, 143_771L << 20, 63.0e9, 450.0e9, 2_000L, "PCIe 5.0 x16", "NVLink 4"),
    /**
     * GH200 Grace Hopper Superchip (96 GB HBM3 version). NVIDIA GH200 datasheet: H100-class GPU with
     * 989 TFLOPS dense BF16, HBM3 at 4.0 TB/s, NVLink-C2C 900 GB/s (450 GB/s per direction) to the Grace CPU's
     * LPDDR5X; GPUs of several superchips link over NVLink 4.
     */
    GH200("gh200", 989.4e12, 4.0e12, 97_871L << 20, 450.0e9, 450.0e9, 2_000L, "NVLink-C2C", "NVLink 4");

    /** The preset used when none is named. */
    public static final GpuPreset DEFAULT = H200_SXM;

    private final String cliName;
    private final double denseBf16FlopsPerSecond;
    private final double hbmBytesPerSecond;
    private final long hbmBytes;
    private final double hostLinkBytesPerSecond;
    private final double gpuLinkBytesPerSecond;
    private final long copyLaunchLatencyNs;
    private final String hostLink;
    private final String gpuLink;

    GpuPreset(String cliName, double denseBf16FlopsPerSecond, double hbmBytesPerSecond, long hbmBytes,
              double hostLinkBytesPerSecond, double gpuLinkBytesPerSecond, long copyLaunchLatencyNs, String hostLink,
              String gpuLink) {
        this.cliName = cliName;
        this.denseBf16FlopsPerSecond = denseBf16FlopsPerSecond;
        this.hbmBytesPerSecond = hbmBytesPerSecond;
        this.hbmBytes = hbmBytes;
        this.hostLinkBytesPerSecond = hostLinkBytesPerSecond;
        this.gpuLinkBytesPerSecond = gpuLinkBytesPerSecond;
        this.copyLaunchLatencyNs = copyLaunchLatencyNs;
        this.hostLink = hostLink;
        this.gpuLink = gpuLink;
    }

    /** The name used on the command line. */
    public String cliName() {
        return cliName;
    }

    /** Peak dense bf16 tensor throughput, FLOP/s. */
    public double denseBf16FlopsPerSecond() {
        return denseBf16FlopsPerSecond;
    }

    /** Peak HBM bandwidth, bytes/s. */
    public double hbmBytesPerSecond() {
        return hbmBytesPerSecond;
    }

    /** HBM capacity as the driver reports it, bytes. */
    public long hbmBytes() {
        return hbmBytes;
    }

    /** Peak host-link bandwidth per direction, bytes/s. */
    public double hostLinkBytesPerSecond() {
        return hostLinkBytesPerSecond;
    }

    /** Fixed cost of one async copy (submission plus DMA start), ns. */
    public long copyLaunchLatencyNs() {
        return copyLaunchLatencyNs;
    }

    /** Name of the host link. */
    public String hostLink() {
        return hostLink;
    }

    /** Name of the GPU-to-GPU link tensor-parallel all-reduces use. */
    public String gpuLink() {
        return gpuLink;
    }

    /**
     * GPU-to-GPU bandwidth per direction for tensor-parallel all-reduce, bytes/s: NVLink 4 on H100/H200 SXM and
     * GH200 is 900 GB/s bidirectional, 450 GB/s per direction (NVIDIA datasheets); the H100 PCIe card's NVLink
     * bridge 600 GB/s bidirectional, 300 per direction.
     */
    public double nvlinkBytesPerSecond() {
        return gpuLinkBytesPerSecond;
    }

    /** Names earlier releases used, and the preset each now resolves to. */
    private static final java.util.Map<String, GpuPreset> DEPRECATED = java.util.Map.of(
            "h100-pcie5", H100_SXM, "h200-pcie5", H200_SXM);

    /**
     * The preset with this command-line name (case-insensitive); a deprecated name resolves to the preset it
     * always meant (see {@link #deprecation}).
     *
     * @throws UnknownPresetException the message lists the valid names
     */
    public static GpuPreset byName(String name) {
        for (GpuPreset g : values()) {
            if (g.cliName.equalsIgnoreCase(name)) {
                return g;
            }
        }
        GpuPreset old = name == null ? null : DEPRECATED.get(name.toLowerCase(java.util.Locale.ROOT));
        if (old != null) {
            return old;
        }
        throw new UnknownPresetException("gpu", name, names());
    }

    /**
     * A line for a deprecated name ({@code h100-pcie5}, {@code h200-pcie5}): what it was and what to write
     * instead; null for a current name.
     */
    public static String deprecation(String name) {
        GpuPreset g = name == null ? null : DEPRECATED.get(name.toLowerCase(java.util.Locale.ROOT));
        if (g == null) {
            return null;
        }
        String card = g == H100_SXM ? "; the H100 PCIe card is h100-pcie" : "";
        return "--gpu " + name + " is deprecated: it is an " + (g == H100_SXM ? "H100" : "H200")
                + " SXM on a PCIe 5.0 host link, now named " + g.cliName + card;
    }

    /** The valid names, comma-separated. */
    public static String names() {
        return Arrays.stream(values()).map(GpuPreset::cliName).collect(Collectors.joining(", "));
    }

    @Override
    public String toString() {
        return cliName;
    }
}
