package io.hicache.serve.engine;

import java.util.List;

/**
 * How one request samples, after the protocol layer validated it: both APIs map their fields onto this. Immutable.
 *
 * @param maxNewTokens tokens to generate at most (>= 1)
 * @param temperature  0 for greedy decoding
 * @param topP         nucleus mass in (0, 1]
 * @param topK         0 or less for no top-k cut
 * @param ignoreEos    accepted for SGLang's clients; the sampler never emits EOS (generation ends at
 *                     {@code maxNewTokens} or a stop string), so it changes nothing
 * @param stop         strings that end generation; the text returned stops before the first one found
 * @param seed         the sampling stream's seed, or null for one the engine derives from its own seed and the request id
 */
public record SamplingParams(int maxNewTokens, double temperature, double topP, int topK, boolean ignoreEos,
                             List<String> stop, Long seed) {
    public SamplingParams {
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("max_new_tokens must be at least 1, got " + maxNewTokens);
        }
        if (!(temperature >= 0) || temperature > 100) {
            throw new IllegalArgumentException("temperature must be in [0, 100], got " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("top_p must be in (0, 1], got " + topP);
        }
        stop = stop == null ? List.of() : List.copyOf(stop);
        for (String s : stop) {
            if (s.isEmpty()) {
                throw new IllegalArgumentException("stop strings must not be empty");
            }
        }
    }

    /** Greedy decoding of {@code maxNewTokens} tokens. */
    public static SamplingParams greedy(int maxNewTokens) {
        return new SamplingParams(maxNewTokens, 0, 1, 0, false, List.of(), null);
    }

    /** The longest stop string (0 without any). */
    public int longestStop() {
        int m = 0;
        for (String s : stop) {
            m = Math.max(m, s.length());
        }
        return m;
    }
}
