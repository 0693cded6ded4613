package io.hicache.serve.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.Finish;
import io.hicache.serve.engine.SamplingParams;
import io.hicache.serve.model.ByteTokenizer;

import java.util.List;
import java.util.Locale;

/**
 * SGLang's native API, {@code POST /generate}: {@code text} or {@code input_ids}, {@code sampling_params}
 * ({@code max_new_tokens}, {@code temperature}, {@code top_p}, {@code top_k}, {@code ignore_eos}, {@code stop},
 * {@code sampling_seed}), {@code stream}. A streamed response is {@code data: {"text": <all text so far>,
 * "meta_info": {...}}} lines, the last with its {@code finish_reason}, then {@code data: [DONE]}; otherwise one object
 * of the same shape. {@code meta_info} has SGLang's {@code id}, {@code finish_reason}, {@code prompt_tokens},
 * {@code completion_tokens}, {@code cached_tokens} and {@code e2e_latency}, plus {@code cached_tokens_details} (by
 * tier) and {@code hicache_timing} (where the time to first token went, in ms). Fields SGLang's clients send that
 * change nothing here ({@code lora_path} empty, {@code return_logprob} false, {@code rid}, ...) are accepted. Stateless.
 */
final class SglangApi {
    /** SGLang's default {@code max_new_tokens}. */
    static final int DEFAULT_MAX_NEW_TOKENS = 128;

    private SglangApi() {
    }

    static Call parse(ObjectNode body, Engine engine) {
        JsonNode text = body.get("text");
        JsonNode ids = body.get("input_ids");
        boolean hasText = text != null && !text.isNull();
        boolean hasIds = ids != null && !ids.isNull();
        if (hasText == hasIds) {
            throw ApiException.bad(hasText ? "input_ids" : "text", "give exactly one of text and input_ids");
        }
        int[] prompt;
        if (hasText) {
            if (text.isArray()) {
                throw ApiException.bad("text", "batched requests (text as a list) are not supported; send one text");
            }
            if (!text.isTextual()) {
                throw ApiException.bad("text", "text must be a string, got " + Json.kind(text));
            }
            prompt = ByteTokenizer.encode(text.textValue());
        } else {
            if (!ids.isArray()) {
                throw ApiException.bad("input_ids", "input_ids must be a list of integer token ids, got " + Json.kind(ids));
            }
            if (ids.size() > 0 && ids.get(0).isArray()) {
                throw ApiException.bad("input_ids", "batched requests (input_ids as a list of lists) are not supported");
            }
            prompt = Json.tokenIds(ids, "input_ids", engine.model().vocab());
        }
        if (Boolean.TRUE.equals(Json.optBool(body, "return_logprob", "return_logprob"))) {
            throw ApiException.bad("return_logprob", "return_logprob is not supported by this server");
        }
        JsonNode sp = Json.optObject(body, "sampling_params", "sampling_params");
        if (sp == null) {
            sp = Json.object();
        }
        Integer max = Json.optInt(sp, "max_new_tokens", "sampling_params.max_new_tokens");
        int maxNew = max == null ? DEFAULT_MAX_NEW_TOKENS : max;
        if (maxNew <= 0) {
            throw ApiException.bad("max_new_tokens", "sampling_params.max_new_tokens must be at least 1, got " + maxNew);
        }
        Integer n = Json.optInt(sp, "n", "sampling_params.n");
        if (n != null && n != 1) {
            throw ApiException.bad("n", "sampling_params.n must be 1 (one sequence per request), got " + n);
        }
        Double temperature = Json.optNumber(sp, "temperature", "sampling_params.temperature");
        Double topP = Json.optNumber(sp, "top_p", "sampling_params.top_p");
        Integer topK = Json.optInt(sp, "top_k", "sampling_params.top_k");
        Boolean ignoreEos = Json.optBool(sp, "ignore_eos", "sampling_params.ignore_eos");
        List<String> stop = Json.optStrings(sp, "stop", "sampling_params.stop");
        Integer seed = Json.optInt(sp, "sampling_seed", "sampling_params.sampling_seed");
        Boolean stream = Json.optBool(body, "stream", "stream");
        SamplingParams params = Params.of(maxNew, temperature == null ? 1.0 : temperature, topP == null ? 1.0 : topP,
            topK == null ? -1 : topK, ignoreEos != null && ignoreEos, stop, seed == null ? null : seed.longValue());
        Params.check(engine, prompt.length, maxNew);
        return new Call("generate", prompt, params, stream != null && stream, new Format());
    }

    /** SGLang's output shapes for one call. */
    static final class Format implements Call.Format {
        private final String id = Ids.next("");

        @Override
        public List<String> text(String delta, String all, int completionTokens) {
            ObjectNode o = Json.object();
            o.put("text", all);
            ObjectNode m = o.putObject("meta_info");
            m.put("id", id);
            m.putNull("finish_reason");
            m.put("completion_tokens", completionTokens);
            return List.of(Json.write(o));
        }

        @Override
        public List<String> finish(Finish f, String all) {
            return List.of(body(f, all));
        }

        @Override
        public String body(Finish f, String all) {
            ObjectNode o = Json.object();
            o.put("text", all);
            ObjectNode m = o.putObject("meta_info");
            m.put("id", id);
            ObjectNode fr = m.putObject("finish_reason");
            fr.put("type", f.reason());
            if (f.matchedStop() != null) {
                fr.put("matched", f.matchedStop());
            } else {
                fr.put("length", f.completionTokens());
            }
            m.put("prompt_tokens", f.promptTokens());
            m.put("completion_tokens", f.completionTokens());
            m.put("cached_tokens", f.cached().total());
            ObjectNode d = m.putObject("cached_tokens_details");
            d.put("device", f.cached().device());
            d.put("host", f.cached().host());
            d.put("storage", f.cached().storage());
            m.put("e2e_latency", f.timing().e2eNs() / 1e9);
            timing(m.putObject("hicache_timing"), f.timing());
            return Json.write(o);
        }
    }

    static void timing(ObjectNode t, Finish.Timing x) {
        t.put("queue_ms", ms(x.queueNs()));
        t.put("prefix_wait_ms", ms(x.prefixWaitNs()));
        t.put("load_wait_ms", ms(x.loadWaitNs()));
        t.put("prefill_ms", ms(x.prefillNs()));
        t.put("other_steps_ms", ms(x.otherStepsNs()));
        t.put("ttft_ms", ms(x.ttftNs()));
    }

    private static double ms(long ns) {
        return Double.parseDouble(String.format(Locale.ROOT, "%.3f", ns / 1e6));
    }
}
