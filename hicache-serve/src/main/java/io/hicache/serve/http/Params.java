package io.hicache.serve.http;

import io.hicache.serve.engine.Engine;
import io.hicache.serve.engine.SamplingParams;

import java.util.List;

/** Sampling fields both APIs share, checked into {@link SamplingParams} with one-line 400s. Stateless. */
final class Params {
    private Params() {
    }

    static SamplingParams of(int maxNew, double temperature, double topP, int topK, boolean ignoreEos, List<String> stop,
                             Long seed) {
        try {
            return new SamplingParams(maxNew, temperature, topP, topK, ignoreEos, stop, seed);
        } catch (IllegalArgumentException e) {
            throw ApiException.bad(null, e.getMessage());
        }
    }

    /** The prompt and its new tokens fit the context and the device pool, or 400 saying why not. */
    static void check(Engine engine, int promptTokens, int maxNew) {
        String why = engine.checkRequest(promptTokens, maxNew);
        if (why != null) {
            throw ApiException.bad(promptTokens < 1 ? "prompt" : "max_tokens", why);
        }
    }
}
