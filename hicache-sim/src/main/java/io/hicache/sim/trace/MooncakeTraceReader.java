package io.hicache.sim.trace;

import java.nio.file.Path;
import java.util.List;

/**
 * Mooncake FAST'25 JSON lines: {@code timestamp} (integer ms), {@code input_length},
 * {@code output_length}, {@code hash_ids} (one prefix-chained id per 512-token block, last block
 * possibly partial). Source: github.com/kvcache-ai/Mooncake, FAST25-release README. Two optional fields, which
 * {@code gen-multiturn} writes and Mooncake's own traces do not have, say which turn a record follows: {@code chat_id}
 * (the record's {@link Request#id()}, else its index) and {@code parent_chat_id} ({@link Request#parentId()}, -1
 * for a first turn), as in Qwen-Bailian traces; a third, {@code covers_answer} (boolean, default false), says that
 * {@code hash_ids} go on over the answer ({@code ceil((input_length + output_length) / 512)} ids, see
 * {@link Request#coversAnswer()}): without it the ids must be exactly the prompt's {@code ceil(input_length / 512)}.
 * Timestamps are read in ms unless {@code --time-unit} says otherwise. Owned by one thread.
 */
public final class MooncakeTraceReader extends AbstractJsonlTraceReader {
    /** Tokens per hash id block. */
    public static final int BLOCK_SIZE = 512;

    private static final int TIMESTAMP = 0;
    private static final int INPUT = 1;
    private static final int OUTPUT = 2;
    private static final int CHAT_ID = 4;
    private static final int PARENT = 5;
    private static final int COVERS_ANSWER = 6;
    private static final List<Field> FIELDS = List.of(
            new Field("timestamp", FieldType.NUMBER, true),
            new Field("input_length", FieldType.INT, true),
            new Field("output_length", FieldType.INT, true),
            new Field("hash_ids", FieldType.INT_ARRAY, true),
            new Field("chat_id", FieldType.NUMBER, false),
            new Field("parent_chat_id", FieldType.NUMBER, false),
            new Field("covers_answer", FieldType.BOOLEAN, false));

    /** Opens {@code file}, returning at most {@code limit} records, timestamps in ms. */
    public MooncakeTraceReader(Path file, long limit) {
        this(file, limit, TraceTimeUnit.MS);
    }

    /** Opens {@code file}, returning at most {@code limit} records, timestamps in {@code unit}. */
    public MooncakeTraceReader(Path file, long limit, TraceTimeUnit unit) {
        super(file, limit, BLOCK_SIZE, FIELDS, unit);
    }

    @Override
    protected String formatName() {
        return "mooncake";
    }

    @Override
    protected Request toRequest(Fields f, int index) {
        long arrivalNs = toNanos(f, TIMESTAMP);
        if (f.has(CHAT_ID) && (!f.isIntegral(CHAT_ID) || f.longValue(CHAT_ID) < 0)) {
            throw fail("field 'chat_id' must be an integer >= 0, got " + f.doubleValue(CHAT_ID));
        }
        long id = f.has(CHAT_ID) ? f.longValue(CHAT_ID) : index;
        return request(index, id, parentId(f, PARENT), arrivalNs, f.intValue(INPUT), f.intValue(OUTPUT),
                "input_length", "output_length", "hash_ids", f, f.booleanValue(COVERS_ANSWER));
    }
}
