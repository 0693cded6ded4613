package io.hicache.serve.http;

import io.hicache.serve.engine.Finish;
import io.hicache.serve.engine.SamplingParams;

import java.util.List;

/**
 * One validated API call: the prompt's token ids, how to sample, whether to stream, and the API's {@link Format} that
 * turns the engine's output into that API's JSON. Immutable (the format keeps per-call ids only).
 */
record Call(String api, int[] prompt, SamplingParams params, boolean stream, Format format) {

    /** One API's response shapes for one call. Called on the connection's event loop. */
    interface Format {
        /** SSE payloads sent when the stream opens (none by default). */
        default List<String> open() {
            return List.of();
        }

        /** SSE payloads for new text {@code delta} ({@code all}: the text so far). */
        List<String> text(String delta, String all, int completionTokens);

        /** SSE payloads when the request ends, before {@code [DONE]}. */
        List<String> finish(Finish f, String all);

        /** The whole response of a call that does not stream. */
        String body(Finish f, String all);
    }
}
