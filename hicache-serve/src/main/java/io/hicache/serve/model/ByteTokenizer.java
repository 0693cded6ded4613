package io.hicache.serve.model;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The engine's tokenizer: one token per UTF-8 byte. Id {@value #PAD} is padding, {@value #BOS} beginning of sequence,
 * {@value #EOS} end of sequence, and byte {@code b} is id {@code 3 + b}; ids from {@value #MIN_VOCAB} up to the
 * model's vocabulary are reachable only as {@code input_ids} (a trace replay's token ids) and decode to U+FFFD.
 *
 * <p>Why bytes: the encoding of a concatenation is the concatenation of the encodings, so every prompt that extends an
 * earlier one (a multi-turn client appending the answer and its next question) begins with the earlier prompt's
 * tokens, and the cache finds its prefix whatever the text; and the sampler emits only printable ASCII
 * ({@link #isPrintable}), so {@code encode(decode(ids)) == ids} for every generated sequence. docs/SERVING.md says what
 * a real BPE tokenizer changes at turn boundaries. Stateless; thread-safe.
 */
public final class ByteTokenizer {
    /** Padding. */
    public static final int PAD = 0;
    /** Beginning of sequence (never added: prompts are used as given). */
    public static final int BOS = 1;
    /** End of sequence (the sampler never emits it: generation ends at a length or a stop string). */
    public static final int EOS = 2;
    /** Id of byte 0. */
    public static final int FIRST_BYTE = 3;
    /** The smallest vocabulary that holds every byte. */
    public static final int MIN_VOCAB = FIRST_BYTE + 256;
    /** First and last printable character the sampler may emit (space to tilde). */
    private static final int FIRST_PRINTABLE = 0x20;
    private static final int LAST_PRINTABLE = 0x7E;

    private ByteTokenizer() {
    }

    /** The token ids of {@code text}'s UTF-8 bytes. */
    public static int[] encode(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        int[] ids = new int[b.length];
        for (int i = 0; i < b.length; i++) {
            ids[i] = FIRST_BYTE + (b[i] & 0xFF);
        }
        return ids;
    }


    /**
     * Decodes {@code ids[from, to)}: byte ids to their UTF-8 text (malformed sequences become U+FFFD), special ids to
     * nothing, ids beyond the bytes to U+FFFD.
     */
    public static String decode(int[] ids, int from, int to) {
        ByteBuffer bytes = ByteBuffer.allocate(Math.max(0, to - from));
        StringBuilder out = new StringBuilder(to - from);
        for (int i = from; i < to; i++) {
            int id = ids[i];
            if (id >= FIRST_BYTE && id < MIN_VOCAB) {
                bytes.put((byte) (id - FIRST_BYTE));
            } else {
                flush(bytes, out);
                if (id >= MIN_VOCAB || id < 0) {
                    out.append('\uFFFD');
                }
            }
        }
        flush(bytes, out);
        return out.toString();
    }

    private static void flush(ByteBuffer bytes, StringBuilder out) {
        if (bytes.position() == 0) {
            return;
        }
        bytes.flip();
        CharsetDecoder d = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPLACE)
            .onUnmappableCharacter(CodingErrorAction.REPLACE);
        try {
            CharBuffer c = d.decode(bytes);
            out.append(c);
        } catch (CharacterCodingException e) {
            throw new IllegalStateException("a replacing decoder threw", e);
        }
        bytes.clear();
    }

    /** True for the ids the sampler may emit: printable ASCII, space to tilde. */
    public static boolean isPrintable(int id) {
        return id >= FIRST_BYTE + FIRST_PRINTABLE && id <= FIRST_BYTE + LAST_PRINTABLE;
    }

    /** The printable ids, ascending. */
    public static int[] printableIds() {
        int[] ids = new int[LAST_PRINTABLE - FIRST_PRINTABLE + 1];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = FIRST_BYTE + FIRST_PRINTABLE + i;
        }
        return ids;
    }

    /** The character of printable id {@code id}. */
    public static char charOf(int id) {
        if (!isPrintable(id)) {
            throw new IllegalArgumentException("id " + id + " is not a printable character");
        }
        return (char) (id - FIRST_BYTE);
    }
}
