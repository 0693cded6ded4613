package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaError;

/**
 * The texts {@code cudaGetErrorName} and {@code cudaGetErrorString} return for the codes {@link CudaError}
 * names, for runtimes that have no {@code libcudart} to ask (the simulated one). Stateless and thread-safe;
 * allocation-free (returns constants).
 */
final class CudaErrorTexts {
    /** What {@code cudaGetErrorName} and {@code cudaGetErrorString} return for a code they do not know. */
    static final String UNRECOGNIZED = "unrecognized error code";

    private CudaErrorTexts() {
    }

    /** {@code cudaGetErrorName(code)}. */
    static String name(int code) {
        return switch (code) {
            case 0 -> "cudaSuccess";
            case 1 -> "cudaErrorInvalidValue";
            case 2 -> "cudaErrorMemoryAllocation";
            case 3 -> "cudaErrorInitializationError";
            case 4 -> "cudaErrorCudartUnloading";
            case 9 -> "cudaErrorInvalidConfiguration";
            case 17 -> "cudaErrorInvalidDevicePointer";
            case 21 -> "cudaErrorInvalidMemcpyDirection";
            case 35 -> "cudaErrorInsufficientDriver";
            case 100 -> "cudaErrorNoDevice";
            case 101 -> "cudaErrorInvalidDevice";
            case 214 -> "cudaErrorECCUncorrectable";
            case 400 -> "cudaErrorInvalidResourceHandle";
            case 600 -> "cudaErrorNotReady";
            case 700 -> "cudaErrorIllegalAddress";
            case 701 -> "cudaErrorLaunchOutOfResources";
            case 702 -> "cudaErrorLaunchTimeout";
            case 712 -> "cudaErrorHostMemoryAlreadyRegistered";
            case 713 -> "cudaErrorHostMemoryNotRegistered";
            case 714 -> "cudaErrorHardwareStackError";
            case 715 -> "cudaErrorIllegalInstruction";
            case 716 -> "cudaErrorMisalignedAddress";
            case 717 -> "cudaErrorInvalidAddressSpace";
            case 718 -> "cudaErrorInvalidPc";
            case 719 -> "cudaErrorLaunchFailure";
            case 801 -> "cudaErrorNotSupported";
            case 999 -> "cudaErrorUnknown";
            default -> UNRECOGNIZED;
        };
    }

    /** {@code cudaGetErrorString(code)}. */
    static String description(int code) {
        return switch (code) {
            case 0 -> "no error";
            case 1 -> "invalid argument";
            case 2 -> "out of memory";
            case 3 -> "initialization error";
            case 4 -> "driver shutting down";
            case 9 -> "invalid configuration argument";
            case 17 -> "invalid device pointer";
            case 21 -> "invalid copy direction for memcpy";
            case 35 -> "CUDA driver version is insufficient for CUDA runtime version";
            case 100 -> "no CUDA-capable device is detected";
            case 101 -> "invalid device ordinal";
            case 214 -> "uncorrectable ECC error encountered";
            case 400 -> "invalid resource handle";
            case 600 -> "device not ready";
            case 700 -> "an illegal memory access was encountered";
            case 701 -> "too many resources requested for launch";
            case 702 -> "the launch timed out and was terminated";
            case 712 -> "part or all of the requested memory range is already mapped";
            case 713 -> "pointer does not correspond to a registered memory region";
            case 714 -> "hardware stack error";
            case 715 -> "an illegal instruction was encountered";
            case 716 -> "misaligned address";
            case 717 -> "operation not supported on global/shared address space";
            case 718 -> "invalid program counter";
            case 719 -> "unspecified launch failure";
            case 801 -> "operation not supported";
            case 999 -> "unknown error";
            default -> UNRECOGNIZED;
        };
    }
}
