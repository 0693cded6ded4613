package io.hicache.serve.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.TestServer;
import io.hicache.serve.model.ByteTokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The engine with its cache across clients and tiers: multi-turn conversations that do not fit the device pool give
 * the same greedy answers with no cache, device only, device and host (either load mode, either write policy), and
 * after a restart on the same L3 store; the host and L3 tiers serve what the device evicted; nothing stays held.
 */
class EngineCacheTest {

    /** Output of one request. */
    record Out(String text, Finish finish) {
    }

    static final class Sink implements RequestSink {
        final StringBuilder text = new StringBuilder();
        final CompletableFuture<Out> done = new CompletableFuture<>();

        @Override
        public void onText(String delta, int completionTokens) {
            text.append(delta);
        }

        @Override
        public void onFinish(Finish finish) {
            done.complete(new Out(text.toString(), finish));
        }

        @Override
        public void onError(int status, String message) {
            done.completeExceptionally(new IllegalStateException(status + " " + message));
        }
    }

    static Out serve(Engine e, String prompt, int maxNew) throws Exception {
        Sink sink = new Sink();
        ServeRequest r = new ServeRequest(e.nextRequestId(), ByteTokenizer.encode(prompt), SamplingParams.greedy(maxNew),
            System.nanoTime(), sink, "test");
        assertThat(e.submit(r)).isEqualTo(Engine.Admission.ACCEPTED);
        return sink.done.get(120, TimeUnit.SECONDS);
    }

    /** Four conversations of three turns, turns interleaved across them, run one request at a time. */
    static List<Out> conversations(Engine e) throws Exception {
        SplittableRandom r = new SplittableRandom(3);
        String[][] q = new String[4][3];
        for (int c = 0; c < 4; c++) {
            for (int t = 0; t < 3; t++) {
                StringBuilder sb = new StringBuilder("c" + c + "t" + t + ":");
                while (sb.length() < 60) {
                    sb.append((char) ('a' + r.nextInt(26)));
                }
                q[c][t] = sb.toString();
            }
        }
        String[] history = new String[4];
        List<Out> outs = new ArrayList<>();
        for (int t = 0; t < 3; t++) {
            for (int c = 0; c < 4; c++) {
                history[c] = (history[c] == null ? "" : history[c]) + q[c][t];
                Out o = serve(e, history[c], 10);
                history[c] += o.text();
                outs.add(o);
            }
        }
        return outs;
    }

    private static List<Out> run(EngineConfig cfg, List<Inspection> idle) throws Exception {
        ServeMetrics m = new ServeMetrics();
        Engine e = new Engine(cfg, m);
        e.start();
        try {
            List<Out> outs = conversations(e);
            idle.add(awaitIdle(e));
            return outs;
        } finally {
            e.shutdown(TimeUnit.SECONDS.toNanos(5));
        }
    }

    static Inspection awaitIdle(Engine e) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        Inspection i = e.inspect().join();
        while (!i.idle() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            i = e.inspect().join();
        }
        return i;
    }

    private static List<String> texts(List<Out> outs) {
        return outs.stream().map(Out::text).toList();
    }

    private static int sum(List<Out> outs, java.util.function.ToIntFunction<Finish.CachedTokens> f) {
        return outs.stream().mapToInt(o -> f.applyAsInt(o.finish().cached())).sum();
    }

    @Test
    void answersDoNotDependOnWhereTheKvCameFrom() throws Exception {
        List<Inspection> idle = new ArrayList<>();
        // 4 conversations of up to ~210 tokens do not fit 256 device tokens; they fit the host tier
        List<Out> none = run(TestServer.config(false, 256, 0, 1, 8, null, LoadOverlap.SAME_FORWARD,
            WritePolicy.WRITE_THROUGH), idle);
        List<Out> device = run(TestServer.config(256, 0), idle);
        List<Out> host = run(TestServer.config(256, 8192), idle);
        List<Out> previous = run(TestServer.config(true, 256, 8192, 1, 8, null, LoadOverlap.PREVIOUS_BATCH,
            WritePolicy.WRITE_THROUGH), idle);
        List<Out> writeBack = run(TestServer.config(true, 256, 8192, 1, 8, null, LoadOverlap.SAME_FORWARD,
            WritePolicy.WRITE_BACK), idle);
        assertThat(texts(device)).isEqualTo(texts(none));
        assertThat(texts(host)).isEqualTo(texts(none));
        assertThat(texts(previous)).isEqualTo(texts(none));
        assertThat(texts(writeBack)).isEqualTo(texts(none));
        assertThat(sum(none, Finish.CachedTokens::total)).isZero();
        assertThat(sum(device, Finish.CachedTokens::host)).isZero();
        assertThat(sum(host, Finish.CachedTokens::host)).isPositive();
        assertThat(sum(host, Finish.CachedTokens::total)).isGreaterThan(sum(device, Finish.CachedTokens::total));
        assertThat(sum(previous, Finish.CachedTokens::host)).isPositive();
        assertThat(sum(writeBack, Finish.CachedTokens::host)).isPositive();
        for (Inspection i : idle) {
            assertThat(i.idle()).as(i.toString()).isTrue();
        }
    }

    @Test
    void aRestartOnTheSameL3StoreServesEarlierConversationsFromIt(@TempDir Path dir) throws Exception {
        EngineConfig cfg = TestServer.config(true, 256, 4096, 1, 8, "file:" + dir, LoadOverlap.SAME_FORWARD,
            WritePolicy.WRITE_THROUGH);
        List<Inspection> idle = new ArrayList<>();
        List<Out> first = run(cfg, idle);
        List<Out> second = run(cfg, idle);
        assertThat(texts(second)).isEqualTo(texts(first));
        // the first turn of each conversation was never seen by the second engine's device or host tier
        for (int c = 0; c < 4; c++) {
            assertThat(second.get(c).finish().cached().storage()).as("conversation " + c).isPositive();
        }
        assertThat(sum(first, Finish.CachedTokens::storage)).isZero();
        for (Inspection i : idle) {
            assertThat(i.idle()).as(i.toString()).isTrue();
        }
    }

    /**
     * Attention reads and writes device pages in place, so a request must never write a page the tree shares: a whole
     * cached prompt of whole pages computes its last page again (into a page of its own), and two requests that
     * compute the same pages at once keep their own copies until they end. Both give the answers of no cache, and
     * every page goes back (the engine is idle, no page leaked).
     */
    @Test
    void wholeCachedPromptsAndTwinRequestsNeitherWriteSharedPagesNorLeakThem() throws Exception {
        String aligned = "p".repeat(16) + "0123456789abcdef" + "ghijklmnopqrstuv"; // 48 tokens: 3 whole pages
        String twin = "twins share one prompt but neither sees the other's pages until it ends";
        List<List<String>> answers = new ArrayList<>();
        for (EngineConfig cfg : List.of(
                TestServer.config(false, 256, 0, 2, 8, null, LoadOverlap.SAME_FORWARD, WritePolicy.WRITE_THROUGH),
                TestServer.config(true, 256, 4096, 2, 8, null, LoadOverlap.SAME_FORWARD, WritePolicy.WRITE_THROUGH))) {
            Engine e = new Engine(cfg, new ServeMetrics());
            e.start();
            try {
                List<String> texts = new ArrayList<>();
                List<Out> repeats = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    Out o = serve(e, aligned, 6);
                    repeats.add(o);
                    texts.add(o.text());
                }
                Sink a = new Sink();
                Sink b = new Sink();
                int[] ids = ByteTokenizer.encode(twin);
                assertThat(e.submit(new ServeRequest(e.nextRequestId(), ids, SamplingParams.greedy(8), System.nanoTime(),
                    a, "test"))).isEqualTo(Engine.Admission.ACCEPTED);
                assertThat(e.submit(new ServeRequest(e.nextRequestId(), ids, SamplingParams.greedy(8), System.nanoTime(),
                    b, "test"))).isEqualTo(Engine.Admission.ACCEPTED);
                texts.add(a.done.get(120, TimeUnit.SECONDS).text());
                texts.add(b.done.get(120, TimeUnit.SECONDS).text());
                texts.add(serve(e, twin, 8).text());
                if (cfg.radixCache()) {
                    // the second and third time, the prompt's first 2 pages are restored and its last page computed
                    assertThat(repeats.get(1).finish().cached().total()).isEqualTo(32);
                    assertThat(repeats.get(2).finish().cached().total()).isEqualTo(32);
                }
                Inspection idle = awaitIdle(e);
                assertThat(idle.idle()).as(idle.toString()).isTrue();
                answers.add(texts);
            } finally {
                e.shutdown(TimeUnit.SECONDS.toNanos(5));
            }
        }
        assertThat(answers.get(1)).isEqualTo(answers.get(0));
    }
}
