package io.hicache.core.memory;

/**
 * A host KV pool was refused because it would need more host memory than is available. Thrown before
 * anything is allocated.
 */
public final class InsufficientHostMemoryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final long requestedBytes;
    private final long availableBytes;

    /**
     * @param what           what was being sized, e.g. {@code "host KV pool"}
     * @param requestedBytes bytes asked for
     * @param availableBytes bytes available when asked
     */
    public InsufficientHostMemoryException(String what, long requestedBytes, long availableBytes) {
        super(what + " needs " + requestedBytes + " bytes but only " + availableBytes
                + " bytes of host memory are available; lower the page count, bytes or ratio");
        this.requestedBytes = requestedBytes;
        this.availableBytes = availableBytes;
    }

    /** Bytes asked for. */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** Bytes available when asked. */
    public long availableBytes() {
        return availableBytes;
    }
}
