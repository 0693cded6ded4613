package io.hicache.sim.convert;

import org.agrona.collections.IntArrayList;

/**
 * Turns text into token ids for {@code convert --from openai-chat}: a model's tokenizer file
 * ({@link BpeTokenizer}) or, only when asked for, whitespace-separated words ({@link WhitespaceTokenizer}). Each piece
 * of a chat is encoded on its own ({@link ChatTemplate}), so a conversation's token sequence only grows from turn to
 * turn. Owned by one thread.
 */
public interface Tokenizer {

    /** Appends the token ids of {@code text} to {@code out}. */
    void encode(String text, IntArrayList out);

    /** What the ids are, for the converter's report (e.g. "tokenizer.json: byte-level BPE, 128,256 tokens"). */
    String label();

    /** Whether the counts only approximate a model's (the whitespace fallback); such records are labelled. */
    boolean approximate();
}
