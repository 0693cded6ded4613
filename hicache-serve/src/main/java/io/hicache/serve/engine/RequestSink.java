package io.hicache.serve.engine;

/**
 * Where the engine delivers one request's output. Called on the engine thread, in order: {@link #onText} any number
 * of times, then exactly one of {@link #onFinish} or {@link #onError} (never both, never after one of them). An
 * implementation must not block or call back into the engine: the HTTP layer hands each call to the connection's own
 * event loop, whose handler drains the request's queue (docs/SERVING.md, "Threads").
 */
public interface RequestSink {
    /**
     * New text that can be shown: {@code delta} extends what was sent before; {@code completionTokens} tokens were
     * generated so far (text held back because it could begin a stop string is sent later).
     */
    void onText(String delta, int completionTokens);

    /** The request ended with a result (also when it was cut short by a stop string or the length limit). */
    void onFinish(Finish finish);

    /** The request ended without a result: {@code status} is the HTTP status to report (503 at shutdown). */
    void onError(int status, String message);
}
