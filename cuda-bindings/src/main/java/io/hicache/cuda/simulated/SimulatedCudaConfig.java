package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaRuntime;

import java.util.Objects;

/**
 * Settings of a {@link SimulatedCudaRuntime}: the timing model, the device, and the seeded random faults.
 * Immutable and thread-safe; build one with {@link #builder()} (defaults resemble an H200 on PCIe Gen5),
 * which validates every value and throws {@link IllegalArgumentException} naming the bad one.
 *
 * <p><b>Timing model.</b> A copy of {@code n} bytes takes {@code copyLaunchLatencyNs + ceil(n * 1e9 /
 * bandwidth)} nanoseconds on its copy engine, where the bandwidth is the one of its direction. A batched
 * copy ({@link CudaRuntime#memcpyBatchAsync} with {@link #batchedCopySupported()}) pays the launch latency
 * once for all its ranges. There is one copy engine per direction, so copies of one direction serialize
 * across streams while copies of different directions overlap. With {@link #sharedPcieLink()} the
 * host-to-device and device-to-host directions share one engine (they serialize against each other, a
 * half-duplex link); without it they run side by side at full bandwidth each (PCIe is full duplex).
 * Device-to-device and host-to-host copies share a third engine timed by {@link
 * #deviceToDeviceBytesPerSecond()}. Simulated kernels ({@link SimulatedCudaRuntime#simulateKernel}) run on
 * one compute unit: kernels of different streams serialize, and overlap with copies.
 *
 * @param seed                          seed of every random choice (random faults, delays)
 * @param copyLaunchLatencyNs           fixed cost of each copy operation, in nanoseconds
 * @param hostToDeviceBytesPerSecond    bandwidth of host-to-device copies
 * @param deviceToHostBytesPerSecond    bandwidth of device-to-host copies
 * @param deviceToDeviceBytesPerSecond  bandwidth of device-to-device and host-to-host copies
 * @param sharedPcieLink                true: H2D and D2H serialize on one link; false: one link per direction
 * @param batchedCopySupported          what {@link CudaRuntime#supportsBatchedCopy()} answers
 * @param deviceMemoryBytes             capacity checked by {@code deviceMalloc} (an accounting limit; the
 *                                      bytes actually allocated off-heap are only those requested)
 * @param deviceMemoryFill              byte every new device allocation is filled with (real {@code cudaMalloc}
 *                                      does not zero memory; a non-zero fill catches reads of unwritten pages)
 * @param runtimeVersion                what {@code runtimeVersion()} returns, e.g. 13000
 * @param driverVersion                 what {@code driverVersion()} returns
 * @param copyFailureProbability        probability in [0, 1] that a copy fails with {@code randomFailureError}
 * @param randomFailureError            the error of randomly failed copies
 * @param delayProbability              probability in [0, 1] that a copy takes extra time
 * @param maxExtraDelayNs               a delayed copy takes a uniform extra time in [0, maxExtraDelayNs]
 * @param moveBytes                     whether copies move their bytes (default true); a timing-only user whose
 *                                      buffers carry no data anyone reads (the simulator) turns it off, and copies
 *                                      then only take their time and complete
 */
public record SimulatedCudaConfig(
        long seed,
        long copyLaunchLatencyNs,
        long hostToDeviceBytesPerSecond,
        long deviceToHostBytesPerSecond,
        long deviceToDeviceBytesPerSecond,
        boolean sharedPcieLink,
        boolean batchedCopySupported,
        long deviceMemoryBytes,
        byte deviceMemoryFill,
        int runtimeVersion,
        int driverVersion,
        double copyFailureProbability,
        CudaError randomFailureError,
        double delayProbability,
        long maxExtraDelayNs,
        boolean moveBytes) {

    /** Validates every value; see the class comment for their meaning. */
    public SimulatedCudaConfig {
        requireNonNegative("copyLaunchLatencyNs", copyLaunchLatencyNs);
        requirePositive("hostToDeviceBytesPerSecond", hostToDeviceBytesPerSecond);
        requirePositive("deviceToHostBytesPerSecond", deviceToHostBytesPerSecond);
        requirePositive("deviceToDeviceBytesPerSecond", deviceToDeviceBytesPerSecond);
        requirePositive("deviceMemoryBytes", deviceMemoryBytes);
        requireProbability("copyFailureProbability", copyFailureProbability);
        requireProbability("delayProbability", delayProbability);
        requireNonNegative("maxExtraDelayNs", maxExtraDelayNs);
        Objects.requireNonNull(randomFailureError, "randomFailureError");
        if (randomFailureError == CudaError.SUCCESS || randomFailureError == CudaError.NOT_READY
                || randomFailureError == CudaError.UNKNOWN_CODE) {
            throw new IllegalArgumentException("randomFailureError must be a failure code, was " + randomFailureError);
        }
    }

    /** A builder holding the defaults: 2 us launch latency, 50 GB/s per PCIe direction, 2 TB/s on device. */
    public static Builder builder() {
        return new Builder();
    }

    /** The default configuration, {@code builder().build()}. */
    public static SimulatedCudaConfig defaults() {
        return builder().build();
    }

    /** A builder starting from this configuration. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.seed = seed;
        b.copyLaunchLatencyNs = copyLaunchLatencyNs;
        b.hostToDeviceBytesPerSecond = hostToDeviceBytesPerSecond;
        b.deviceToHostBytesPerSecond = deviceToHostBytesPerSecond;
        b.deviceToDeviceBytesPerSecond = deviceToDeviceBytesPerSecond;
        b.sharedPcieLink = sharedPcieLink;
        b.batchedCopySupported = batchedCopySupported;
        b.deviceMemoryBytes = deviceMemoryBytes;
        b.deviceMemoryFill = deviceMemoryFill;
        b.runtimeVersion = runtimeVersion;
        b.driverVersion = driverVersion;
        b.copyFailureProbability = copyFailureProbability;
        b.randomFailureError = randomFailureError;
        b.delayProbability = delayProbability;
        b.maxExtraDelayNs = maxExtraDelayNs;
        b.moveBytes = moveBytes;
        return b;
    }

    private static void requirePositive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be > 0, was " + value);
        }
    }

    private static void requireNonNegative(String name, long value) {
        if (value < 0) {
            throw new IllegalArgumentException(name + " must be >= 0, was " + value);
        }
    }

    private static void requireProbability(String name, double value) {
        if (!(value >= 0.0 && value <= 1.0)) {
            throw new IllegalArgumentException(name + " must be in [0, 1], was " + value);
        }
    }

    /** Fluent, single-threaded builder of {@link SimulatedCudaConfig}; {@link #build()} validates. */
    public static final class Builder {
        private long seed = 0L;
        private long copyLaunchLatencyNs = 2_000L;
        private long hostToDeviceBytesPerSecond = 50_000_000_000L;
        private long deviceToHostBytesPerSecond = 50_000_000_000L;
        private long deviceToDeviceBytesPerSecond = 2_000_000_000_000L;
        private boolean sharedPcieLink = false;
        private boolean batchedCopySupported = true;
        private long deviceMemoryBytes = 141L * 1024 * 1024 * 1024;
        private byte deviceMemoryFill = 0;
        private int runtimeVersion = 13000;
        private int driverVersion = 13000;
        private double copyFailureProbability = 0.0;
        private CudaError randomFailureError = CudaError.UNKNOWN;
        private double delayProbability = 0.0;
        private long maxExtraDelayNs = 0L;
        private boolean moveBytes = true;

        private Builder() {
        }

        /** Seed of every random choice. */
        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        /** Fixed cost of each copy operation. */
        public Builder copyLaunchLatencyNs(long ns) {
            this.copyLaunchLatencyNs = ns;
            return this;
        }

        /** Host-to-device bandwidth. */
        public Builder hostToDeviceBytesPerSecond(long bytesPerSecond) {
            this.hostToDeviceBytesPerSecond = bytesPerSecond;
            return this;
        }

        /** Device-to-host bandwidth. */
        public Builder deviceToHostBytesPerSecond(long bytesPerSecond) {
            this.deviceToHostBytesPerSecond = bytesPerSecond;
            return this;
        }

        /** Sets both PCIe directions to the same bandwidth. */
        public Builder pcieBytesPerSecond(long bytesPerSecond) {
            this.hostToDeviceBytesPerSecond = bytesPerSecond;
            this.deviceToHostBytesPerSecond = bytesPerSecond;
            return this;
        }

        /** Device-to-device (and host-to-host) bandwidth. */
        public Builder deviceToDeviceBytesPerSecond(long bytesPerSecond) {
            this.deviceToDeviceBytesPerSecond = bytesPerSecond;
            return this;
        }

        /** True: H2D and D2H copies serialize on one link. */
        public Builder sharedPcieLink(boolean shared) {
            this.sharedPcieLink = shared;
            return this;
        }

        /** What {@code supportsBatchedCopy()} answers. */
        public Builder batchedCopySupported(boolean supported) {
            this.batchedCopySupported = supported;
            return this;
        }

        /** Capacity checked by {@code deviceMalloc}. */
        public Builder deviceMemoryBytes(long bytes) {
            this.deviceMemoryBytes = bytes;
            return this;
        }

        /** Byte new device allocations are filled with. */
        public Builder deviceMemoryFill(byte fill) {
            this.deviceMemoryFill = fill;
            return this;
        }

        /** What {@code runtimeVersion()} returns. */
        public Builder runtimeVersion(int version) {
            this.runtimeVersion = version;
            return this;
        }

        /** What {@code driverVersion()} returns. */
        public Builder driverVersion(int version) {
            this.driverVersion = version;
            return this;
        }

        /** Each copy fails with {@code error} with this probability. */
        public Builder copyFailureProbability(double probability, CudaError error) {
            this.copyFailureProbability = probability;
            this.randomFailureError = error;
            return this;
        }

        /** Each copy takes a uniform extra time in [0, maxExtraDelayNs] with this probability. */
        public Builder delayedCompletions(double probability, long maxExtraDelayNs) {
            this.delayProbability = probability;
            this.maxExtraDelayNs = maxExtraDelayNs;
            return this;
        }

        /** Whether copies move their bytes (default true); see {@link SimulatedCudaConfig#moveBytes()}. */
        public Builder moveBytes(boolean move) {
            this.moveBytes = move;
            return this;
        }

        /** Validates and builds. */
        public SimulatedCudaConfig build() {
            return new SimulatedCudaConfig(seed, copyLaunchLatencyNs, hostToDeviceBytesPerSecond,
                    deviceToHostBytesPerSecond, deviceToDeviceBytesPerSecond, sharedPcieLink, batchedCopySupported,
                    deviceMemoryBytes, deviceMemoryFill, runtimeVersion, driverVersion, copyFailureProbability,
                    randomFailureError, delayProbability, maxExtraDelayNs, moveBytes);
        }
    }
}
