package io.hicache.sim.trace;

import java.util.List;

/**
 * What one whole pass over a trace found, before any replay ({@link TraceSource#scan()}): how many records it will
 * replay, how many were sorted or skipped, its time span and density. Immutable.
 *
 * @param records           records a replay gets
 * @param blockSize         tokens per hash id block
 * @param timeUnit          the unit the timestamps were read in
 * @param sortedOutOfOrder  records that came earlier than a record before them in the file (with {@code --sort})
 * @param skippedOversized  prompts over the size limit that were skipped ({@code --skip-oversized})
 * @param firstArrivalNs    the first arrival as written in the file (ns of the file's own clock); a replay's time
 *                          starts there
 * @param spanNs            first to last arrival, ns
 * @param medianGapNs       median of the positive gaps between consecutive arrivals, ns; -1 when there is none
 * @param inputTokens       prompt tokens of all records
 * @param largestPrompt     the largest prompt replayed, tokens
 * @param notes             what the reader wants said about the records (see {@link TraceReader#notes()})
 */
public record TraceStats(long records, int blockSize, TraceTimeUnit timeUnit, long sortedOutOfOrder,
                         long skippedOversized, long firstArrivalNs, long spanNs, long medianGapNs, long inputTokens,
                         long largestPrompt, List<String> notes) {

    /** Copies the notes. */
    public TraceStats {
        notes = List.copyOf(notes);
    }
}
