package io.hicache.sim.trace;

import java.nio.file.Path;

/**
 * A trace record that cannot be used, reported as {@code file:line: what is wrong}. Thrown by
 * {@link TraceReader#next()} on the first bad record; reading stops there (no record after a bad
 * one is returned). Immutable and therefore thread-safe.
 */
public final class TraceFormatException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final long lineNumber;
    private final String problem;

    /**
     * @param file       the trace file
     * @param lineNumber 1-based line of the bad record
     * @param problem    what is wrong, naming the bad value and the rule it breaks
     */
    public TraceFormatException(Path file, long lineNumber, String problem) {
        super(file + ":" + lineNumber + ": " + problem);
        this.file = file;
        this.lineNumber = lineNumber;
        this.problem = problem;
    }

    /** The trace file. */
    public Path file() {
        return file;
    }

    /** The 1-based line of the bad record. */
    public long lineNumber() {
        return lineNumber;
    }

    /** What is wrong, without the {@code file:line: } prefix. */
    public String problem() {
        return problem;
    }
}
