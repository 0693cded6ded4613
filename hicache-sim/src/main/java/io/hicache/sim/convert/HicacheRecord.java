package io.hicache.sim.convert;

/**
 * One converted request, as {@link HicacheTraceWriter} writes it (see {@code io.hicache.sim.trace.HicacheTraceReader}
 * for the fields). Immutable by convention ({@code hashIds} is owned by the record).
 *
 * @param line           the input line it came from (1-based)
 * @param timestampMs    arrival, ms, as the log gives it (any origin)
 * @param inputLength    prompt tokens
 * @param outputLength   answer tokens
 * @param hashIds        one id per block, over the prompt or (when {@code coversAnswer}) prompt and answer
 * @param coversAnswer   whether {@code hashIds} go on over the answer
 * @param conversation   the conversation it belongs to, or null when the log does not say
 * @param turn           its turn in the conversation, or -1 when not known
 * @param uniquePrefixes whether its blocks were made up ({@code --unique-prefixes})
 * @param whitespace     whether its tokens are whitespace words ({@code --whitespace-tokens})
 */
record HicacheRecord(long line, double timestampMs, int inputLength, int outputLength, int[] hashIds,
                     boolean coversAnswer, String conversation, int turn, boolean uniquePrefixes, boolean whitespace) {
}
