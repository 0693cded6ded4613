package io.hicache.sim.trace;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * A stream of {@link Request}s read from one trace file, in file order. Owned by one thread (not
 * thread-safe). Reading stops with a {@link TraceFormatException} at the first bad record; I/O
 * failures surface as {@link UncheckedIOException}.
 */
public interface TraceReader extends Closeable {

    /**
     * Returns the next request, or {@code null} at the end of the trace or once the reader's limit is
     * reached.
     *
     * @throws TraceFormatException a record is malformed ({@code file:line: what is wrong})
     * @throws UncheckedIOException the file cannot be read
     */
    Request next();

    /** The 1-based line of the record {@link #next()} returned last (0 before the first; -1 when not known). */
    default long lineNumber() {
        return -1;
    }

    /**
     * What a user should know about the records read so far that no figure shows (e.g. records whose prefixes were
     * synthesized by {@code convert --unique-prefixes}), one sentence each; empty when nothing.
     */
    default java.util.List<String> notes() {
        return java.util.List.of();
    }

    /** Releases the file. Idempotent. */
    @Override
    void close() throws IOException;
}
