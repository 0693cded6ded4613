package io.hicache.sim.trace;

/**
 * How a replay reads a trace beyond its format: the unit of its timestamps, what to do with records out of
 * timestamp order, and the largest prompt it can take. Immutable.
 *
 * @param timeUnit        the unit of the timestamps, or null for the format's default ({@code --time-unit})
 * @param sort            replay the records in timestamp order (stable), counting those the file had out of order
 *                        ({@code --sort}); when false, a record earlier than the one before it is refused with its
 *                        line: a trace is never replayed in file order against its own timestamps
 * @param maxPromptTokens the largest prompt, in the trace's tokens, a replay can hold ({@code Long.MAX_VALUE}: no
 *                        limit); a larger one is refused with its line, or skipped when {@code skipOversized}
 * @param maxPromptWhat   what sets that limit, for the message (e.g. "the device's KV capacity"); null when none
 * @param skipOversized   skip and count prompts over the limit instead of refusing the trace ({@code --skip-oversized})
 */
public record ReadOptions(TraceTimeUnit timeUnit, boolean sort, long maxPromptTokens, String maxPromptWhat,
                          boolean skipOversized) {

    /** The format's unit, records in file order (refused when out of order), no size limit. */
    public static final ReadOptions DEFAULT = new ReadOptions(null, false, Long.MAX_VALUE, null, false);

    /** Validates the limit. */
    public ReadOptions {
        if (maxPromptTokens < 1) {
            throw new IllegalArgumentException("the largest prompt must be >= 1 token, got " + maxPromptTokens);
        }
    }

    /** These options with prompts limited to {@code tokens} ({@code what} sets it). */
    public ReadOptions withMaxPrompt(long tokens, String what) {
        return new ReadOptions(timeUnit, sort, tokens, what, skipOversized);
    }
}
