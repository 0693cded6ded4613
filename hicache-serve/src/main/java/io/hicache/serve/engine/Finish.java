package io.hicache.serve.engine;

/**
 * How a request ended and what it cost, read by both APIs to fill their usage objects. Immutable.
 *
 * @param reason           {@code "length"} (max tokens reached) or {@code "stop"} (a stop string)
 * @param matchedStop      the stop string found, or null
 * @param promptTokens     tokens of the prompt
 * @param completionTokens tokens generated (those of a matched stop string included)
 * @param cached           prompt tokens served from the cache, by tier
 * @param timing           where the time to first token went
 */
public record Finish(String reason, String matchedStop, int promptTokens, int completionTokens, CachedTokens cached,
                     Timing timing) {

    /**
     * Prompt tokens that were not computed because their KV came from a tier, split by where it came from: the
     * device pool, the host tier (loaded back), or L3 (prefetched into the host tier, then loaded back). This is the
     * one place the engine derives a request's {@code cached_tokens}; see {@link Engine} for how.
     */
    public record CachedTokens(int device, int host, int storage) {
        /** No prefix reused. */
        public static final CachedTokens NONE = new CachedTokens(0, 0, 0);

        /** All of them ({@code cached_tokens} in both APIs' usage). */
        public int total() {
            return device + host + storage;
        }
    }

    /**
     * Nanoseconds of a request's life up to its first token, and its end-to-end time.
     *
     * @param queueNs      arrival until admitted (a device page reservation succeeded)
     * @param prefixWaitNs admitted until its prefix was usable: an L3 prefetch, and with {@code previous_batch} loads
     *                     the load itself
     * @param loadWaitNs   time the prefill spent waiting for loaded layers (same-forward loads)
     * @param prefillNs    the request's own prefill forwards (waits for loaded layers included)
     * @param otherStepsNs time between its prefill chunks spent on other requests' steps
     * @param ttftNs       arrival until the first token was sampled
     * @param e2eNs        arrival until the last token
     */
    public record Timing(long queueNs, long prefixWaitNs, long loadWaitNs, long prefillNs, long otherStepsNs, long ttftNs,
                         long e2eNs) {
    }
}
