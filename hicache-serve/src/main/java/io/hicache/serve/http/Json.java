package io.hicache.serve.http;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * JSON plumbing both APIs share: parsing a body, reading typed fields with one-line errors that name the field, and
 * the error object ({@code {"error": {"message", "type", "param", "code"}}}, OpenAI's shape, which SGLang's and vLLM's
 * clients read too). Output is compact (one line), as clients that read a non-streamed body line by line need.
 * Stateless; thread-safe.
 */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();

    private Json() {
    }

    /** The body as a JSON object. @throws ApiException 400 when it is empty, not JSON or not an object */
    static ObjectNode parseObject(byte[] body) {
        if (body.length == 0) {
            throw ApiException.bad(null, "the request body is empty; send a JSON object");
        }
        JsonNode n;
        try {
            n = MAPPER.readTree(body);
        } catch (JsonProcessingException e) {
            String m = e.getOriginalMessage();
            throw ApiException.bad(null, "the request body is not valid JSON: " + firstLine(m));
        } catch (IOException e) {
            throw ApiException.bad(null, "the request body could not be read: " + firstLine(e.getMessage()));
        }
        if (n == null || !n.isObject()) {
            throw ApiException.bad(null, "the request body must be a JSON object, got " + kind(n));
        }
        return (ObjectNode) n;
    }

    static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int i = s.indexOf('\n');
        return i < 0 ? s : s.substring(0, i);
    }

    static String kind(JsonNode n) {
        if (n == null || n.isMissingNode()) {
            return "nothing";
        }
        JsonNodeType t = n.getNodeType();
        return switch (t) {
            case ARRAY -> "an array";
            case OBJECT -> "an object";
            case STRING -> "a string";
            case NUMBER -> "a number";
            case BOOLEAN -> "a boolean";
            case NULL -> "null";
            default -> t.name().toLowerCase(java.util.Locale.ROOT);
        };
    }

    private static boolean absent(JsonNode n) {
        return n == null || n.isNull() || n.isMissingNode();
    }

    static Integer optInt(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return null;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw ApiException.bad(field, shown + " must be an integer, got " + kind(n) + " " + n);
        }
        return n.intValue();
    }

    static Double optNumber(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return null;
        }
        if (!n.isNumber()) {
            throw ApiException.bad(field, shown + " must be a number, got " + kind(n) + " " + n);
        }
        return n.doubleValue();
    }

    static Boolean optBool(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return null;
        }
        if (!n.isBoolean()) {
            throw ApiException.bad(field, shown + " must be true or false, got " + kind(n) + " " + n);
        }
        return n.booleanValue();
    }

    static String optString(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return null;
        }
        if (!n.isTextual()) {
            throw ApiException.bad(field, shown + " must be a string, got " + kind(n));
        }
        return n.textValue();
    }

    static JsonNode optObject(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return null;
        }
        if (!n.isObject()) {
            throw ApiException.bad(field, shown + " must be an object, got " + kind(n));
        }
        return n;
    }

    /** A string or a list of strings (stop sequences). */
    static List<String> optStrings(JsonNode o, String field, String shown) {
        JsonNode n = o.get(field);
        if (absent(n)) {
            return List.of();
        }
        if (n.isTextual()) {
            return n.textValue().isEmpty() ? List.of() : List.of(n.textValue());
        }
        if (!n.isArray()) {
            throw ApiException.bad(field, shown + " must be a string or a list of strings, got " + kind(n));
        }
        List<String> out = new ArrayList<>();
        for (JsonNode e : n) {
            if (!e.isTextual()) {
                throw ApiException.bad(field, shown + " must be a string or a list of strings; found " + kind(e));
            }
            if (!e.textValue().isEmpty()) {
                out.add(e.textValue());
            }
        }
        return out;
    }

    /** A list of token ids in {@code [0, vocab)}. */
    static int[] tokenIds(JsonNode n, String field, int vocab) {
        int[] ids = new int[n.size()];
        int i = 0;
        for (JsonNode e : n) {
            if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                throw ApiException.bad(field, field + " must be a list of integer token ids; found " + kind(e) + " " + e);
            }
            int id = e.intValue();
            if (id < 0 || id >= vocab) {
                throw ApiException.bad(field, field + " holds token id " + id + ", outside the vocabulary [0, " + vocab + ")");
            }
            ids[i++] = id;
        }
        return ids;
    }

    /** The error object of a response with {@code status}. */
    static String error(int status, String type, String param, String message) {
        ObjectNode root = MAPPER.createObjectNode();
        ObjectNode e = root.putObject("error");
        e.put("message", message);
        e.put("type", type);
        if (param == null) {
            e.putNull("param");
        } else {
            e.put("param", param);
        }
        e.put("code", status);
        return write(root);
    }

    static String write(JsonNode n) {
        try {
            return MAPPER.writeValueAsString(n);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot write JSON", e);
        }
    }

    static ObjectNode object() {
        return MAPPER.createObjectNode();
    }

    static ArrayNode array() {
        return MAPPER.createArrayNode();
    }
}
