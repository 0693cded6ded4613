package io.hicache.sim.convert;

import org.agrona.collections.IntArrayList;

import java.util.HashMap;
import java.util.Map;

/**
 * The fallback of {@code --whitespace-tokens}: a token is a run of non-whitespace characters, numbered in the order
 * the converter first meets it (so equal words are equal ids, and a shared text prefix is a shared id prefix). Word
 * counts are not a model's token counts (a BPE tokenizer gives roughly 1.3 tokens per English word, more for code),
 * so records converted this way carry {@code "tokens": "whitespace"} and a replay says so. Owned by one thread.
 */
public final class WhitespaceTokenizer implements Tokenizer {
    private final Map<String, Integer> ids = new HashMap<>();

    /** A tokenizer that has met no word yet. */
    public WhitespaceTokenizer() {
    }

    @Override
    public void encode(String text, IntArrayList out) {
        int n = text.length();
        int i = 0;
        while (i < n) {
            while (i < n && Character.isWhitespace(text.charAt(i))) {
                i++;
            }
            int start = i;
            while (i < n && !Character.isWhitespace(text.charAt(i))) {
                i++;
            }
            if (i > start) {
                String word = text.substring(start, i);
                Integer id = ids.get(word);
                if (id == null) {
                    id = ids.size();
                    ids.put(word, id);
                }
                out.addInt(id);
            }
        }
    }

    @Override
    public String label() {
        return "whitespace-separated words (--whitespace-tokens; an approximation, not a model's tokens)";
    }

    @Override
    public boolean approximate() {
        return true;
    }
}
