package io.hicache.serve.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hicache.sim.trace.MultiTurnGenerator;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.TraceFormat;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

class TraceTokensTest {

    private static List<Request> multiTurn(Path dir) throws Exception {
        Path f = dir.resolve("mt.jsonl");
        new MultiTurnGenerator(5, 3, 100, 20, 4, 0, 9).write(f);
        List<Request> rs = new ArrayList<>();
        try (TraceReader r = new TraceSource(TraceFormat.MOONCAKE, f, "mt", Long.MAX_VALUE).open()) {
            Request q;
            while ((q = r.next()) != null) {
                rs.add(q);
            }
        }
        return rs;
    }

    /** Random multi-block requests sharing prefixes, as Mooncake's traces do (16-token blocks). */
    private static List<Request> sharedPrefixes() {
        SplittableRandom rnd = new SplittableRandom(4);
        List<Request> rs = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            int blocks = 1 + rnd.nextInt(12);
            int[] ids = new int[blocks];
            int shared = rnd.nextInt(blocks + 1);
            for (int b = 0; b < blocks; b++) {
                ids[b] = b < shared ? 1000 + b : rnd.nextInt(1 << 30);
            }
            rs.add(new Request(i, i, i, blocks * 16 - rnd.nextInt(16), 4, ids, 16));
        }
        return rs;
    }

    @Test
    void theExpansionIsTheSimulatorsAndPagesAreEqualExactlyWhenItsPageKeysAre(@TempDir Path dir) throws Exception {
        for (List<Request> trace : List.of(multiTurn(dir), sharedPrefixes())) {
            int block = trace.getFirst().blockSize();
            TraceTokens tokens = new TraceTokens(block, 16, 320);
            TokenExpander sim = new TokenExpander(block);
            TokenExpander simKeys = new TokenExpander(block);
            Map<List<Integer>, Integer> keyOfPage = new HashMap<>();
            Map<Integer, List<Integer>> pageOfKey = new HashMap<>();
            for (Request r : trace) {
                int[] raw = tokens.raw(r);
                assertThat(raw).isEqualTo(sim.expand(r));
                int[] ids = tokens.remap(raw);
                assertThat(Arrays.stream(ids).allMatch(t -> t >= 3 && t < 320)).isTrue();
                int[] keys = simKeys.pageKeys(r, 16);
                for (int p = 0; p < keys.length; p++) {
                    List<Integer> page = Arrays.stream(ids, p * 16, p * 16 + 16).boxed().toList();
                    Integer k = keyOfPage.putIfAbsent(page, keys[p]);
                    assertThat(k == null ? keys[p] : k).as("one page, one simulator key").isEqualTo(keys[p]);
                    List<Integer> before = pageOfKey.putIfAbsent(keys[p], page);
                    assertThat(before == null ? page : before).as("one simulator key, one page").isEqualTo(page);
                }
            }
            assertThat(keyOfPage).hasSizeGreaterThan(10);
        }
    }

    /** Mooncake-shaped requests: 512-token blocks sharing prefixes, the last block partial. */
    private static List<Request> mooncakeShaped() {
        SplittableRandom rnd = new SplittableRandom(11);
        List<Request> rs = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            int blocks = 1 + rnd.nextInt(14);
            int[] ids = new int[blocks];
            int shared = rnd.nextInt(blocks + 1);
            for (int b = 0; b < blocks; b++) {
                ids[b] = b < shared ? b : 100 + rnd.nextInt(1 << 20);
            }
            rs.add(new Request(i, i, i, blocks * 512 - rnd.nextInt(512), 1 + rnd.nextInt(300), ids, 512));
        }
        return rs;
    }

    @Test
    void atBlockTokensBelowTheTracesBlockBothSidesExpandAndCountHitsAlike() {
        List<Request> trace = mooncakeShaped();
        for (int blockTokens : new int[] {16, 32, 64}) {
            TraceTokens tokens = new TraceTokens(blockTokens, 16, 320);
            TokenExpander sim = new TokenExpander(blockTokens);
            TokenExpander simKeys = new TokenExpander(blockTokens);
            Map<List<Integer>, Integer> keyOfPage = new HashMap<>();
            io.hicache.sim.HitStats simHits = new io.hicache.sim.HitStats(blockTokens);
            List<TraceBench.Outcome> outcomes = new ArrayList<>();
            SplittableRandom rnd = new SplittableRandom(blockTokens);
            for (Request r : trace) {
                int[] raw = tokens.raw(r);
                assertThat(raw).isEqualTo(sim.expand(r));
                assertThat(raw.length).isEqualTo((int) Math.ceilDiv((long) r.inputLength() * blockTokens, 512));
                int[] ids = tokens.remap(raw);
                int[] keys = simKeys.pageKeys(r, 16);
                assertThat(keys.length * 16).isGreaterThanOrEqualTo(ids.length - 15);
                for (int p = 0; p + 16 <= ids.length; p++) {
                    if (p % 16 == 0) {
                        List<Integer> page = Arrays.stream(ids, p, p + 16).boxed().toList();
                        Integer k = keyOfPage.putIfAbsent(page, keys[p / 16]);
                        assertThat(k == null ? keys[p / 16] : k).as("one page, one key").isEqualTo(keys[p / 16]);
                    }
                }
                // an engine hit of any length (whole pages, or the whole prompt) counts as the simulator counts it
                int cached = rnd.nextInt(4) == 0 ? ids.length : rnd.nextInt(ids.length / 16 + 1) * 16;
                int device = rnd.nextInt(cached + 1);
                simHits.record(r, ids.length, device, cached - device);
                outcomes.add(new TraceBench.Outcome(r, true, null, r.index(), 5, 9, ids, new int[r.outputLength()],
                    cached, device, cached - device, 0, 0, 4, false, null));
            }
            assertThat(new HashMap<>(keyOfPage).values().stream().distinct().count()).isEqualTo(keyOfPage.size());
            Map<String, Object> s = TraceBench.summarize(outcomes, "mc", blockTokens, 16,
                new TraceBench.Options("mc", 1, Long.MAX_VALUE, blockTokens, null, null, true, 0, List.of()));
            assertThat((Double) s.get("token_hit_ratio")).as("block tokens %d", blockTokens).isPositive()
                .isEqualTo(simHits.tokenHitRatio());
            assertThat((Double) s.get("block_hit_ratio")).isEqualTo(simHits.blockHitRatio());
            assertThat(s.get("device_hit_tokens")).isEqualTo(simHits.deviceHitTokens());
            assertThat(s.get("host_hit_tokens")).isEqualTo(simHits.hostHitTokens());
            assertThat(s.get("input_tokens")).isEqualTo(simHits.inputTokens());
        }
    }

    @Test
    void aFollowUpCarriesThePromptSentAndTheAnswerGeneratedForItsParent(@TempDir Path dir) throws Exception {
        List<Request> trace = multiTurn(dir);
        TraceTokens tokens = new TraceTokens(512, 16, 320);
        Map<Long, Integer> byId = new HashMap<>();
        List<int[]> raw = new ArrayList<>();
        List<int[]> conv = new ArrayList<>();
        for (Request r : trace) {
            raw.add(tokens.raw(r));
            conv.add(tokens.rawConversation(r));
        }
        Request child = null;
        int parentIndex = -1;
        for (int i = 0; i < trace.size(); i++) {
            Request r = trace.get(i);
            Integer p = byId.get(r.parentId());
            if (p != null && child == null) {
                child = r;
                parentIndex = p;
            }
            byId.put(r.id(), i);
        }
        assertThat(child).isNotNull();
        Request parent = trace.get(parentIndex);
        int[] sent = tokens.remap(raw.get(parentIndex));
        sent[0] = 7; // what the parent was sent may differ from the plain expansion (its own parent's answer)
        int[] generated = new int[parent.outputLength()];
        Arrays.fill(generated, 42);
        TraceBench.Outcome p = new TraceBench.Outcome(parent, true, null, 0, 1, 2, sent, generated, 0, 0, 0, 0, 0, 0, false, null);
        int[] ids = TraceBench.prompt(tokens, raw.get(child.index()), p, conv.get(parentIndex));
        int in = parent.inputLength();
        assertThat(Arrays.copyOfRange(ids, 0, in)).isEqualTo(sent);
        assertThat(Arrays.copyOfRange(ids, in, in + generated.length)).containsOnly(42);
        int[] plain = tokens.remap(raw.get(child.index()));
        assertThat(Arrays.copyOfRange(ids, in + generated.length, ids.length))
            .isEqualTo(Arrays.copyOfRange(plain, in + generated.length, plain.length));
        TraceBench.Outcome failed = new TraceBench.Outcome(parent, false, "x", 0, 0, 0, new int[0], new int[0], 0, 0,
            0, 0, 0, 0, false, null);
        assertThat(TraceBench.prompt(tokens, raw.get(child.index()), failed, conv.get(parentIndex))).isEqualTo(plain);
    }

    @Test
    void pagesThatCannotStayDistinctAreRefused() {
        assertThatThrownBy(() -> new TraceTokens(512, 24, 320)).hasMessageContaining("must divide");
        assertThatThrownBy(() -> new TraceTokens(512, 2, 320)).hasMessageContaining("cannot keep pages distinct");
        assertThat(new TraceTokens(512, 4, 320).digits()).isEqualTo(4);
    }
}
