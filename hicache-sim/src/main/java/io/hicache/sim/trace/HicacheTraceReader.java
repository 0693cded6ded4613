package io.hicache.sim.trace;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The project's own trace format, {@code hicache:FILE}: JSON lines that {@code hicache-sim convert} writes from the
 * log shapes people keep, and that anyone can write by hand. One record per request:
 *
 * <table>
 *   <caption>fields</caption>
 *   <tr><th>field</th><th>type</th><th>meaning</th></tr>
 *   <tr><td>{@code timestamp_ms}</td><td>number, required</td><td>arrival in milliseconds, any origin: a replay
 *   measures time from the first arrival (epoch times are fine)</td></tr>
 *   <tr><td>{@code input_length}</td><td>int, required</td><td>prompt tokens</td></tr>
 *   <tr><td>{@code output_length}</td><td>int, required</td><td>generated tokens</td></tr>
 *   <tr><td>{@code block_tokens}</td><td>int &gt;= 1, required</td><td>tokens per block; the same on every line</td></tr>
 *   <tr><td>{@code hash_ids}</td><td>ints &gt;= 0, required</td><td>one id per block, prefix-chained (below)</td></tr>
 *   <tr><td>{@code covers_answer}</td><td>boolean, required</td><td>false: {@code hash_ids} are the prompt's
 *   {@code ceil(input_length / block_tokens)} blocks; true: they go on over the answer,
 *   {@code ceil((input_length + output_length) / block_tokens)} ids, so the next turn of a conversation can hit
 *   it</td></tr>
 *   <tr><td>{@code chat_id}, {@code parent_chat_id}</td><td>ints, optional</td><td>the record's id and the id of
 *   the turn it follows (-1: a first turn), as in Qwen-Bailian traces; a closed-loop replay sends a turn no
 *   earlier than its parent finished</td></tr>
 *   <tr><td>{@code turn}</td><td>int &gt;= 0, optional</td><td>the turn's number in its conversation
 *   (informational; so is {@code conversation_id}, a string or number)</td></tr>
 *   <tr><td>{@code unique_prefixes}</td><td>boolean, optional</td><td>true: the log had no prefix information and
 *   the converter gave every prompt blocks of its own ({@code --unique-prefixes}); such a record never hits</td></tr>
 *   <tr><td>{@code tokens}</td><td>string, optional</td><td>how lengths were counted when not by a model's
 *   tokenizer: {@code "whitespace"} ({@code --whitespace-tokens})</td></tr>
 * </table>
 *
 * <p><b>The {@code hash_ids} rule.</b> Block {@code k} of a request is its tokens {@code [k*B, (k+1)*B)} (the last
 * block may be partial). Its key is the L3 page key of that block with the blocks before it, exactly as
 * {@code io.hicache.storage.PageKeys} and SGLang compute them with no namespace:
 * {@code key[0] = SHA-256(ids of block 0)}, {@code key[k] = SHA-256(key[k-1] ‖ ids of block k)}, ids as 4-byte
 * little-endian unsigned integers. {@code hash_ids[k]} numbers those keys in the order the file first meets them
 * (0, 1, 2, ...), so two records share an id at position {@code k} exactly when their first {@code k+1} blocks hold
 * the same tokens, and distinct keys never share a number. Any other numbering with that property reads the
 * same. Owned by one thread.
 */
public final class HicacheTraceReader extends AbstractJsonlTraceReader {
    /** Largest {@code block_tokens} accepted. */
    public static final int MAX_BLOCK_TOKENS = 1 << 20;

    private static final int TIMESTAMP = 0;
    private static final int INPUT = 1;
    private static final int OUTPUT = 2;
    private static final int BLOCK_TOKENS = 3;
    private static final int COVERS_ANSWER = 5;
    private static final int CHAT_ID = 6;
    private static final int PARENT = 7;
    private static final int TURN = 8;
    private static final int UNIQUE = 9;
    private static final int TOKENS = 10;
    private static final List<Field> FIELDS = List.of(
            new Field("timestamp_ms", FieldType.NUMBER, true),
            new Field("input_length", FieldType.INT, true),
            new Field("output_length", FieldType.INT, true),
            new Field("block_tokens", FieldType.INT, true),
            new Field("hash_ids", FieldType.INT_ARRAY, true),
            new Field("covers_answer", FieldType.BOOLEAN, true),
            new Field("chat_id", FieldType.NUMBER, false),
            new Field("parent_chat_id", FieldType.NUMBER, false),
            new Field("turn", FieldType.INT, false),
            new Field("unique_prefixes", FieldType.BOOLEAN, false),
            new Field("tokens", FieldType.STRING, false));

    private long firstBlockLine;
    private long uniquePrefixRecords;
    private long whitespaceRecords;

    /** Opens {@code file}, returning at most {@code limit} records. */
    public HicacheTraceReader(Path file, long limit) {
        super(file, limit, 0, FIELDS, TraceTimeUnit.MS);
    }

    @Override
    protected String formatName() {
        return "hicache";
    }

    @Override
    protected Request toRequest(Fields f, int index) {
        int block = f.intValue(BLOCK_TOKENS);
        if (block < 1 || block > MAX_BLOCK_TOKENS) {
            throw fail("block_tokens must be in [1, " + MAX_BLOCK_TOKENS + "], got " + block);
        }
        if (blockSize() == 0) {
            blockSize(block);
            firstBlockLine = lineNumber();
        } else if (block != blockSize()) {
            throw fail("block_tokens " + block + " differs from line " + firstBlockLine + "'s " + blockSize()
                    + ": a trace has one block size");
        }
        if (f.has(CHAT_ID) && (!f.isIntegral(CHAT_ID) || f.longValue(CHAT_ID) < 0)) {
            throw fail("field 'chat_id' must be an integer >= 0, got " + f.doubleValue(CHAT_ID));
        }
        if (f.has(TURN) && f.intValue(TURN) < 0) {
            throw fail("turn must be >= 0, got " + f.intValue(TURN));
        }
        if (f.has(TOKENS)) {
            if (!f.stringValue(TOKENS).equals("whitespace")) {
                throw fail("field 'tokens' names how lengths were counted when not by a tokenizer; the only value is"
                        + " \"whitespace\", got \"" + f.stringValue(TOKENS) + "\"");
            }
            whitespaceRecords++;
        }
        if (f.booleanValue(UNIQUE)) {
            uniquePrefixRecords++;
        }
        long arrivalNs = toNanos(f, TIMESTAMP);
        long id = f.has(CHAT_ID) ? f.longValue(CHAT_ID) : index;
        return request(index, id, parentId(f, PARENT), arrivalNs, f.intValue(INPUT), f.intValue(OUTPUT),
                "input_length", "output_length", "hash_ids", f, f.booleanValue(COVERS_ANSWER));
    }

    @Override
    public List<String> notes() {
        List<String> notes = new ArrayList<>();
        if (uniquePrefixRecords > 0) {
            notes.add(uniquePrefixRecords + " records have prefixes made up by 'convert --unique-prefixes' (their log"
                    + " had no prefix information): they never hit, so their hit ratios say nothing about the log");
        }
        if (whitespaceRecords > 0) {
            notes.add(whitespaceRecords + " records were counted in whitespace-separated words"
                    + " ('convert --whitespace-tokens'), not in a model's tokens: lengths and hits are approximate");
        }
        return notes;
    }

    /**
     * The block size of the trace in {@code file}: the first record's {@code block_tokens}.
     *
     * @return the block size, or -1 when the file has no record
     * @throws TraceFormatException the first record is bad
     */
    public static int blockTokensOf(Path file) {
        try (HicacheTraceReader r = new HicacheTraceReader(file, 1)) {
            Request first = r.next();
            return first == null ? -1 : first.blockSize();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException("cannot read trace " + file + ": " + e.getMessage(), e);
        }
    }
}
