package io.hicache.sim.trace;

import java.nio.file.Path;
import java.util.List;

/**
 * Alibaba Qwen-Bailian usage traces: {@code chat_id}, {@code parent_chat_id} (-1 for a first turn),
 * {@code timestamp} (seconds, float), {@code input_length}, {@code output_length}, {@code type}
 * (e.g. {@code text}), {@code turn}, {@code hash_ids} (one prefix-chained id per 16-token block).
 * Source: alibaba-edu qwen-bailian-usagetraces-anon release notes. {@code chat_id} becomes
 * {@link Request#id()} and {@code parent_chat_id} {@link Request#parentId()} (a replay sends a turn no earlier than
 * the turn it follows finished); {@code type} and {@code turn} are checked for type and otherwise unused (the hash
 * ids already carry the prefix sharing). Timestamps are read in seconds unless {@code --time-unit} says otherwise;
 * an optional {@code covers_answer} (boolean) works as in {@link MooncakeTraceReader}. Owned by one thread.
 */
public final class BailianTraceReader extends AbstractJsonlTraceReader {
    /** Tokens per hash id block. */
    public static final int BLOCK_SIZE = 16;

    private static final int CHAT_ID = 0;
    private static final int PARENT = 1;
    private static final int TIMESTAMP = 2;
    private static final int INPUT = 3;
    private static final int OUTPUT = 4;
    private static final int TURN = 6;
    private static final int COVERS_ANSWER = 8;
    private static final List<Field> FIELDS = List.of(
            new Field("chat_id", FieldType.NUMBER, true),
            new Field("parent_chat_id", FieldType.NUMBER, true),
            new Field("timestamp", FieldType.NUMBER, true),
            new Field("input_length", FieldType.INT, true),
            new Field("output_length", FieldType.INT, true),
            new Field("type", FieldType.STRING, true),
            new Field("turn", FieldType.INT, true),
            new Field("hash_ids", FieldType.INT_ARRAY, true),
            new Field("covers_answer", FieldType.BOOLEAN, false));

    /** Opens {@code file}, returning at most {@code limit} records, timestamps in seconds. */
    public BailianTraceReader(Path file, long limit) {
        this(file, limit, TraceTimeUnit.S);
    }

    /** Opens {@code file}, returning at most {@code limit} records, timestamps in {@code unit}. */
    public BailianTraceReader(Path file, long limit, TraceTimeUnit unit) {
        super(file, limit, BLOCK_SIZE, FIELDS, unit);
    }

    @Override
    protected String formatName() {
        return "bailian";
    }

    @Override
    protected Request toRequest(Fields f, int index) {
        if (!f.isIntegral(CHAT_ID)) {
            throw fail("field 'chat_id' must be an integer, got " + f.doubleValue(CHAT_ID));
        }
        long parent = parentId(f, PARENT);
        if (f.intValue(TURN) < 0) {
            throw fail("turn must be >= 0, got " + f.intValue(TURN));
        }
        long arrivalNs = toNanos(f, TIMESTAMP);
        return request(index, f.longValue(CHAT_ID), parent, arrivalNs, f.intValue(INPUT), f.intValue(OUTPUT),
                "input_length", "output_length", "hash_ids", f, f.booleanValue(COVERS_ANSWER));
    }
}
