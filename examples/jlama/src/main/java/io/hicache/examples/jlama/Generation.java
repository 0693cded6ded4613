package io.hicache.examples.jlama;

/**
 * One request's result: the greedy tokens, the raw logits of every generated step, and how the prompt was
 * served. Arrays are owned by the record's creator and not copied.
 *
 * @param tokens          the generated tokens
 * @param logits          {@code logits[step]} over the vocabulary, for each generated token
 * @param ttftNs          from the request's arrival to its first token
 * @param restoredTokens  prompt tokens whose KV came from the cache (device or loaded back from host)
 * @param prefilledTokens prompt tokens the model computed
 */
public record Generation(int[] tokens, float[][] logits, long ttftNs, int restoredTokens, int prefilledTokens) {

    /** Largest absolute difference between this run's logits and {@code other}'s, over every step. */
    public double maxAbsLogitDiff(Generation other) {
        if (other.logits.length != logits.length) {
            throw new IllegalArgumentException("step counts differ: " + logits.length + " vs " + other.logits.length);
        }
        double max = 0;
        for (int s = 0; s < logits.length; s++) {
            float[] a = logits[s];
            float[] b = other.logits[s];
            for (int i = 0; i < a.length; i++) {
                double d = Math.abs((double) a[i] - b[i]);
                if (!(d <= max)) { // NaN counts as a difference
                    max = Double.isNaN(d) ? Double.POSITIVE_INFINITY : d;
                }
            }
        }
        return max;
    }

    /** Greedy decoding on a fresh KV buffer, no cache: the reference a restored run must equal. */
    public static Generation recompute(HookedLlamaModel model, int[] prompt, int newTokens) {
        long t0 = System.nanoTime();
        var kv = model.newKvBuffer();
        try {
            return decodeFrom(model, model.prefill(prompt, 0, kv, null), prompt.length, kv, newTokens, t0, 0,
                prompt.length);
        } finally {
            kv.close();
        }
    }

    /** Samples the first token from the prefill's last output {@code last} (closed here), then decodes. */
    static Generation decodeFrom(HookedLlamaModel model, com.github.tjake.jlama.tensor.AbstractTensor last,
                                 int promptTokens, com.github.tjake.jlama.tensor.KvBufferCache.KvBuffer kv,
                                 int newTokens, long t0Ns, int restored, int prefilled) {
        int vocab = model.getConfig().vocabularySize;
        int[] tokens = new int[newTokens];
        float[][] logits = new float[newTokens][vocab];
        int next;
        try (last) {
            next = model.greedy(last, logits[0]);
        }
        long ttftNs = System.nanoTime() - t0Ns;
        tokens[0] = next;
        for (int s = 1; s < newTokens; s++) {
            try (var out = model.decode(next, promptTokens + s - 1, kv)) {
                next = model.greedy(out, logits[s]);
            }
            tokens[s] = next;
        }
        return new Generation(tokens, logits, ttftNs, restored, prefilled);
    }
}
