package io.hicache.serve.model;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Picks the next token from the logits among the printable ids only ({@link ByteTokenizer#isPrintable}), so every
 * generated sequence decodes to printable text and encodes back to itself. Temperature 0 (or top-k 1) is greedy, the
 * lowest id winning a tie; otherwise softmax at the temperature over the top-k, cut to the top-p mass, drawn from the
 * request's own random stream. One instance per engine; engine thread only (it reuses scratch arrays).
 */
public final class Sampler {
    private static final int[] CANDIDATES = ByteTokenizer.printableIds();
    private final double[] weights = new double[CANDIDATES.length];
    private final Integer[] order = new Integer[CANDIDATES.length];

    /** The next token. {@code rng} may be null when the draw is greedy. */
    public int next(float[] logits, double temperature, double topP, int topK, SplittableRandom rng) {
        if (temperature <= 0 || topK == 1) {
            int best = CANDIDATES[0];
            float bestLogit = logits[best];
            for (int id : CANDIDATES) {
                if (logits[id] > bestLogit) { // strict: the lowest id wins a tie
                    best = id;
                    bestLogit = logits[id];
                }
            }
            return best;
        }
        int n = CANDIDATES.length;
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> {
            int c = Float.compare(logits[CANDIDATES[b]], logits[CANDIDATES[a]]);
            return c != 0 ? c : Integer.compare(a, b);
        });
        int k = topK <= 0 ? n : Math.min(topK, n);
        double max = logits[CANDIDATES[order[0]]];
        double sum = 0;
        for (int i = 0; i < k; i++) {
            weights[i] = Math.exp((logits[CANDIDATES[order[i]]] - max) / temperature);
            sum += weights[i];
        }
        if (topP < 1.0) {
            double kept = 0;
            int cut = 0;
            while (cut < k) {
                kept += weights[cut] / sum;
                cut++;
                if (kept >= topP) {
                    break;
                }
            }
            k = cut;
            sum = 0;
            for (int i = 0; i < k; i++) {
                sum += weights[i];
            }
        }
        double u = rng.nextDouble() * sum;
        for (int i = 0; i < k; i++) {
            u -= weights[i];
            if (u < 0) {
                return CANDIDATES[order[i]];
            }
        }
        return CANDIDATES[order[k - 1]];
    }
}
