package io.hicache.sim.convert;

import io.hicache.storage.PageKey;
import io.hicache.storage.PageKeys;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class BlockHasherTest {

    /** The ids number exactly the L3 page keys of the blocks (SGLang's keys, no namespace). */
    @Test
    void idsNumberTheL3PageKeysOfTheBlocks() {
        BlockHasher h = new BlockHasher(16);
        int[] a = new int[40];
        for (int i = 0; i < a.length; i++) {
            a[i] = i;
        }
        int[] ids = h.hashIds(a, a.length);
        assertThat(ids).containsExactly(0, 1, 2);
        PageKey[] keys = PageKeys.chain(null, a, 16);
        for (int i = 0; i < ids.length; i++) {
            assertThat(h.key(ids[i])).isEqualTo(keys[i]);
        }
        // SGLang's own hasher gives this key for tokens 0..15 at page size 16 (shared/l3 vectors, case one-page-16)
        assertThat(h.key(0).hex()).isEqualTo("5d85718ec594b982c252d0279e5966ffca33a5eaf2a455038d3ab331fde70cea");
        // a prompt sharing the first 20 tokens shares the first block only: block 1 differs (tokens 16..31 vs 16..19)
        int[] b = java.util.Arrays.copyOf(a, 20);
        assertThat(h.hashIds(b, b.length)).containsExactly(0, 3);
        // the same block content after a different first block is another block
        int[] c = a.clone();
        c[0] = 99;
        assertThat(h.hashIds(c, c.length)).containsExactly(4, 5, 6);
        assertThat(h.distinctBlocks()).isEqualTo(7);
    }

    @Property(tries = 200)
    void aStreamHashesAsTheWholeSequenceDoes(@ForAll @Size(max = 120) List<@IntRange(min = 0, max = 5) Integer> tokens,
                                             @ForAll @IntRange(min = 1, max = 9) int block) {
        BlockHasher h = new BlockHasher(block);
        BlockHasher.Stream s = h.stream();
        int[] all = tokens.stream().mapToInt(Integer::intValue).toArray();
        for (int i = 0; i < all.length; i++) {
            s.append(all[i]);
            assertThat(s.hashIds()).containsExactly(h.hashIds(all, i + 1));
        }
        assertThat(s.length()).isEqualTo(all.length);
    }

    /** Numbers are distinct exactly when keys are: two records share id k iff their first k+1 blocks are equal. */
    @Property(tries = 200)
    void sharedIdsMeanSharedPrefixes(@ForAll @Size(min = 1, max = 60) List<@IntRange(min = 0, max = 2) Integer> x,
                                     @ForAll @Size(min = 1, max = 60) List<@IntRange(min = 0, max = 2) Integer> y) {
        BlockHasher h = new BlockHasher(4);
        int[] a = x.stream().mapToInt(Integer::intValue).toArray();
        int[] b = y.stream().mapToInt(Integer::intValue).toArray();
        int[] ia = h.hashIds(a, a.length);
        int[] ib = h.hashIds(b, b.length);
        for (int k = 0; k < Math.min(ia.length, ib.length); k++) {
            int endA = Math.min(a.length, (k + 1) * 4);
            int endB = Math.min(b.length, (k + 1) * 4);
            boolean samePrefix = endA == endB && java.util.Arrays.equals(a, 0, endA, b, 0, endB);
            assertThat(ia[k] == ib[k]).as("block %d", k).isEqualTo(samePrefix);
            assertThat(ia[k]).isNotNegative();
        }
    }
}
