package io.hicache.cuda;

/**
 * A failed CUDA runtime call. Carries the numeric code, the runtime's {@code cudaGetErrorName} and
 * {@code cudaGetErrorString} texts, and the call that failed. {@link #sticky()} tells whether the
 * context is poisoned (no later call can succeed) or the error is recoverable.
 */
public final class CudaException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final String errorName;
    private final String errorString;
    private final String call;

    /**
     * @param code        the raw {@code cudaError_t} value
     * @param errorName   {@code cudaGetErrorName(code)}, e.g. {@code cudaErrorInsufficientDriver}
     * @param errorString {@code cudaGetErrorString(code)}
     * @param call        the runtime function that returned the error, e.g. {@code cudaMalloc}
     */
    public CudaException(int code, String errorName, String errorString, String call) {
        super(call + " failed: " + errorName + " (" + code + "): " + errorString);
        this.code = code;
        this.errorName = errorName;
        this.errorString = errorString;
        this.call = call;
    }

    /** The raw {@code cudaError_t} value. */
    public int code() {
        return code;
    }

    /** The named error, or {@link CudaError#UNKNOWN_CODE} when this project does not name the code. */
    public CudaError error() {
        return CudaError.of(code);
    }

    /** The runtime's name for the code, e.g. {@code cudaErrorInsufficientDriver}. */
    public String errorName() {
        return errorName;
    }

    /** The runtime's description of the code. */
    public String errorString() {
        return errorString;
    }

    /** The runtime function that failed. */
    public String call() {
        return call;
    }

    /** True when the error poisons the CUDA context; see {@link CudaError#sticky()}. */
    public boolean sticky() {
        return error().sticky();
    }
}
