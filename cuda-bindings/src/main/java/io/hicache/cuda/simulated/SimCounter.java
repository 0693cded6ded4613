package io.hicache.cuda.simulated;

/**
 * The simulated device's running totals, kept in one {@code long[]} indexed by {@link #ordinal()} (see
 * {@link SimCounters}) instead of a field and a locked getter each.
 */
enum SimCounter {
    /** Operations issued (copies, kernels, records, waits, host functions); a batch counts once. */
    OPS_ISSUED,
    /** Work operations (copies and kernels) issued. */
    WORK_OPS_ISSUED,
    /** Operations completed, failed ones included. */
    OPS_COMPLETED,
    /** Operations that completed with an error. */
    OPS_FAILED,
    /** Operations dropped unfinished by a sticky error or {@code close()}. */
    OPS_DROPPED,
    /** Copies queued and not yet completed or dropped. */
    QUEUED_COPIES,
    /** Bytes moved by successful host-to-host copies. */
    BYTES_HOST_TO_HOST,
    /** Bytes moved by successful host-to-device copies. */
    BYTES_HOST_TO_DEVICE,
    /** Bytes moved by successful device-to-host copies. */
    BYTES_DEVICE_TO_HOST,
    /** Bytes moved by successful device-to-device copies. */
    BYTES_DEVICE_TO_DEVICE;

    private static final SimCounter[] BYTES_BY_DIRECTION = {
        BYTES_HOST_TO_HOST, BYTES_HOST_TO_DEVICE, BYTES_DEVICE_TO_HOST, BYTES_DEVICE_TO_DEVICE};

    /** The bytes counter of a copy direction ({@link io.hicache.cuda.CopyKind#value()} 0 to 3). */
    static SimCounter bytesCopied(int direction) {
        return BYTES_BY_DIRECTION[direction];
    }
}
