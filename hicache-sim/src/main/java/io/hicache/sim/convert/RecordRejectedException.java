package io.hicache.sim.convert;

/** A log record the converter cannot use: reported with its line, counted, and the conversion goes on. */
final class RecordRejectedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    RecordRejectedException(String problem) {
        super(problem, null, false, false);
    }
}
