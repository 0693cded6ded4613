package io.hicache.sim.convert;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;

import java.io.Closeable;
import java.io.IOException;
import java.io.Writer;
import java.math.BigDecimal;
import java.util.HashMap;
import java.util.Map;

/**
 * Writes {@link HicacheRecord}s as {@code hicache} trace lines, in the order given (arrival order): each gets
 * {@code chat_id} = its position, and a record of a known conversation gets {@code parent_chat_id} = the record of
 * that conversation written before it (-1 for its first), so a closed-loop replay sends a turn only after the one it
 * follows has finished. Owned by one thread.
 */
final class HicacheTraceWriter implements Closeable {
    private static final JsonFactory JSON = new JsonFactory();

    private final Writer out;
    private final int blockTokens;
    private final Map<String, Long> lastOfConversation = new HashMap<>();
    private long written;

    HicacheTraceWriter(Writer out, int blockTokens) {
        this.out = out;
        this.blockTokens = blockTokens;
    }

    /** Records written so far. */
    long written() {
        return written;
    }

    void write(HicacheRecord r) throws IOException {
        long chatId = written++;
        try (JsonGenerator g = JSON.createGenerator(out)) {
            g.configure(JsonGenerator.Feature.AUTO_CLOSE_TARGET, false);
            g.writeStartObject();
            double t = r.timestampMs();
            if (t == Math.rint(t) && Math.abs(t) < 0x1p53) {
                g.writeNumberField("timestamp_ms", (long) t);
            } else {
                g.writeFieldName("timestamp_ms");
                g.writeNumber(BigDecimal.valueOf(t).stripTrailingZeros().toPlainString());
            }
            g.writeNumberField("input_length", r.inputLength());
            g.writeNumberField("output_length", r.outputLength());
            g.writeNumberField("block_tokens", blockTokens);
            g.writeFieldName("hash_ids");
            g.writeArray(r.hashIds(), 0, r.hashIds().length);
            g.writeBooleanField("covers_answer", r.coversAnswer());
            g.writeNumberField("chat_id", chatId);
            if (r.conversation() != null) {
                Long parent = lastOfConversation.put(r.conversation(), chatId);
                g.writeNumberField("parent_chat_id", parent == null ? -1 : parent);
                g.writeStringField("conversation_id", r.conversation());
            }
            if (r.turn() >= 0) {
                g.writeNumberField("turn", r.turn());
            }
            if (r.uniquePrefixes()) {
                g.writeBooleanField("unique_prefixes", true);
            }
            if (r.whitespace()) {
                g.writeStringField("tokens", "whitespace");
            }
            g.writeEndObject();
        }
        out.write('\n');
    }

    @Override
    public void close() throws IOException {
        out.close();
    }
}
