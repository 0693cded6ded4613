package io.hicache.serve.model;

import static org.assertj.core.api.Assertions.assertThat;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.util.Arrays;
import java.util.List;

class ByteTokenizerTest {

    @Property(tries = 300)
    void encodingIsPrefixStableForAnyText(@ForAll String history, @ForAll String answer, @ForAll String question) {
        int[] before = ByteTokenizer.encode(history + answer);
        int[] after = ByteTokenizer.encode(history + answer + question);
        assertThat(Arrays.copyOf(after, before.length)).isEqualTo(before);
    }

    @Property(tries = 300)
    void everyPrintableSequenceRoundTrips(@ForAll("printable") int[] ids) {
        assertThat(ByteTokenizer.encode(ByteTokenizer.decode(ids, 0, ids.length))).isEqualTo(ids);
    }

    @Provide
    Arbitrary<int[]> printable() {
        int[] p = ByteTokenizer.printableIds();
        return Arbitraries.integers().between(0, p.length - 1).map(i -> p[i]).list().ofMaxSize(200)
            .map(l -> l.stream().mapToInt(Integer::intValue).toArray());
    }

    @Property(tries = 200)
    void textRoundTripsThroughBytes(@ForAll String text) {
        int[] ids = ByteTokenizer.encode(text);
        String back = ByteTokenizer.decode(ids, 0, ids.length);
        // unpaired surrogates have no UTF-8 form and become '?'; everything else comes back as it was
        if (text.codePoints().noneMatch(c -> c >= 0xD800 && c <= 0xDFFF)) {
            assertThat(back).isEqualTo(text);
        }
    }

    @Property(tries = 100)
    void printableIdsAreExactlyTheSampledOnes(@ForAll("anyId") int id) {
        boolean printable = ByteTokenizer.isPrintable(id);
        assertThat(printable).isEqualTo(id >= 3 + 0x20 && id <= 3 + 0x7E);
        if (printable) {
            assertThat(ByteTokenizer.decode(new int[] {id}, 0, 1)).hasSize(1);
        }
    }

    @Provide
    Arbitrary<Integer> anyId() {
        return Arbitraries.integers().between(0, 1023);
    }

    @net.jqwik.api.Example
    void specialAndForeignIdsDecodeAsDocumented() {
        int[] ids = {ByteTokenizer.BOS, 3 + 'h', 3 + 'i', ByteTokenizer.EOS, 400};
        assertThat(ByteTokenizer.decode(ids, 0, ids.length)).isEqualTo("hi\uFFFD");
        assertThat(ByteTokenizer.encode("é")).containsExactly(3 + 0xC3, 3 + 0xA9);
        assertThat(ChatTemplate.render(List.of(new ChatTemplate.Message("user", "x"))))
            .isEqualTo("<|user|>\nx<|end|>\n<|assistant|>\n");
    }
}
