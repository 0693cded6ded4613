package io.hicache.sim.model;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Registry of GPU presets: peak dense bf16 throughput, HBM bandwidth and the host link, per device.
 * Figures are the vendor's peak numbers; the {@link ComputeModel} applies efficiency factors.
 * Immutable and thread-safe.
 *
 * <p>Host link: PCIe 5.0 x16 signals 32 GT/s per lane with 128b/130b coding, i.e. 63 GB/s per
 * direction (PCI-SIG PCIe 5.0 specification; NVIDIA quotes "128 GB/s" bidirectional for H100 and
 * H200 PCIe Gen5). NVLink-C2C on GH200 is 900 GB/s bidirectional, 450 GB/s per direction (NVIDIA
 * Grace Hopper Superchip datasheet). Copy launch latency is an estimate of the host-side cost of one
 * {@code cudaMemcpyAsync} plus DMA start (a few microseconds; CUDA C++ Best Practices Guide,
 * "Asynchronous transfers"), not a datasheet figure.
 */
public enum GpuPreset {
    /**
     * H100 SXM5 on a PCIe 5.0 x16 host link. NVIDIA H100 Tensor Core GPU datasheet: BF16 1,979 TFLOPS
     * with sparsity = 989.4 TFLOPS dense; HBM3 80 GB at 3.35 TB/s.
     */
    H100_PCIE5("h100-pcie5", 989.4e12, 3.35e12, 80L << 30, 63.0e9, 2_000L, "PCIe 5.0 x16"),
    /**
     * H200 SXM on a PCIe 5.0 x16 host link. NVIDIA H200 Tensor Core GPU datasheet: BF16 1,979 TFLOPS
     * with sparsity = 989.4 dense; HBM3e 141 GB at 4.8 TB/s.
     */
    H200_PCIE5("h200-pcie5", 989.4e12, 4.8e12, 141L * 1_000_000_000L, 63.0e9, 2_000L, "PCIe 5.0 x16"),
    /**
     * GH200 Grace Hopper Superchip (96 GB HBM3 version). NVIDIA GH200 datasheet: H100-class GPU with
     * 989 TFLOPS dense BF16, HBM3 96 GB at 4.0 TB/s, NVLink-C2C 900 GB/s (450 GB/s per direction) to
     * the Grace CPU's LPDDR5X.
     */
    GH200("gh200", 989.4e12, 4.0e12, 96L << 30, 450.0e9, 2_000L, "NVLink-C2C");

    /** The preset used when none is named. */
    public static final GpuPreset DEFAULT = H200_PCIE5;

    private final String cliName;
    private final double denseBf16FlopsPerSecond;
    private final double hbmBytesPerSecond;
    private final long hbmBytes;
    private final double hostLinkBytesPerSecond;
    private final long copyLaunchLatencyNs;
    private final String hostLink;

    GpuPreset(String cliName, double denseBf16FlopsPerSecond, double hbmBytesPerSecond, long hbmBytes,
              double hostLinkBytesPerSecond, long copyLaunchLatencyNs, String hostLink) {
        this.cliName = cliName;
        this.denseBf16FlopsPerSecond = denseBf16FlopsPerSecond;
        this.hbmBytesPerSecond = hbmBytesPerSecond;
        this.hbmBytes = hbmBytes;
        this.hostLinkBytesPerSecond = hostLinkBytesPerSecond;
        this.copyLaunchLatencyNs = copyLaunchLatencyNs;
        this.hostLink = hostLink;
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

    /** HBM capacity, bytes. */
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

    /**
     * GPU-to-GPU bandwidth per direction for tensor-parallel all-reduce, bytes/s: NVLink 4 on H100/H200 SXM
     * is 900 GB/s bidirectional, 450 GB/s per direction (NVIDIA H100/H200 datasheets); GH200 nodes link
     * their GPUs with the same NVLink 4.
     */
    public double nvlinkBytesPerSecond() {
        return 450.0e9;
    }

    /**
     * The preset with this command-line name (case-insensitive).
     *
     * @throws UnknownPresetException the message lists the valid names
     */
    public static GpuPreset byName(String name) {
        for (GpuPreset g : values()) {
            if (g.cliName.equalsIgnoreCase(name)) {
                return g;
            }
        }
        throw new UnknownPresetException("gpu", name, names());
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
