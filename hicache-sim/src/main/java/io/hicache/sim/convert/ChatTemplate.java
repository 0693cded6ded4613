package io.hicache.sim.convert;

import org.agrona.collections.IntArrayList;

/**
 * How {@code convert --from openai-chat} turns a chat into tokens: ChatML, each piece encoded on its own.
 * A message is {@code <|im_start|>} ‖ {@code role + "\n"} ‖ content ‖ {@code <|im_end|>} ‖ {@code "\n"}; the prompt is
 * its messages followed by {@code <|im_start|>} ‖ {@code "assistant\n"}; the answer is the completion followed by
 * {@code <|im_end|>} (the end-of-turn token the model generates). So the next turn of the conversation, which repeats
 * the answer as an assistant message, starts with this turn's prompt and answer token for token, as the model's own
 * template does for it. The markers are a tokenizer's special tokens when its file has them (Qwen's do) and text
 * otherwise: lengths are close to, not exactly, what a model's own template gives. Owned by one thread.
 */
public final class ChatTemplate {
    /** Start of a message. */
    public static final String START = "<|im_start|>";
    /** End of a message. */
    public static final String END = "<|im_end|>";

    private final Tokenizer tokenizer;

    /** A template over {@code tokenizer}. */
    public ChatTemplate(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /** Appends one message. */
    public void message(String role, String content, IntArrayList out) {
        tokenizer.encode(START, out);
        tokenizer.encode(role + "\n", out);
        tokenizer.encode(content, out);
        tokenizer.encode(END, out);
        tokenizer.encode("\n", out);
    }

    /** Appends the start of the assistant's answer, which ends a prompt. */
    public void generationPrompt(IntArrayList out) {
        tokenizer.encode(START, out);
        tokenizer.encode("assistant\n", out);
    }

    /** Appends the answer: the completion and the end of its message. */
    public void answer(String completion, IntArrayList out) {
        tokenizer.encode(completion, out);
        tokenizer.encode(END, out);
    }
}
