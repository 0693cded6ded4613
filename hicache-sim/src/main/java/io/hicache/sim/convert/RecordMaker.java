package io.hicache.sim.convert;

import com.fasterxml.jackson.databind.JsonNode;
import io.hicache.sim.trace.TraceTimeUnit;
import org.agrona.collections.IntArrayList;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.temporal.ChronoField;
import java.util.HashMap;
import java.util.Map;

/**
 * Turns one record of a log shape into a {@link HicacheRecord}, or rejects it ({@link RecordRejectedException}, the
 * message naming the field and the rule). Token ids come from the log ({@code token-ids}), from a tokenizer through
 * {@link ChatTemplate} ({@code openai-chat}), or are made up: one fresh token stream per conversation
 * ({@code sessions}: a turn's prompt is its conversation's previous prompt and answer plus a new question) or per
 * request ({@code azure-csv --unique-prefixes}). Blocks are numbered by one {@link BlockHasher}. Owned by one thread:
 * the conversations and the made-up token counter are state, so records must come in the order they are converted.
 */
final class RecordMaker {
    /** Made-up token ids count up from here (well clear of small real vocabularies, to read at a glance). */
    private static final long FIRST_MADE_UP_TOKEN = 1L << 31;
    private static final DateTimeFormatter DATETIME = new DateTimeFormatterBuilder()
            .appendPattern("yyyy-MM-dd HH:mm:ss")
            .optionalStart().appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true).optionalEnd()
            .toFormatter(java.util.Locale.ROOT);

    private final LogShape shape;
    private final BlockHasher hasher;
    private final TraceTimeUnit unit;
    private final ChatTemplate template;
    private final boolean approximateTokens;
    private final boolean uniquePrefixes;
    private final Map<String, Conversation> conversations = new HashMap<>();
    private final IntArrayList tokens = new IntArrayList();
    private long nextToken = FIRST_MADE_UP_TOKEN;

    /** A session's token stream so far and its last accepted turn. */
    private static final class Conversation {
        final BlockHasher.Stream stream;
        int turn;
        int prompt;
        int answer;

        Conversation(BlockHasher.Stream stream) {
            this.stream = stream;
        }
    }

    RecordMaker(LogShape shape, BlockHasher hasher, TraceTimeUnit unit, Tokenizer tokenizer, boolean uniquePrefixes) {
        this.shape = shape;
        this.hasher = hasher;
        this.unit = unit;
        this.template = tokenizer == null ? null : new ChatTemplate(tokenizer);
        this.approximateTokens = tokenizer != null && tokenizer.approximate();
        this.uniquePrefixes = uniquePrefixes;
    }

    /** The record of a JSON line ({@code openai-chat}, {@code token-ids}, {@code sessions}). */
    HicacheRecord fromJson(JsonNode n, long line) {
        if (!n.isObject()) {
            throw new RecordRejectedException("expected a JSON object, got " + n.getNodeType().name().toLowerCase(
                    java.util.Locale.ROOT));
        }
        double t = timestampMs(n);
        return switch (shape) {
            case TOKEN_IDS -> tokenIds(n, line, t);
            case OPENAI_CHAT -> chat(n, line, t);
            case SESSIONS -> session(n, line, t);
            case AZURE_CSV -> throw new IllegalStateException("azure-csv is not JSON");
        };
    }

    /** A session record's arrival, before it is converted (for sorting). */
    double timestampMs(JsonNode n) {
        JsonNode ts = n.get("timestamp");
        if (ts == null || !ts.isNumber()) {
            throw new RecordRejectedException(ts == null ? "missing field 'timestamp' (arrival, in "
                    + unit + " unless --time-unit)" : "field 'timestamp' must be a number, got " + ts);
        }
        double v = ts.asDouble();
        if (!(v >= 0) || Double.isInfinite(v)) {
            throw new RecordRejectedException("timestamp must be a finite number >= 0, got " + ts);
        }
        return v * unit.nanos() / 1e6;
    }

    private HicacheRecord tokenIds(JsonNode n, long line, double t) {
        tokens.clear();
        int in = ids(n, "input_ids", true);
        if (in == 0) {
            throw new RecordRejectedException("input_ids is empty: a request has at least one prompt token");
        }
        boolean answerIds = n.has("output_ids");
        int out;
        if (answerIds) {
            out = ids(n, "output_ids", false);
            if (n.has("output_length") && intField(n, "output_length") != out) {
                throw new RecordRejectedException("output_length " + intField(n, "output_length") + " differs from the "
                        + out + " ids of output_ids");
            }
        } else {
            out = intField(n, "output_length");
        }
        int[] hashIds = hasher.hashIds(tokens.toIntArray(), tokens.size());
        return new HicacheRecord(line, t, in, out, hashIds, answerIds, conversation(n), -1, false, false);
    }

    private HicacheRecord chat(JsonNode n, long line, double t) {
        JsonNode messages = n.get("messages");
        if (messages == null || !messages.isArray() || messages.isEmpty()) {
            throw new RecordRejectedException(messages == null ? "missing field 'messages' (an array of {role, content})"
                    : "field 'messages' must be a non-empty array of {role, content}");
        }
        JsonNode completion = n.get("completion");
        if (completion == null || !completion.isTextual()) {
            throw new RecordRejectedException(completion == null ? "missing field 'completion' (the answer's text)"
                    : "field 'completion' must be a string, got " + completion.getNodeType());
        }
        tokens.clear();
        int k = 0;
        for (JsonNode m : messages) {
            JsonNode role = m.get("role");
            if (role == null || !role.isTextual()) {
                throw new RecordRejectedException("messages[" + k + "] has no string 'role'");
            }
            template.message(role.asText(), content(m.get("content"), k), tokens);
            k++;
        }
        template.generationPrompt(tokens);
        int in = tokens.size();
        template.answer(completion.asText(), tokens);
        int out = tokens.size() - in;
        int[] hashIds = hasher.hashIds(tokens.toIntArray(), tokens.size());
        return new HicacheRecord(line, t, in, out, hashIds, true, conversation(n), -1, false, approximateTokens);
    }

    private static String content(JsonNode c, int k) {
        if (c == null || c.isNull()) {
            return "";
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder text = new StringBuilder();
            for (JsonNode part : c) {
                String type = part.path("type").asText("");
                if (!type.equals("text") || !part.path("text").isTextual()) {
                    throw new RecordRejectedException("messages[" + k + "].content has a part of type '" + type
                            + "': only text parts can be tokenized");
                }
                text.append(part.get("text").asText());
            }
            return text.toString();
        }
        throw new RecordRejectedException("messages[" + k + "].content must be a string or an array of text parts");
    }

    private HicacheRecord session(JsonNode n, long line, double t) {
        String id = conversation(n);
        if (id == null) {
            throw new RecordRejectedException("missing field 'conversation_id' (a string or a number)");
        }
        int turn = intField(n, "turn");
        int in = intField(n, "input_length");
        int out = intField(n, "output_length");
        Conversation c = conversations.get(id);
        int history = 0;
        if (c != null) {
            if (turn != c.turn + 1) {
                throw new RecordRejectedException("turn " + turn + " of conversation '" + id + "' follows turn " + c.turn
                        + (turn <= c.turn ? " (turns must count up)" : " (turn " + (c.turn + 1) + " is missing or was"
                        + " rejected, so its history is not known)"));
            }
            history = c.prompt + c.answer;
            if (in <= history) {
                throw new RecordRejectedException("input_length " + in + " is not longer than its history, turn " + c.turn
                        + "'s prompt " + c.prompt + " + answer " + c.answer + " = " + history + " tokens: a turn's"
                        + " prompt is the history plus a new question");
            }
        } else if (in == 0) {
            throw new RecordRejectedException("input_length is 0: a request has at least one prompt token");
        }
        if (c == null) {
            c = new Conversation(hasher.stream());
        }
        for (long i = history; i < (long) in + out; i++) {
            c.stream.append(madeUpToken());
        }
        c.turn = turn;
        c.prompt = in;
        c.answer = out;
        conversations.put(id, c);
        return new HicacheRecord(line, t, in, out, c.stream.hashIds(), true, id, turn, false, false);
    }

    /** The record of an Azure CSV row ({@code TIMESTAMP}, context tokens, generated tokens); prefixes made up. */
    HicacheRecord azure(String timestamp, String context, String generated, long line) {
        double t = azureTimestampMs(timestamp);
        int in = csvInt(context, "ContextTokens");
        int out = csvInt(generated, "GeneratedTokens");
        if (in == 0) {
            throw new RecordRejectedException("ContextTokens is 0: a request has at least one prompt token");
        }
        BlockHasher.Stream s = hasher.stream();
        for (int i = 0; i < in; i++) {
            s.append(madeUpToken());
        }
        return new HicacheRecord(line, t, in, out, s.hashIds(), false, null, -1, uniquePrefixes, false);
    }

    /** An Azure {@code TIMESTAMP}: {@code yyyy-MM-dd HH:mm:ss[.fraction]} (UTC), or a number in the time unit. */
    double azureTimestampMs(String text) {
        String s = text.strip();
        if (!s.isEmpty() && (Character.isDigit(s.charAt(s.length() - 1)) && s.indexOf('-') < 0)) {
            try {
                double v = Double.parseDouble(s);
                if (v >= 0 && !Double.isInfinite(v)) {
                    return v * unit.nanos() / 1e6;
                }
            } catch (NumberFormatException e) {
                // not a number: a date below
            }
        }
        String d = s.replace('T', ' ');
        if (d.endsWith("Z")) {
            d = d.substring(0, d.length() - 1);
        }
        try {
            LocalDateTime at = LocalDateTime.parse(d, DATETIME);
            return at.toEpochSecond(ZoneOffset.UTC) * 1000.0 + at.getNano() / 1e6;
        } catch (DateTimeParseException e) {
            throw new RecordRejectedException("TIMESTAMP '" + text + "' is neither yyyy-MM-dd HH:mm:ss[.fraction] nor a"
                    + " number");
        }
    }

    private int madeUpToken() {
        if (nextToken > 0xFFFF_FFFFL) {
            throw new IllegalStateException("more than 2^31 made-up tokens in one log: convert it in parts");
        }
        return (int) nextToken++;
    }

    private static int csvInt(String text, String name) {
        try {
            int v = Integer.parseInt(text.strip());
            if (v < 0) {
                throw new RecordRejectedException(name + " must be >= 0, got " + v);
            }
            return v;
        } catch (NumberFormatException e) {
            throw new RecordRejectedException(name + " must be an integer, got '" + text.strip() + "'");
        }
    }

    /** Reads the unsigned 32-bit ids of array field {@code name} into {@link #tokens}; returns how many. */
    private int ids(JsonNode n, String name, boolean required) {
        JsonNode a = n.get(name);
        if (a == null) {
            throw new RecordRejectedException("missing field '" + name + "' (an array of token ids)");
        }
        if (!a.isArray()) {
            throw new RecordRejectedException("field '" + name + "' must be an array of token ids, got " + a.getNodeType());
        }
        int k = 0;
        for (JsonNode v : a) {
            if (!v.isIntegralNumber() || v.asLong(-1) < 0 || v.asLong() > 0xFFFF_FFFFL || !v.canConvertToLong()) {
                throw new RecordRejectedException(name + "[" + k + "] must be a token id (an integer in [0, 2^32)), got "
                        + v);
            }
            tokens.addInt((int) v.asLong());
            k++;
        }
        return required || k > 0 ? k : 0;
    }

    private static int intField(JsonNode n, String name) {
        JsonNode v = n.get(name);
        if (v == null) {
            throw new RecordRejectedException("missing field '" + name + "'");
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new RecordRejectedException("field '" + name + "' must be an integer that fits 32 bits, got " + v);
        }
        if (v.asInt() < 0) {
            throw new RecordRejectedException(name + " must be >= 0, got " + v.asInt());
        }
        return v.asInt();
    }

    private static String conversation(JsonNode n) {
        JsonNode c = n.get("conversation_id");
        if (c == null || c.isNull()) {
            return null;
        }
        if (c.isTextual() || c.isIntegralNumber()) {
            return c.asText();
        }
        throw new RecordRejectedException("field 'conversation_id' must be a string or an integer, got " + c);
    }
}
