package io.hicache.sim.trace;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TokenExpanderTest {

    private static Request req(int inputLength, int blockSize, int... ids) {
        return new Request(0, 0, 0, inputLength, 1, ids, blockSize);
    }

    @Test
    void fullBlockSizeTruncatesTheLastBlockToTheInputLength() {
        TokenExpander e = new TokenExpander(512);
        int[] t = e.expand(req(1000, 512, 7, 9));
        assertThat(t).hasSize(1000);
        assertThat(t[0]).isEqualTo(0);
        assertThat(t[511]).isEqualTo(511);
        assertThat(t[512]).isEqualTo(512);
        assertThat(t[999]).isEqualTo(512 + 487);
    }

    @Test
    void anAnswerCoveredByTheIdsIsWhatTheNextTurnRepeats() {
        TokenExpander e = new TokenExpander(512);
        // turn 1: 600 prompt tokens and a 500-token answer span blocks 7, 9, 11
        Request turn1 = new Request(0, 0, 0, 600, 500, new int[] {7, 9, 11}, 512);
        // turn 2: the history (1,100 tokens) and a 200-token question: the same three blocks
        Request turn2 = new Request(1, 1, 0, 1300, 10, new int[] {7, 9, 11}, 512);
        Request mooncake = new Request(2, 2, 0, 600, 500, new int[] {7, 9}, 512);
        assertThat(turn1.coversAnswer()).isTrue();
        assertThat(turn1.blockCount()).isEqualTo(2);
        assertThat(mooncake.coversAnswer()).isFalse();
        assertThat(e.tokenCount(turn1)).isEqualTo(600);
        assertThat(e.conversationTokenCount(turn1)).isEqualTo(1100);
        assertThat(e.conversationTokenCount(mooncake)).isEqualTo(600);
        int[] conversation = new int[1100];
        assertThat(e.expandConversationInto(turn1, conversation)).isEqualTo(1100);
        assertThat(Arrays.copyOf(e.expand(turn2), 1100)).isEqualTo(conversation);
        int[] keys = e.conversationPageKeys(turn1, 64);
        assertThat(keys).hasSize(1100 / 64);
        assertThat(Arrays.copyOf(e.pageKeys(turn2, 64), keys.length)).isEqualTo(keys);
        assertThat(e.pageKeys(turn1, 64)).isEqualTo(Arrays.copyOf(keys, 600 / 64));
    }

    @Test
    void pageKeysAreTheFirstTokenOfEachWholePageOverThePageSize() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(11);
        for (int pageSize : new int[] {1, 16, 64, 512}) {
            TokenExpander viaTokens = new TokenExpander(512);
            TokenExpander viaKeys = new TokenExpander(512);
            for (int n = 0; n < 200; n++) {
                int blocks = 1 + rnd.nextInt(6);
                int[] ids = new int[blocks];
                for (int b = 0; b < blocks; b++) {
                    ids[b] = rnd.nextInt(12);
                }
                Request r = req((blocks - 1) * 512 + 1 + rnd.nextInt(512), 512, ids);
                int[] t = viaTokens.expand(r);
                int[] expected = new int[t.length / pageSize];
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = t[i * pageSize] / pageSize;
                }
                assertThat(viaKeys.pageKeys(r, pageSize)).as("page size %d", pageSize).containsExactly(expected);
            }
        }
    }

    @Test
    void oneTokenPerBlockIsTheBlockLevelView() {
        TokenExpander e = new TokenExpander(1);
        assertThat(e.expand(req(1000, 512, 70, 90))).containsExactly(0, 1);
        assertThat(e.expand(req(513, 512, 70, 5))).containsExactly(0, 2);
        assertThat(e.distinctBlocks()).isEqualTo(3);
    }

    @Test
    void sharedPrefixesGiveIdenticalTokensAndDifferentBlocksNever() {
        TokenExpander e = new TokenExpander(16);
        int[] a = e.expand(req(48, 16, 1, 2, 3));
        int[] b = e.expand(req(40, 16, 1, 2, 4));
        assertThat(Arrays.copyOf(b, 32)).isEqualTo(Arrays.copyOf(a, 32));
        Set<Integer> tail = new HashSet<>();
        for (int i = 32; i < 48; i++) {
            tail.add(a[i]);
        }
        for (int i = 32; i < 40; i++) {
            assertThat(tail).doesNotContain(b[i]);
        }
    }

    @Test
    void hugeHashIdsStayInIntRangeThanksToDenseRemapping() {
        TokenExpander e = new TokenExpander(512);
        int[] t = e.expand(req(1024, 512, Integer.MAX_VALUE, Integer.MAX_VALUE - 1));
        assertThat(t).hasSize(1024);
        assertThat(java.util.Arrays.stream(t).min().orElseThrow()).isGreaterThanOrEqualTo(0);
    }

    @Test
    void overflowOfTheTokenSpaceIsAnErrorNamingTheCause() {
        TokenExpander e = new TokenExpander(1 << 30);
        e.expand(req(1, 1 << 30, 5));
        e.expand(req(1, 1 << 30, 6)); // tokens up to Integer.MAX_VALUE still fit
        assertThatThrownBy(() -> e.expand(req(1, 1 << 30, 7)))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("token ids overflow");
        assertThatThrownBy(() -> new TokenExpander(0)).hasMessageContaining("block tokens must be >= 1, got 0");
    }

    @Test
    void expandIntoReusesTheCallersBuffer() {
        TokenExpander e = new TokenExpander(4);
        int[] buf = new int[16];
        int n = e.expandInto(req(24, 16, 3, 4), buf);
        assertThat(n).isEqualTo(6);
        assertThat(Arrays.copyOf(buf, n)).containsExactly(0, 1, 2, 3, 4, 5);
        assertThatThrownBy(() -> e.expandInto(req(64, 16, 1, 2, 3, 4), new int[3]))
                .hasMessageContaining("token buffer holds 3 tokens");
    }

    @Property
    void tokenCountIsTheScaledInputLength(@ForAll @IntRange(min = 0, max = 5000) int inputLength,
                                          @ForAll @IntRange(min = 1, max = 600) int blockTokens) {
        int blocks = (inputLength + 511) / 512;
        int[] ids = new int[blocks];
        for (int i = 0; i < blocks; i++) {
            ids[i] = i * 3;
        }
        TokenExpander e = new TokenExpander(blockTokens);
        int[] t = e.expand(req(inputLength, 512, ids));
        long expected = Math.min(((long) inputLength * blockTokens + 511) / 512, (long) blocks * blockTokens);
        assertThat(t).hasSize((int) expected);
        assertThat(Arrays.stream(t).distinct().count()).isEqualTo(t.length);
    }
}
