package io.hicache.sim.convert;

import org.agrona.collections.IntArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The tokenizer against a reference implementation: {@code mini-bpe.json} (a byte-level BPE file made for this test,
 * with the Llama 3 split regex, a few merges and two added tokens) encoded by Hugging Face's own Tokenizers.js
 * ({@code @huggingface/tokenizers} 0.2.0, {@code encode(text, {add_special_tokens: false}).ids}) gave the ids below.
 * The same comparison on the Llama 3, Qwen 3, DeepSeek V3 and GPT-4o tokenizer.json files (25 texts each: code,
 * CJK, emoji, accents, whitespace runs, numbers) found no difference; those files are too large to ship.
 */
class BpeTokenizerTest {

    @TempDir
    Path dir;

    static Path mini() {
        return Paths.get(System.getProperty("hicache.repo.root", "..")).toAbsolutePath()
                .resolve("hicache-sim/src/test/resources/tokenizers/mini-bpe.json");
    }

    private static List<Integer> encode(Tokenizer t, String text) {
        IntArrayList out = new IntArrayList();
        t.encode(text, out);
        return List.copyOf(out);
    }

    @Test
    void encodesAsTheReferenceImplementationDoes() throws IOException {
        BpeTokenizer t = BpeTokenizer.load(mini());
        assertThat(encode(t, "Hello the world")).containsExactly(270, 258, 267);
        assertThat(encode(t, "the the  the\n\nthe")).containsExactly(116, 256, 258, 32, 258, 274, 116, 256);
        assertThat(encode(t, "<|im_start|>user\nHello<|im_end|>\n")).containsExactly(275, 117, 115, 261, 10, 270, 276, 10);
        assertThat(encode(t, "12345 123 1")).containsExactly(273, 52, 53, 32, 273, 32, 49);
        assertThat(encode(t, "don't WORLD Hello, héllo 中文 😀")).containsExactly(100, 111, 110, 39, 116, 32, 87, 79, 82,
                76, 68, 32, 270, 44, 32, 104, 195, 169, 259, 111, 32, 228, 184, 173, 230, 150, 135, 32, 240, 159, 152, 128);
        assertThat(encode(t, "")).isEmpty();
        assertThat(encode(t, "   ")).containsExactly(32, 32, 32);
        assertThat(t.approximate()).isFalse();
        assertThat(t.label()).contains("byte-level BPE");
    }

    @Test
    void filesItCannotEncodeAsTheModelDoesAreRefusedByName() throws IOException {
        Path wordPiece = dir.resolve("wp.json");
        Files.writeString(wordPiece, "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"a\": 0}}}");
        assertThatThrownBy(() -> BpeTokenizer.load(wordPiece)).hasMessageContaining("model type 'WordPiece' is not"
                + " supported").hasMessageContaining("--whitespace-tokens");
        Path metaspace = dir.resolve("sp.json");
        Files.writeString(metaspace, "{\"pre_tokenizer\": {\"type\": \"Metaspace\"}, \"model\": {\"type\": \"BPE\","
                + " \"vocab\": {\"a\": 0}, \"merges\": []}}");
        assertThatThrownBy(() -> BpeTokenizer.load(metaspace)).hasMessageContaining("pre_tokenizer 'Metaspace' is not"
                + " supported");
    }

    /** Each piece is encoded on its own, so a conversation's next turn starts with this turn's prompt and answer. */
    @Test
    void theChatTemplateMakesTheNextTurnExtendThisOne() throws IOException {
        for (Tokenizer t : new Tokenizer[] {BpeTokenizer.load(mini()), new WhitespaceTokenizer()}) {
            ChatTemplate chat = new ChatTemplate(t);
            IntArrayList turn1 = new IntArrayList();
            chat.message("user", "Hello the world", turn1);
            chat.generationPrompt(turn1);
            chat.answer("the answer is 42", turn1);
            IntArrayList turn2 = new IntArrayList();
            chat.message("user", "Hello the world", turn2);
            chat.message("assistant", "the answer is 42", turn2);
            chat.message("user", "and then?", turn2);
            chat.generationPrompt(turn2);
            assertThat(turn2.subList(0, turn1.size())).isEqualTo(turn1);
            assertThat(turn2.size()).isGreaterThan(turn1.size());
        }
    }
}
