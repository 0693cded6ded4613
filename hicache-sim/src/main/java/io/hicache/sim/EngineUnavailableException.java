package io.hicache.sim;

/** No engine can run the requested configuration. Immutable. */
public final class EngineUnavailableException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message which configuration and why */
    public EngineUnavailableException(String message) {
        super(message);
    }
}
