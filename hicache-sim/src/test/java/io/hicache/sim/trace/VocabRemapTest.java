package io.hicache.sim.trace;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The client's prompts (the expander's tokens remapped into an engine vocabulary) have the block and page structure
 * of the simulator's: equal blocks equal ids, different blocks different ids, shared prefixes shared, and the same
 * page-aligned prefix hits on both sides.
 */
class VocabRemapTest {

    /**
     * Conversations of prefix-chained blocks: each turn repeats the history's blocks and adds new ones; a few
     * requests share only a system prompt. Block size 64, prompts not page-aligned.
     */
    private static List<Request> trace(long seed, int requests) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<Request> out = new ArrayList<>();
        List<int[]> histories = new ArrayList<>();
        int nextId = 1;
        for (int i = 0; i < requests; i++) {
            int[] ids;
            if (!histories.isEmpty() && rnd.nextInt(3) > 0) {
                int c = rnd.nextInt(histories.size());
                int[] h = histories.get(c);
                ids = Arrays.copyOf(h, h.length + 1 + rnd.nextInt(3));
                for (int k = h.length; k < ids.length; k++) {
                    ids[k] = nextId++;
                }
                histories.set(c, ids);
            } else {
                ids = new int[1 + rnd.nextInt(4)];
                ids[0] = rnd.nextInt(4) == 0 ? 0 : nextId++; // block 0: a system prompt many share
                for (int k = 1; k < ids.length; k++) {
                    ids[k] = nextId++;
                }
                histories.add(ids);
            }
            int input = (ids.length - 1) * 64 + 1 + rnd.nextInt(64);
            out.add(new Request(i, i, i, input, 8, ids, 64));
        }
        return out;
    }

    /** Page-aligned prefix hits of each request against the requests before it, on page contents (a trie). */
    private static <T> List<Integer> prefixHits(List<List<T>> pagesPerRequest) {
        Map<List<Object>, Integer> trie = new HashMap<>(); // (parent node, page) -> node
        List<Integer> hits = new ArrayList<>();
        for (List<T> pages : pagesPerRequest) {
            int node = 0;
            int hit = 0;
            boolean matching = true;
            for (T page : pages) {
                List<Object> edge = List.of(node, page);
                Integer child = trie.get(edge);
                if (child == null) {
                    matching = false;
                    child = trie.size() + 1;
                    trie.put(edge, child);
                }
                if (matching) {
                    hit++;
                }
                node = child;
            }
            hits.add(hit);
        }
        return hits;
    }

    private static List<List<Integer>> pagesOf(int[] tokens, int pageSize) {
        List<List<Integer>> pages = new ArrayList<>();
        for (int p = 0; p + pageSize <= tokens.length; p += pageSize) {
            List<Integer> page = new ArrayList<>();
            for (int j = 0; j < pageSize; j++) {
                page.add(tokens[p + j]);
            }
            pages.add(page);
        }
        return pages;
    }

    private static void checkSameStructure(int vocab, int pageSize, long seed) {
        List<Request> trace = trace(seed, 300);
        TokenExpander sim = new TokenExpander(64);
        TokenExpander client = new TokenExpander(64);
        VocabRemap remap = VocabRemap.forVocabulary(vocab, pageSize, seed * 7 + 3);
        List<List<Integer>> simKeys = new ArrayList<>();
        List<List<List<Integer>>> clientPages = new ArrayList<>();
        Map<Integer, List<Integer>> pageOfKey = new HashMap<>();
        Map<List<Integer>, Integer> keyOfPage = new HashMap<>();
        for (Request r : trace) {
            int[] keys = sim.pageKeys(r, pageSize); // what the simulator's tree holds
            int[] ids = remap.tokenIds(client, r); // what the client sends
            assertThat(ids).hasSize(r.inputLength());
            for (int id : ids) {
                assertThat(id).isBetween(0, vocab - 1);
            }
            List<List<Integer>> pages = pagesOf(ids, pageSize);
            assertThat(pages).hasSize(keys.length);
            for (int k = 0; k < keys.length; k++) {
                // equal simulator pages <-> equal client pages (no folding, no splitting)
                List<Integer> prev = pageOfKey.putIfAbsent(keys[k], pages.get(k));
                assertThat(prev == null ? pages.get(k) : prev).isEqualTo(pages.get(k));
                Integer prevKey = keyOfPage.putIfAbsent(pages.get(k), keys[k]);
                assertThat(prevKey == null ? keys[k] : prevKey).isEqualTo(keys[k]);
            }
            simKeys.add(Arrays.stream(keys).boxed().toList());
            clientPages.add(pages);
        }
        List<Integer> simHits = prefixHits(simKeys);
        assertThat(simHits.stream().mapToInt(Integer::intValue).sum()).isPositive();
        assertThat(prefixHits(clientPages)).isEqualTo(simHits);
    }

    @Test
    void theClientsPromptsHaveTheSimulatorsPageStructure() {
        checkSameStructure(32_000, 16, 1);
        checkSameStructure(256, 16, 2);
        checkSameStructure(2, 16, 3); // a binary vocabulary still tells 2^16 pages apart
        checkSameStructure(100_000, 1, 4); // one-token pages: the id is the page
    }

    @Test
    void equalBlocksGiveEqualIdsAndDifferentBlocksDifferentOnes() {
        VocabRemap remap = VocabRemap.forVocabulary(50, 16, 9);
        TokenExpander e = new TokenExpander(32);
        int[] a = remap.tokenIds(e, new Request(0, 0, 0, 96, 1, new int[] {11, 12, 13}, 32));
        int[] b = remap.tokenIds(e, new Request(1, 1, 0, 96, 1, new int[] {11, 12, 14}, 32));
        int[] c = remap.tokenIds(e, new Request(2, 2, 0, 40, 1, new int[] {12, 11}, 32));
        assertThat(Arrays.copyOf(a, 64)).isEqualTo(Arrays.copyOf(b, 64)); // the shared prefix
        for (int p = 64; p < 96; p += 16) { // every page of the block that differs differs
            assertThat(Arrays.copyOfRange(a, p, p + 16)).isNotEqualTo(Arrays.copyOfRange(b, p, p + 16));
        }
        // block 12 first and block 11 second: the same tokens as where they first occurred
        assertThat(Arrays.copyOf(c, 32)).isEqualTo(Arrays.copyOfRange(a, 32, 64));
        assertThat(Arrays.copyOfRange(c, 32, 40)).isEqualTo(Arrays.copyOf(a, 8));
    }

    @Test
    void theSeedChangesTheIdsNotTheStructure() {
        TokenExpander e1 = new TokenExpander(32);
        TokenExpander e2 = new TokenExpander(32);
        TokenExpander e3 = new TokenExpander(32);
        Request r = new Request(0, 0, 0, 64, 1, new int[] {5, 6}, 32);
        int[] one = VocabRemap.forVocabulary(1000, 16, 1).tokenIds(e1, r);
        int[] again = VocabRemap.forVocabulary(1000, 16, 1).tokenIds(e2, r);
        int[] other = VocabRemap.forVocabulary(1000, 16, 2).tokenIds(e3, r);
        assertThat(again).isEqualTo(one);
        assertThat(other).isNotEqualTo(one);
    }

    @Test
    void refusesRatherThanFolds() {
        VocabRemap tiny = VocabRemap.forVocabulary(2, 1, 0);
        assertThat(tiny.capacityPages()).isEqualTo(2);
        assertThat(tiny.token(0)).isNotEqualTo(tiny.token(1));
        assertThatThrownBy(() -> tiny.token(2)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("more distinct pages");
        assertThatThrownBy(() -> VocabRemap.forVocabulary(1, 16, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> VocabRemap.forVocabulary(100, 0, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(VocabRemap.forVocabulary(32_000, 16, 0).capacityPages()).isGreaterThanOrEqualTo((1L << 31) / 16);
    }
}
