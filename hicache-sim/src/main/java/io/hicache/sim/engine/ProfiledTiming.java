package io.hicache.sim.engine;

import io.hicache.sim.model.EngineProfile;

/**
 * The step costs of the profiled engine ({@code --engine-profile}), which mirror hicache-serve's {@code Engine.step()}:
 * a step runs one prefill chunk of the oldest request still prefilling, then one decode token of every decoding
 * request, each a forward of one sequence; a forward costs {@link EngineProfile#forwardMs} of its new tokens and the
 * context already in its KV, plus {@link EngineProfile#logitsMs} when it emits a token (the prefill's last chunk, every
 * decode); every prefill chunk costs {@link EngineProfile#prefillServiceFactor} times its grid figure, and a chunk in a
 * step where another request decodes {@link EngineProfile#prefillBusyFactor} times more; the step adds
 * {@link EngineProfile#stepOverheadMs}. Per request, {@link EngineProfile#requestOverheadMs} is
 * added to the times the client sees (first token, end), not to the engine's clock: it is spent in the HTTP layer.
 * Immutable; used by the replay's threads.
 */
final class ProfiledTiming {
    /** Load batches in flight per rank in the serving engine ({@code loadBatchesInFlight}). */
    static final int LOAD_RING = 16;

    private final EngineProfile profile;
    private final long logitsNs;
    final long stepOverheadNs;
    final long requestOverheadNs;

    ProfiledTiming(EngineProfile profile) {
        this.profile = profile;
        this.logitsNs = ns(profile.logitsMs());
        this.stepOverheadNs = ns(profile.stepOverheadMs());
        this.requestOverheadNs = ns(profile.requestOverheadMs());
    }

    /**
     * A prefill chunk's forward: {@code fresh} tokens over {@code context}, times the profile's busy factor when
     * another request decodes in the same step ({@code busy}), times the profile's service factor; the logits when it
     * ends the prompt.
     */
    long prefillNs(long fresh, long context, boolean emits, boolean busy) {
        if (fresh <= 0) {
            return 0;
        }
        double ms = profile.forwardMs(fresh, context) * profile.prefillServiceFactor()
            * (busy ? profile.prefillBusyFactor() : 1);
        return ns(ms) + (emits ? logitsNs : 0);
    }

    /** One decode token over {@code context} tokens in the KV, with its logits. */
    long decodeNs(long context) {
        return ns(profile.forwardMs(1, context)) + logitsNs;
    }

    /** Copy launch latency of one layer's copy: the load's fixed cost spread over the layers it copies. */
    long copyLatencyNs() {
        return ns(profile.load().fixedMs() / profile.model().layers());
    }

    private static long ns(double ms) {
        return Math.round(ms * 1e6);
    }
}
