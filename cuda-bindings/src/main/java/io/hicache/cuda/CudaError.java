package io.hicache.cuda;

/**
 * The {@code cudaError_t} codes this project names, with whether each one poisons the CUDA context
 * ("sticky": every later call in the process fails the same way until it exits).
 * Codes not listed map to {@link #UNKNOWN_CODE}; {@link CudaException#code()} keeps the raw value.
 */
public enum CudaError {
    SUCCESS(0, false),
    INVALID_VALUE(1, false),
    MEMORY_ALLOCATION(2, false),
    INITIALIZATION_ERROR(3, false),
    CUDART_UNLOADING(4, false),
    INVALID_CONFIGURATION(9, false),
    INVALID_DEVICE_POINTER(17, false),
    INVALID_MEMCPY_DIRECTION(21, false),
    INSUFFICIENT_DRIVER(35, false),
    INVALID_DEVICE(101, false),
    NO_DEVICE(100, false),
    HOST_MEMORY_ALREADY_REGISTERED(712, false),
    HOST_MEMORY_NOT_REGISTERED(713, false),
    INVALID_RESOURCE_HANDLE(400, false),
    NOT_READY(600, false),
    ILLEGAL_ADDRESS(700, true),
    LAUNCH_OUT_OF_RESOURCES(701, false),
    LAUNCH_TIMEOUT(702, true),
    HARDWARE_STACK_ERROR(714, true),
    ILLEGAL_INSTRUCTION(715, true),
    MISALIGNED_ADDRESS(716, true),
    INVALID_ADDRESS_SPACE(717, true),
    INVALID_PC(718, true),
    LAUNCH_FAILURE(719, true),
    ECC_UNCORRECTABLE(214, true),
    NOT_SUPPORTED(801, false),
    UNKNOWN(999, false),
    /** Placeholder for a code this enum does not name. */
    UNKNOWN_CODE(-1, false);

    private static final CudaError[] BY_SMALL_CODE = new CudaError[1000];

    static {
        for (CudaError e : values()) {
            if (e.code >= 0 && e.code < BY_SMALL_CODE.length) {
                BY_SMALL_CODE[e.code] = e;
            }
        }
    }

    private final int code;
    private final boolean sticky;

    CudaError(int code, boolean sticky) {
        this.code = code;
        this.sticky = sticky;
    }

    /** The numeric {@code cudaError_t} value ({@code -1} for {@link #UNKNOWN_CODE}). */
    public int code() {
        return code;
    }

    /** True when this error poisons the context: the process must restart to use the device again. */
    public boolean sticky() {
        return sticky;
    }

    /** The named error for a numeric code, or {@link #UNKNOWN_CODE}. Allocation-free. */
    public static CudaError of(int code) {
        if (code >= 0 && code < BY_SMALL_CODE.length) {
            CudaError e = BY_SMALL_CODE[code];
            if (e != null) {
                return e;
            }
        }
        return UNKNOWN_CODE;
    }
}
