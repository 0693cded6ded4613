package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaException;

/**
 * The argument checks and error texts both test-double runtimes ({@link SimulatedCudaRuntime},
 * {@link HostThreadCudaRuntime}) share, so a mistake reads the same on either: unknown handles, bad sizes,
 * copy ranges outside an allocation or against their {@link CopyKind}, CUDA error codes turned into
 * {@link CudaException}.
 *
 * <p>Stateless and thread-safe. The checks allocate only when they throw.
 */
final class CallChecks {
    /** {@link CopyKind#value()} of each direction, as the runtimes infer it from where the pointers live. */
    static final int HOST_TO_HOST = 0;
    static final int HOST_TO_DEVICE = 1;
    static final int DEVICE_TO_HOST = 2;
    static final int DEVICE_TO_DEVICE = 3;

    private CallChecks() {
    }

    static String hex(long value) {
        return "0x" + Long.toHexString(value);
    }

    /** The exception a CUDA call answering {@code code} throws, with CUDA's name and text for the code. */
    static CudaException cudaException(int code, String call) {
        return new CudaException(code, CudaErrorTexts.name(code), CudaErrorTexts.description(code), call);
    }

    static IllegalStateException closed(String call, String runtime) {
        return new IllegalStateException(call + ": this " + runtime + " is closed (no call is valid after close())");
    }

    static IllegalArgumentException unknownStream(String call, long handle) {
        return new IllegalArgumentException(call + ": stream " + hex(handle)
                + " is not live on this runtime (destroyed, or never created by it); a stream handle is valid "
                + "from createStream until destroyStream");
    }

    static IllegalArgumentException unknownEvent(String call, long handle) {
        return new IllegalArgumentException(call + ": event " + hex(handle)
                + " is not live on this runtime (destroyed, or never created by it); an event handle is valid "
                + "from createEvent until destroyEvent");
    }

    static IllegalArgumentException defaultStreamNotDestroyable() {
        return new IllegalArgumentException("cudaStreamDestroy: the default stream (handle 0) cannot be destroyed");
    }

    static void requirePositiveBytes(long bytes, String call) {
        if (bytes <= 0) {
            throw new IllegalArgumentException(call + ": bytes must be > 0, was " + bytes);
        }
    }

    static void requireRegisterArgs(long hostPtr, long bytes) {
        if (hostPtr == 0 || bytes <= 0) {
            throw new IllegalArgumentException("cudaHostRegister(" + hex(hostPtr) + ", " + bytes
                    + "): pointer must be non-null and bytes > 0");
        }
    }

    /** A batch's arrays are non-null and hold at least {@code count >= 0} entries each. */
    static void requireBatch(long[] dsts, long[] srcs, long[] sizes, int count, String call) {
        if (dsts == null || srcs == null || sizes == null) {
            throw new IllegalArgumentException(call + ": dsts, srcs and sizes must not be null");
        }
        if (count < 0 || count > dsts.length || count > srcs.length || count > sizes.length) {
            throw new IllegalArgumentException(call + ": count " + count
                    + " must be >= 0 and <= every array's length (" + dsts.length + ", " + srcs.length + ", "
                    + sizes.length + ")");
        }
    }

    /** Bytes from the first byte of a pitched range to its last: {@code pitch * (height - 1) + width}, 0 when empty. */
    static long span(long pitch, long width, long height, String call) {
        if (height == 0) {
            return 0;
        }
        try {
            return Math.addExact(Math.multiplyExact(pitch, height - 1), width);
        } catch (ArithmeticException overflow) {
            throw new IllegalArgumentException(call + ": copy extent overflows a long (pitch * height)");
        }
    }

    static IllegalArgumentException notInside(String call, String end, long ptr, long span) {
        return new IllegalArgumentException(call + ": " + end + " [" + hex(ptr) + ", +" + span
                + ") is not inside one live allocation (device memory, hostAlloc memory or a registered host range)");
    }

    /** The direction of a copy between memory of these kinds, as a {@link CopyKind#value()}. */
    static int direction(boolean dstDevice, boolean srcDevice) {
        return dstDevice ? (srcDevice ? DEVICE_TO_DEVICE : HOST_TO_DEVICE) : (srcDevice ? DEVICE_TO_HOST : HOST_TO_HOST);
    }

    /** {@code kind} is {@link CopyKind#DEFAULT} or the direction the pointers imply. */
    static void requireKindMatches(CopyKind kind, long dst, boolean dstDevice, long src, boolean srcDevice,
                                   String call) {
        if (kind != CopyKind.DEFAULT && kind.value() != direction(dstDevice, srcDevice)) {
            throw new IllegalArgumentException(call + ": kind " + kind + " does not match the pointers: destination "
                    + hex(dst) + " is " + (dstDevice ? "device" : "host") + " memory, source " + hex(src)
                    + " is " + (srcDevice ? "device" : "host") + " memory");
        }
    }

    /** The {@link CopyKind} of a direction value. */
    static CopyKind kindOf(int direction) {
        return switch (direction) {
            case HOST_TO_HOST -> CopyKind.HOST_TO_HOST;
            case HOST_TO_DEVICE -> CopyKind.HOST_TO_DEVICE;
            case DEVICE_TO_HOST -> CopyKind.DEVICE_TO_HOST;
            default -> CopyKind.DEVICE_TO_DEVICE;
        };
    }
}
