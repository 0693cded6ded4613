package io.hicache.sim.trace;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * The reader a replay gets ({@link TraceSource#open()}): a format's reader with the rules every replay needs on top.
 * Time starts at the first arrival (a trace of epoch timestamps replays from 0); a record earlier than the one
 * before it is refused with its line ({@link TraceFormatException}) unless the options sort the trace, in which
 * case the whole trace is read, counted and sorted (stably, by timestamp) before the first record is returned;
 * prompts over the size limit are refused with their line, or skipped and counted. Records are renumbered
 * ({@link Request#index()}) in replay order. Owned by one thread; keeps the whole trace in memory only when sorting.
 */
final class ReplayReader implements TraceReader {
    private final TraceReader raw;
    private final Path file;
    private final ReadOptions options;
    private final TraceTimeUnit unit;
    private List<Request> sorted;
    private int sortedNext;
    private long origin = -1;
    private long lastRawArrival = Long.MIN_VALUE;
    private long lastLine;
    private int index;
    private long outOfOrder;
    private long skipped;
    private long inputTokens;
    private long largest;
    private long lastArrival = -1;
    private long[] gaps = new long[256];
    private int gapCount;
    private int blockSize;

    ReplayReader(TraceReader raw, Path file, ReadOptions options, TraceTimeUnit unit) {
        this.raw = raw;
        this.file = file;
        this.options = options;
        this.unit = unit;
    }

    @Override
    public Request next() {
        if (options.sort()) {
            if (sorted == null) {
                sorted = readSorted();
            }
            return sortedNext == sorted.size() ? null : emit(sorted.get(sortedNext++));
        }
        Request r = nextKept();
        if (r == null) {
            return null;
        }
        if (r.arrivalNs() < lastRawArrival) {
            throw new TraceFormatException(file, raw.lineNumber(), "timestamp " + time(r.arrivalNs())
                    + " is earlier than line " + lastLine + "'s " + time(lastRawArrival) + ": the trace is not in"
                    + " arrival order, and replaying it in file order would count latencies from times the replay"
                    + " had passed; pass --sort to replay it in timestamp order (the moved records are counted), or"
                    + " sort the file");
        }
        lastRawArrival = r.arrivalNs();
        lastLine = raw.lineNumber();
        return emit(r);
    }

    private List<Request> readSorted() {
        List<Request> all = new ArrayList<>();
        long max = Long.MIN_VALUE;
        Request r;
        while ((r = nextKept()) != null) {
            if (r.arrivalNs() < max) {
                outOfOrder++;
            }
            max = Math.max(max, r.arrivalNs());
            all.add(r);
        }
        all.sort(Comparator.comparingLong(Request::arrivalNs)); // List.sort is stable: ties keep file order
        return all;
    }

    /** The next record within the size limit (skipping, counted, those over it when asked), or null at the end. */
    private Request nextKept() {
        while (true) {
            Request r = raw.next();
            if (r == null) {
                return null;
            }
            blockSize = r.blockSize();
            if (r.inputLength() <= options.maxPromptTokens()) {
                return r;
            }
            if (!options.skipOversized()) {
                throw new TraceFormatException(file, raw.lineNumber(), "input_length " + r.inputLength()
                        + " tokens is larger than " + options.maxPromptTokens() + " tokens, "
                        + options.maxPromptWhat() + ": the prompt could never be held, so it would run uncached"
                        + " through evictions of everything else; pass --skip-oversized to skip such prompts"
                        + " (counted), or give a larger capacity");
            }
            skipped++;
        }
    }

    private Request emit(Request r) {
        long t = r.arrivalNs();
        if (origin < 0) {
            origin = t;
        }
        long rel = t - origin;
        if (lastArrival >= 0 && rel > lastArrival) {
            if (gapCount == gaps.length) {
                gaps = Arrays.copyOf(gaps, gapCount * 2);
            }
            gaps[gapCount++] = rel - lastArrival;
        }
        lastArrival = rel;
        inputTokens += r.inputLength();
        largest = Math.max(largest, r.inputLength());
        return r.at(index++, rel);
    }

    private String time(long ns) {
        double v = (double) ns / unit.nanos();
        return (v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v)) + " "
                + unit.cliName();
    }

    @Override
    public long lineNumber() {
        return raw.lineNumber();
    }

    @Override
    public List<String> notes() {
        return raw.notes();
    }

    /** What this pass found so far (all of it once {@link #next()} returned null). */
    TraceStats stats() {
        long median = -1;
        if (gapCount > 0) {
            long[] g = Arrays.copyOf(gaps, gapCount);
            Arrays.sort(g);
            median = g[gapCount / 2];
        }
        return new TraceStats(index, blockSize, unit, outOfOrder, skipped, Math.max(0, origin), Math.max(0, lastArrival),
                median, inputTokens, largest, raw.notes());
    }

    @Override
    public void close() throws IOException {
        raw.close();
    }
}
