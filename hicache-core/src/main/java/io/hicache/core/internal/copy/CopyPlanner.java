package io.hicache.core.internal.copy;

import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;

/**
 * Turns (device page, host page) pairs of one layer into copy runs between a {@link DeviceKvLayout} and a
 * {@link HostKvPool} of the same shape. Consecutive pairs whose pages continue the current run on both
 * sides (same row pitch on the device and on the host) join it, per buffer (K, V or latent); with
 * coalescing off every page is its own run. Fully contiguous input (device pages {@code d, d+1, ...}
 * packed, host pages {@code h, h+1, ...}) gives one run per buffer in every host layout.
 *
 * <p>A draft/MTP model uses its own planner over its own device layout and draft host pool, with the
 * same host page ids.
 *
 * <p><b>Threads.</b> Immutable after construction; {@link #plan} only writes the given {@link CopyPlan},
 * so one planner may serve several threads each with its own plan. Allocation-free in steady state.
 */
public final class CopyPlanner {
    private final DeviceKvLayout device;
    private final HostKvPool host;
    private final boolean coalesce;
    private final int bufferCount;
    private final int rowsPerPage;
    private final long rowWidthBytes;
    private final long devicePitchBytes;
    private final long hostPitchBytes;

    /**
     * @param device   the engine's device layout
     * @param host     the host pool; its shape must equal the device layout's
     * @param coalesce whether to merge pages contiguous on both sides into one run
     * @throws IllegalArgumentException when the shapes differ
     */
    public CopyPlanner(DeviceKvLayout device, HostKvPool host, boolean coalesce) {
        if (device == null || host == null) {
            throw new IllegalArgumentException("device and host must not be null");
        }
        if (!device.shape().equals(host.shape())) {
            throw new IllegalArgumentException("device shape " + device.shape() + " differs from host pool shape "
                    + host.shape());
        }
        this.device = device;
        this.host = host;
        this.coalesce = coalesce;
        this.bufferCount = device.bufferCount();
        if (host.layout().pageContiguous(host.shape())) {
            rowsPerPage = 1;
            rowWidthBytes = device.pageBytes();
            devicePitchBytes = device.pageStrideBytes();
            hostPitchBytes = host.pagePitchBytes();
        } else {
            rowsPerPage = device.pageSizeTokens();
            rowWidthBytes = device.bytesPerTokenPerBuffer();
            devicePitchBytes = device.bytesPerTokenPerBuffer();
            hostPitchBytes = host.tokenPitchBytes();
        }
    }

    /** The device layout. */
    public DeviceKvLayout device() {
        return device;
    }

    /** The host pool. */
    public HostKvPool host() {
        return host;
    }

    /** Whether contiguous pages are merged. */
    public boolean coalesce() {
        return coalesce;
    }

    /**
     * Fills {@code out} with the runs copying {@code layer} of pages {@code devicePages[offset+i] <->
     * hostPages[offset+i]} for {@code i < count}, every buffer.
     *
     * @throws IllegalArgumentException  for bad bounds or a negative count
     * @throws IndexOutOfBoundsException naming a layer or page id out of range; {@code out} is then empty
     * @throws IllegalStateException     when the host pool is closed
     */
    public void plan(int layer, int[] devicePages, int[] hostPages, int offset, int count, CopyDirection direction,
                     CopyPlan out) {
        if (host.isClosed()) {
            throw new IllegalStateException("host KV pool is closed");
        }
        if (direction == null || out == null || devicePages == null || hostPages == null) {
            throw new IllegalArgumentException("direction, out, devicePages and hostPages must not be null");
        }
        if (count < 0 || offset < 0 || offset > devicePages.length - count || offset > hostPages.length - count) {
            throw new IllegalArgumentException("range [" + offset + ", " + ((long) offset + count)
                    + ") out of devicePages length " + devicePages.length + " / hostPages length " + hostPages.length);
        }
        out.begin(layer, direction, count, count * bufferCount, rowWidthBytes, devicePitchBytes, hostPitchBytes);
        try {
            for (int b = 0; b < bufferCount; b++) {
                for (int i = 0; i < count; i++) {
                    long d = device.pageAddress(layer, b, devicePages[offset + i]);
                    long h = host.pageAddress(layer, b, hostPages[offset + i]);
                    if (!coalesce || !out.tryExtend(b, d, h, rowsPerPage)) {
                        out.add(b, d, h, rowsPerPage);
                    }
                }
            }
        } catch (RuntimeException e) {
            out.clear();
            throw e;
        }
    }
}
