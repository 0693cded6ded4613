package io.hicache.cuda;

/** Direction of a copy, with the numeric value of {@code cudaMemcpyKind}. */
public enum CopyKind {
    HOST_TO_HOST(0),
    HOST_TO_DEVICE(1),
    DEVICE_TO_HOST(2),
    DEVICE_TO_DEVICE(3),
    /** Direction inferred from the pointers (unified virtual addressing). */
    DEFAULT(4);

    private final int value;

    CopyKind(int value) {
        this.value = value;
    }

    /** The {@code cudaMemcpyKind} value passed to the runtime. */
    public int value() {
        return value;
    }
}
