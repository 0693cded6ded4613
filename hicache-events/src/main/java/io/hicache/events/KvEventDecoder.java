package io.hicache.events;

import org.msgpack.core.MessageFormat;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;
import org.msgpack.value.ValueType;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Decodes a KV-events payload (vLLM's wire format, as {@link KvEventPublisher} writes it and vLLM, SGLang and
 * TensorRT-LLM publish it). Stateless; any thread.
 */
public final class KvEventDecoder {
    private KvEventDecoder() {
    }

    /**
     * @throws IllegalArgumentException if the payload is not a well-formed batch (the message says where)
     */
    public static KvEventBatch decode(long sequence, byte[] payload) {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            int n = u.unpackArrayHeader();
            if (n < 2 || n > 3) {
                throw new IllegalArgumentException("batch " + sequence + ": expected [ts, events, dp_rank], got an array of " + n);
            }
            double ts = u.getNextFormat().getValueType() == ValueType.FLOAT ? u.unpackDouble() : u.unpackLong();
            int events = u.unpackArrayHeader();
            List<KvEvent> out = new ArrayList<>(events);
            for (int e = 0; e < events; e++) {
                out.add(event(u, sequence, e));
            }
            Integer rank = null;
            if (n == 3) {
                rank = nil(u) ? null : u.unpackInt();
            }
            return new KvEventBatch(sequence, ts, List.copyOf(out), rank);
        } catch (IOException | RuntimeException e) {
            if (e instanceof IllegalArgumentException iae && iae.getMessage() != null && iae.getMessage().startsWith("batch ")) {
                throw iae;
            }
            throw new IllegalArgumentException("batch " + sequence + ": malformed payload: " + e.getMessage(), e);
        }
    }

    private static KvEvent event(MessageUnpacker u, long seq, int index) throws IOException {
        int n = u.unpackArrayHeader();
        String tag = u.unpackString();
        switch (tag) {
            case "BlockStored" -> {
                long[] hashes = hashes(u);
                Long parent = nil(u) ? null : u.unpackLong();
                int tokens = u.unpackArrayHeader();
                int[] ids = new int[tokens];
                for (int i = 0; i < tokens; i++) {
                    ids[i] = (int) u.unpackLong();
                }
                int blockSize = u.unpackInt();
                Long lora = n > 5 && !nil(u) ? u.unpackLong() : null;
                String medium = n > 6 && !nil(u) ? u.unpackString() : null;
                String loraName = n > 7 && !nil(u) ? u.unpackString() : null;
                for (int i = 8; i < n; i++) {
                    u.skipValue();
                }
                return new KvEvent.BlockStored(hashes, parent, ids, blockSize, lora, medium, loraName);
            }
            case "BlockRemoved" -> {
                long[] hashes = hashes(u);
                String medium = n > 2 && !nil(u) ? u.unpackString() : null;
                for (int i = 3; i < n; i++) {
                    u.skipValue();
                }
                return new KvEvent.BlockRemoved(hashes, medium);
            }
            case "AllBlocksCleared" -> {
                for (int i = 1; i < n; i++) {
                    u.skipValue();
                }
                return new KvEvent.AllBlocksCleared();
            }
            default -> throw new IllegalArgumentException("batch " + seq + ": event " + index + " has unknown tag '" + tag + "'");
        }
    }

    private static long[] hashes(MessageUnpacker u) throws IOException {
        int n = u.unpackArrayHeader();
        long[] h = new long[n];
        for (int i = 0; i < n; i++) {
            h[i] = u.unpackLong();
        }
        return h;
    }

    /** Consumes a nil if one is next. */
    private static boolean nil(MessageUnpacker u) throws IOException {
        if (u.getNextFormat() == MessageFormat.NIL) {
            u.unpackNil();
            return true;
        }
        return false;
    }
}
