package io.hicache.sim.trace;

import java.util.Arrays;

/**
 * One request of a trace, in the simulator's units. Immutable by convention: {@code blockIds} is
 * owned by the record and must not be modified by callers; safe to share between threads once
 * published.
 *
 * @param index        0-based position of the record in the trace (after skipped blank lines)
 * @param id           the trace's own request id ({@code chat_id} for Qwen-Bailian), or {@code index}
 *                     when the format has none (Mooncake)
 * @param arrivalNs    arrival time in nanoseconds since the trace's time origin
 * @param inputLength  prompt length in tokens
 * @param outputLength generated length in tokens
 * @param blockIds     one prefix-chained hash id per {@code blockSize}-token block of the prompt; the
 *                     last block may be partial; {@code blockIds.length == ceil(inputLength / blockSize)},
 *                     or {@code ceil((inputLength + outputLength) / blockSize)} when the ids go on to cover
 *                     the answer ({@code coversAnswer})
 * @param blockSize    tokens per block in the trace format (512 for Mooncake, 16 for Qwen-Bailian)
 * @param parentId     the {@link #id} of the request this one follows (the previous turn of its conversation:
 *                     Qwen-Bailian's {@code parent_chat_id}, or the {@code parent_chat_id} that {@code gen-multiturn}
 *                     writes into its Mooncake records), or -1 when none or not known
 * @param coversAnswer whether {@code blockIds} goes on past the prompt over the answer (see {@link #coversAnswer()});
 *                     the trace says so in a field of its own ({@code covers_answer}), never by the id count
 */
public record Request(int index, long id, long arrivalNs, int inputLength, int outputLength, int[] blockIds,
                      int blockSize, long parentId, boolean coversAnswer) {

    /**
     * A request whose ids cover the answer exactly when there are more of them than the prompt's blocks (for
     * requests made in code; trace readers say it explicitly).
     */
    public Request(int index, long id, long arrivalNs, int inputLength, int outputLength, int[] blockIds,
                   int blockSize, long parentId) {
        this(index, id, arrivalNs, inputLength, outputLength, blockIds, blockSize, parentId,
                blockIds.length > ((long) inputLength + blockSize - 1) / blockSize);
    }

    /** A request that follows no other (or whose trace does not say); ids as in the 8-argument constructor. */
    public Request(int index, long id, long arrivalNs, int inputLength, int outputLength, int[] blockIds,
                   int blockSize) {
        this(index, id, arrivalNs, inputLength, outputLength, blockIds, blockSize, -1);
    }

    /** This request at position {@code newIndex} of the replayed stream, arriving at {@code newArrivalNs}. */
    public Request at(int newIndex, long newArrivalNs) {
        return new Request(newIndex, id, newArrivalNs, inputLength, outputLength, blockIds, blockSize, parentId,
                coversAnswer);
    }

    /** Number of blocks of the prompt: {@code ceil(inputLength / blockSize)}. */
    public int blockCount() {
        return (int) Math.min(blockIds.length, ((long) inputLength + blockSize - 1) / blockSize);
    }

    /**
     * Whether {@link #blockIds} goes on past the prompt to cover the answer too (the prompt's blocks, then the
     * blocks of prompt and answer together, as {@code gen-multiturn} and {@code convert} write them): the next turn
     * of the conversation repeats those ids, so a replay can hit the answer's KV as SGLang does after
     * {@code cache_finished_req}, also when the answer ends inside the prompt's last block. Traces that give only the
     * prompt's blocks (Mooncake's own) cannot say which later prompt repeats an answer; their answers get fresh keys.
     */
    @Override
    public boolean coversAnswer() {
        return coversAnswer;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Request r && index == r.index && id == r.id && arrivalNs == r.arrivalNs
                && inputLength == r.inputLength && outputLength == r.outputLength && blockSize == r.blockSize
                && parentId == r.parentId && coversAnswer == r.coversAnswer && Arrays.equals(blockIds, r.blockIds);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(id) * 31 + Arrays.hashCode(blockIds);
    }

    @Override
    public String toString() {
        return "Request[index=" + index + ", id=" + id + ", arrivalNs=" + arrivalNs + ", inputLength=" + inputLength
                + ", outputLength=" + outputLength + ", blocks=" + blockIds.length + ", blockSize=" + blockSize
                + (parentId >= 0 ? ", parentId=" + parentId : "") + (coversAnswer ? ", coversAnswer" : "") + "]";
    }
}
