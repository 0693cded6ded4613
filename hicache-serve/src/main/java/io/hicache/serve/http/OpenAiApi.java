package io.hicache.serve.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.Finish;
import io.hicache.serve.engine.SamplingParams;
import io.hicache.serve.model.ByteTokenizer;
import io.hicache.serve.model.ChatTemplate;

import java.util.ArrayList;
import java.util.List;

/**
 * OpenAI's API: {@code POST /v1/completions} and {@code POST /v1/chat/completions} (messages rendered by
 * {@link ChatTemplate}), their streamed chunks ({@code choices[0].text} / {@code choices[0].delta.content}, a final
 * chunk with {@code finish_reason}, with {@code stream_options.include_usage} a last chunk with empty {@code choices}
 * and the usage, then {@code [DONE]}), {@code usage.prompt_tokens_details.cached_tokens} in every usage object, and
 * {@code GET /v1/models}. Sampling fields: {@code max_tokens} (chat: also {@code max_completion_tokens}),
 * {@code temperature}, {@code top_p}, {@code stop}, {@code seed}, and vLLM's extensions {@code top_k},
 * {@code ignore_eos}; {@code n} must be 1, {@code echo} and {@code logprobs} are not supported; the penalties are
 * accepted and ignored. Stateless.
 */
final class OpenAiApi {
    /** OpenAI's default {@code max_tokens} for completions. */
    static final int DEFAULT_COMPLETION_TOKENS = 16;
    /** This server's default for chat (OpenAI's is the rest of the context). */
    static final int DEFAULT_CHAT_TOKENS = 256;

    private OpenAiApi() {
    }

    static Call completion(ObjectNode body, Engine engine) {
        String model = model(body, engine);
        JsonNode p = body.get("prompt");
        int[] prompt;
        if (p == null || p.isNull()) {
            throw ApiException.bad("prompt", "prompt is required");
        } else if (p.isTextual()) {
            prompt = ByteTokenizer.encode(p.textValue());
        } else if (p.isArray() && p.size() == 1 && p.get(0).isTextual()) {
            prompt = ByteTokenizer.encode(p.get(0).textValue());
        } else if (p.isArray() && (p.size() == 0 || p.get(0).isIntegralNumber())) {
            prompt = Json.tokenIds(p, "prompt", engine.model().vocab());
        } else if (p.isArray()) {
            throw ApiException.bad("prompt", "batched prompts are not supported; send one string or one list of token ids");
        } else {
            throw ApiException.bad("prompt", "prompt must be a string or a list of token ids, got " + Json.kind(p));
        }
        if (Boolean.TRUE.equals(Json.optBool(body, "echo", "echo"))) {
            throw ApiException.bad("echo", "echo is not supported by this server");
        }
        if (body.hasNonNull("logprobs")) {
            throw ApiException.bad("logprobs", "logprobs are not supported by this server");
        }
        Integer max = Json.optInt(body, "max_tokens", "max_tokens");
        SamplingParams params = sampling(body, max == null ? DEFAULT_COMPLETION_TOKENS : max);
        Params.check(engine, prompt.length, params.maxNewTokens());
        boolean stream = Boolean.TRUE.equals(Json.optBool(body, "stream", "stream"));
        return new Call("completions", prompt, params, stream, new Format(false, model, includeUsage(body)));
    }

    static Call chat(ObjectNode body, Engine engine) {
        String model = model(body, engine);
        JsonNode msgs = body.get("messages");
        if (msgs == null || !msgs.isArray() || msgs.isEmpty()) {
            throw ApiException.bad("messages", "messages must be a non-empty list of {role, content} objects, got "
                + (msgs != null && msgs.isArray() ? "an empty list" : Json.kind(msgs)));
        }
        List<ChatTemplate.Message> messages = new ArrayList<>();
        int i = 0;
        for (JsonNode m : msgs) {
            if (!m.isObject()) {
                throw ApiException.bad("messages", "messages[" + i + "] must be an object, got " + Json.kind(m));
            }
            String role = Json.optString(m, "role", "messages[" + i + "].role");
            if (role == null || !ChatTemplate.ROLES.contains(role)) {
                throw ApiException.bad("messages", "messages[" + i + "].role must be one of " + ChatTemplate.ROLES
                    + ", got " + (role == null ? "nothing" : "'" + role + "'"));
            }
            messages.add(new ChatTemplate.Message(role, content(m.get("content"), i)));
            i++;
        }
        int[] prompt = ByteTokenizer.encode(ChatTemplate.render(messages));
        Integer max = Json.optInt(body, "max_completion_tokens", "max_completion_tokens");
        if (max == null) {
            max = Json.optInt(body, "max_tokens", "max_tokens");
        }
        int ctxLeft = engine.model().contextTokens() - prompt.length;
        SamplingParams params = sampling(body, max == null ? Math.max(1, Math.min(DEFAULT_CHAT_TOKENS, ctxLeft)) : max);
        Params.check(engine, prompt.length, params.maxNewTokens());
        boolean stream = Boolean.TRUE.equals(Json.optBool(body, "stream", "stream"));
        return new Call("chat", prompt, params, stream, new Format(true, model, includeUsage(body)));
    }

    private static String content(JsonNode c, int i) {
        if (c == null || c.isNull()) {
            return "";
        }
        if (c.isTextual()) {
            return c.textValue();
        }
        if (c.isArray()) {
            StringBuilder sb = new StringBuilder();
            for (JsonNode part : c) {
                String type = part.isObject() ? Json.optString(part, "type", "messages[" + i + "].content[].type") : null;
                if (!"text".equals(type) || !part.path("text").isTextual()) {
                    throw ApiException.bad("messages", "messages[" + i + "].content parts must be {\"type\": \"text\", "
                        + "\"text\": ...}; this server has no other modality");
                }
                sb.append(part.get("text").textValue());
            }
            return sb.toString();
        }
        throw ApiException.bad("messages", "messages[" + i + "].content must be a string or a list of text parts, got "
            + Json.kind(c));
    }

    private static String model(ObjectNode body, Engine engine) {
        String m = Json.optString(body, "model", "model");
        String id = engine.model().id();
        if (m == null || m.equals("default") || m.equals(id)) {
            return id;
        }
        throw ApiException.bad("model", "model '" + m + "' is not served here; use 'default' or '" + id + "'");
    }

    private static boolean includeUsage(ObjectNode body) {
        JsonNode so = Json.optObject(body, "stream_options", "stream_options");
        return so != null && Boolean.TRUE.equals(Json.optBool(so, "include_usage", "stream_options.include_usage"));
    }

    private static SamplingParams sampling(ObjectNode body, int maxTokens) {
        if (maxTokens <= 0) {
            throw ApiException.bad("max_tokens", "max_tokens must be at least 1, got " + maxTokens);
        }
        Integer n = Json.optInt(body, "n", "n");
        if (n != null && n != 1) {
            throw ApiException.bad("n", "n must be 1 (one choice per request), got " + n);
        }
        Double temperature = Json.optNumber(body, "temperature", "temperature");
        Double topP = Json.optNumber(body, "top_p", "top_p");
        Integer topK = Json.optInt(body, "top_k", "top_k");
        Boolean ignoreEos = Json.optBool(body, "ignore_eos", "ignore_eos");
        Json.optNumber(body, "presence_penalty", "presence_penalty");
        Json.optNumber(body, "frequency_penalty", "frequency_penalty");
        Integer seed = Json.optInt(body, "seed", "seed");
        return Params.of(maxTokens, temperature == null ? 1.0 : temperature, topP == null ? 1.0 : topP,
            topK == null ? -1 : topK, ignoreEos != null && ignoreEos, Json.optStrings(body, "stop", "stop"),
            seed == null ? null : seed.longValue());
    }

    /** {@code GET /v1/models}. */
    static String models(Engine engine, long createdS) {
        ObjectNode o = Json.object();
        o.put("object", "list");
        ArrayNode data = o.putArray("data");
        data.add(modelObject(engine, createdS));
        return Json.write(o);
    }

    static ObjectNode modelObject(Engine engine, long createdS) {
        ObjectNode m = Json.object();
        m.put("id", engine.model().id());
        m.put("object", "model");
        m.put("created", createdS);
        m.put("owned_by", "hicache");
        m.put("root", engine.model().id());
        m.put("max_model_len", engine.model().contextTokens());
        return m;
    }

    /** Completion and chat shapes for one call. */
    static final class Format implements Call.Format {
        private final boolean chat;
        private final String model;
        private final boolean includeUsage;
        private final String id;
        private final long created = System.currentTimeMillis() / 1000;

        Format(boolean chat, String model, boolean includeUsage) {
            this.chat = chat;
            this.model = model;
            this.includeUsage = includeUsage;
            this.id = Ids.next(chat ? "chatcmpl-" : "cmpl-");
        }

        private ObjectNode head(boolean chunk) {
            ObjectNode o = Json.object();
            o.put("id", id);
            o.put("object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
            o.put("created", created);
            o.put("model", model);
            return o;
        }

        private String chunk(String delta, String role, String finishReason) {
            ObjectNode o = head(true);
            ObjectNode c = o.putArray("choices").addObject();
            c.put("index", 0);
            if (chat) {
                ObjectNode d = c.putObject("delta");
                if (role != null) {
                    d.put("role", role);
                }
                d.put("content", delta);
            } else {
                c.put("text", delta);
            }
            c.putNull("logprobs");
            if (finishReason == null) {
                c.putNull("finish_reason");
            } else {
                c.put("finish_reason", finishReason);
            }
            if (includeUsage) {
                o.putNull("usage");
            }
            return Json.write(o);
        }

        @Override
        public List<String> open() {
            return chat ? List.of(chunk("", "assistant", null)) : List.of();
        }

        @Override
        public List<String> text(String delta, String all, int completionTokens) {
            return List.of(chunk(delta, null, null));
        }

        @Override
        public List<String> finish(Finish f, String all) {
            String last = chunk("", null, f.reason());
            if (!includeUsage) {
                return List.of(last);
            }
            ObjectNode u = head(true);
            u.putArray("choices");
            usage(u, f);
            return List.of(last, Json.write(u));
        }

        @Override
        public String body(Finish f, String all) {
            ObjectNode o = head(false);
            ObjectNode c = o.putArray("choices").addObject();
            c.put("index", 0);
            if (chat) {
                ObjectNode m = c.putObject("message");
                m.put("role", "assistant");
                m.put("content", all);
            } else {
                c.put("text", all);
            }
            c.putNull("logprobs");
            c.put("finish_reason", f.reason());
            usage(o, f);
            return Json.write(o);
        }

        private static void usage(ObjectNode o, Finish f) {
            ObjectNode u = o.putObject("usage");
            u.put("prompt_tokens", f.promptTokens());
            u.put("completion_tokens", f.completionTokens());
            u.put("total_tokens", f.promptTokens() + f.completionTokens());
            ObjectNode d = u.putObject("prompt_tokens_details");
            d.put("cached_tokens", f.cached().total());
            ObjectNode t = u.putObject("cached_tokens_details");
            t.put("device", f.cached().device());
            t.put("host", f.cached().host());
            t.put("storage", f.cached().storage());
            SglangApi.timing(u.putObject("hicache_timing"), f.timing());
        }
    }
}
