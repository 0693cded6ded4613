package io.hicache.core.internal.copy;

import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.util.Arrays;

/**
 * The copy runs for one layer of one batch of (device page, host page) pairs, filled by
 * {@link CopyPlanner#plan} and issued with {@link #issue}. A run is {@link #runRows(int)} rows of
 * {@link #rowWidthBytes()} bytes, rows {@link #devicePitchBytes()} apart on the device and
 * {@link #hostPitchBytes()} apart on the host; when both pitches equal the row width (or the run has one
 * row) it is one contiguous range and is issued as a plain {@code cudaMemcpyAsync}, otherwise as one
 * {@code cudaMemcpy2DAsync}. Runs are grouped by buffer (all runs of buffer 0, then buffer 1).
 *
 * <p><b>Reuse.</b> Meant to be kept and refilled: the arrays grow when a plan needs more runs than
 * seen before and are reused afterwards, so planning and issuing allocate nothing in steady state.
 *
 * <p><b>Threads.</b> Not thread-safe; owned by the thread that plans and issues (the submitter).
 */
public final class CopyPlan {
    private int layer = -1;
    private CopyDirection direction = CopyDirection.DEVICE_TO_HOST;
    private int pageCount;
    private int runCount;
    private long rowWidthBytes;
    private long devicePitchBytes;
    private long hostPitchBytes;
    private long totalBytes;
    private int[] runBuffers;
    private long[] runDeviceAddresses;
    private long[] runHostAddresses;
    private int[] runRows;
    // scratch for batched issue
    private long[] batchDsts;
    private long[] batchSrcs;
    private long[] batchSizes;

    /** An empty plan with room for 64 runs before growing. */
    public CopyPlan() {
        this(64);
    }

    /** An empty plan with room for {@code initialRunCapacity} runs before growing. */
    public CopyPlan(int initialRunCapacity) {
        if (initialRunCapacity < 1) {
            throw new IllegalArgumentException("initialRunCapacity must be >= 1, was " + initialRunCapacity);
        }
        allocateArrays(initialRunCapacity);
    }

    private void allocateArrays(int capacity) {
        runBuffers = new int[capacity];
        runDeviceAddresses = new long[capacity];
        runHostAddresses = new long[capacity];
        runRows = new int[capacity];
        batchDsts = new long[capacity];
        batchSrcs = new long[capacity];
        batchSizes = new long[capacity];
    }

    /** The layer planned, or -1 for an empty plan. */
    public int layer() {
        return layer;
    }

    /** Which way the plan copies. */
    public CopyDirection direction() {
        return direction;
    }

    /** Page pairs planned (per buffer). */
    public int pageCount() {
        return pageCount;
    }

    /** Copy runs over all buffers. */
    public int runCount() {
        return runCount;
    }

    /** Bytes all runs move together. */
    public long totalBytes() {
        return totalBytes;
    }

    /** Bytes of one row (a whole page, or one token where host pages are token-strided). */
    public long rowWidthBytes() {
        return rowWidthBytes;
    }

    /** Distance between rows of a run on the device. */
    public long devicePitchBytes() {
        return devicePitchBytes;
    }

    /** Distance between rows of a run on the host. */
    public long hostPitchBytes() {
        return hostPitchBytes;
    }

    /** Buffer (K/V/latent index) of run {@code i}. */
    public int runBuffer(int i) {
        checkRun(i);
        return runBuffers[i];
    }

    /** Device address of the first row of run {@code i}. */
    public long runDeviceAddress(int i) {
        checkRun(i);
        return runDeviceAddresses[i];
    }

    /** Host address of the first row of run {@code i}. */
    public long runHostAddress(int i) {
        checkRun(i);
        return runHostAddresses[i];
    }

    /** Rows of run {@code i}. */
    public int runRows(int i) {
        checkRun(i);
        return runRows[i];
    }

    /** Bytes run {@code i} moves. */
    public long runBytes(int i) {
        checkRun(i);
        return runRows[i] * rowWidthBytes;
    }

    /** True when run {@code i} is one contiguous range on both sides (a plain 1D copy). */
    public boolean runContiguous(int i) {
        checkRun(i);
        return isContiguous(i);
    }

    private boolean isContiguous(int i) {
        return runRows[i] == 1 || (devicePitchBytes == rowWidthBytes && hostPitchBytes == rowWidthBytes);
    }

    /**
     * Queues every run on {@code stream}. With {@code batched}, all contiguous runs go in one
     * {@link CudaRuntime#memcpyBatchAsync} call (a single {@code cudaMemcpyBatchAsync} where the runtime
     * supports it); strided runs are always one {@code cudaMemcpy2DAsync} each. Allocation-free.
     *
     * @throws io.hicache.cuda.CudaException from the runtime; runs queued before the failure stay queued
     */
    public void issue(CudaRuntime runtime, CudaStream stream, boolean batched) {
        var kind = direction.kind();
        boolean toHost = direction == CopyDirection.DEVICE_TO_HOST;
        int batchCount = 0;
        for (int i = 0; i < runCount; i++) {
            long dst = toHost ? runHostAddresses[i] : runDeviceAddresses[i];
            long src = toHost ? runDeviceAddresses[i] : runHostAddresses[i];
            if (isContiguous(i)) {
                long bytes = runRows[i] * rowWidthBytes;
                if (batched) {
                    batchDsts[batchCount] = dst;
                    batchSrcs[batchCount] = src;
                    batchSizes[batchCount] = bytes;
                    batchCount++;
                } else {
                    runtime.memcpyAsync(dst, src, bytes, kind, stream);
                }
            } else {
                long dstPitch = toHost ? hostPitchBytes : devicePitchBytes;
                long srcPitch = toHost ? devicePitchBytes : hostPitchBytes;
                runtime.memcpy2DAsync(dst, dstPitch, src, srcPitch, rowWidthBytes, runRows[i], kind, stream);
            }
        }
        if (batchCount == 1) {
            runtime.memcpyAsync(batchDsts[0], batchSrcs[0], batchSizes[0], kind, stream);
        } else if (batchCount > 1) {
            runtime.memcpyBatchAsync(batchDsts, batchSrcs, batchSizes, batchCount, kind, stream);
        }
    }

    /** Empties the plan (keeps its arrays). */
    public void clear() {
        layer = -1;
        pageCount = 0;
        runCount = 0;
        totalBytes = 0;
    }

    // ---- filled by CopyPlanner ----

    void begin(int layer, CopyDirection direction, int pageCount, int maxRuns, long rowWidthBytes,
               long devicePitchBytes, long hostPitchBytes) {
        if (maxRuns > runBuffers.length) {
            allocateArrays(Math.max(maxRuns, runBuffers.length * 2));
        }
        this.layer = layer;
        this.direction = direction;
        this.pageCount = pageCount;
        this.runCount = 0;
        this.totalBytes = 0;
        this.rowWidthBytes = rowWidthBytes;
        this.devicePitchBytes = devicePitchBytes;
        this.hostPitchBytes = hostPitchBytes;
    }

    /** Extends the last run by {@code rows} when it is of this buffer and both addresses continue it. */
    boolean tryExtend(int buffer, long deviceAddress, long hostAddress, int rows) {
        if (runCount == 0) {
            return false;
        }
        int last = runCount - 1;
        long lastRows = runRows[last];
        if (runBuffers[last] != buffer
                || deviceAddress != runDeviceAddresses[last] + lastRows * devicePitchBytes
                || hostAddress != runHostAddresses[last] + lastRows * hostPitchBytes
                || lastRows + rows > Integer.MAX_VALUE) {
            return false;
        }
        runRows[last] += rows;
        totalBytes += rows * rowWidthBytes;
        return true;
    }

    void add(int buffer, long deviceAddress, long hostAddress, int rows) {
        int i = runCount++;
        runBuffers[i] = buffer;
        runDeviceAddresses[i] = deviceAddress;
        runHostAddresses[i] = hostAddress;
        runRows[i] = rows;
        totalBytes += rows * rowWidthBytes;
    }

    private void checkRun(int i) {
        if (i < 0 || i >= runCount) {
            throw new IndexOutOfBoundsException("run " + i + " out of [0, " + runCount + ")");
        }
    }

    @Override
    public String toString() {
        return "CopyPlan{layer=" + layer + ", " + direction + ", pages=" + pageCount + ", runs=" + runCount
                + ", bytes=" + totalBytes + ", rowWidthBytes=" + rowWidthBytes + ", devicePitchBytes="
                + devicePitchBytes + ", hostPitchBytes=" + hostPitchBytes + ", rows="
                + Arrays.toString(Arrays.copyOf(runRows, runCount)) + "}";
    }
}
