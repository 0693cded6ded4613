package io.hicache.serve.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.model.ModelSpec;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Requests that reach the end of the model's context: every request {@link Engine#checkRequest} admits completes (its
 * last position is {@code context - 1}), with and without the radix cache, on a model of several KV heads (Jlama's
 * RoPE table reads rows past the position for every KV head but the first); and a request whose forward fails (one
 * submitted past the context, which only the model's own bound refuses) fails alone: its pages go back, the engine
 * serves the next request.
 */
class EngineContextTest {
    /** Grouped-query attention over two KV heads, a 256-token context. */
    static final ModelSpec GQA = new ModelSpec(null, 2, 128, 4, 2, 64, 320, 256, 5);

    static EngineConfig config(boolean radix) {
        return new EngineConfig(GQA, radix, radix ? 1024 : 0, 0, 16, 32, 4, 8, WritePolicy.WRITE_THROUGH,
            LoadOverlap.SAME_FORWARD, null, StorageWritePolicy.WRITE_THROUGH, PrefetchPolicy.WAIT_COMPLETE, 0, null, 1);
    }

    static int[] prompt(int n, int salt) {
        int[] ids = new int[n];
        for (int i = 0; i < n; i++) {
            ids[i] = 10 + (i * 7 + salt) % 200;
        }
        return ids;
    }

    static EngineCacheTest.Out serve(Engine e, int[] prompt, int maxNew) throws Exception {
        EngineCacheTest.Sink sink = new EngineCacheTest.Sink();
        ServeRequest r = new ServeRequest(e.nextRequestId(), prompt,
            new SamplingParams(maxNew, 0, 1, 0, true, List.of(), null), System.nanoTime(), sink, "test");
        assertThat(e.submit(r)).isEqualTo(Engine.Admission.ACCEPTED);
        return sink.done.get(120, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "radix cache {0}")
    @ValueSource(booleans = {true, false})
    void requestsUpToTheWholeContextComplete(boolean radix) throws Exception {
        Engine e = new Engine(config(radix), new ServeMetrics());
        e.start();
        try {
            int ctx = GQA.contextTokens();
            assertThat(e.checkRequest(ctx - 6, 6)).isNull();
            EngineCacheTest.Out full = serve(e, prompt(ctx - 6, 1), 6); // prompt + max_new_tokens == context
            assertThat(full.finish().completionTokens()).isEqualTo(6);
            assertThat(full.finish().reason()).isEqualTo("length");

            assertThat(e.checkRequest(ctx - 1, 1)).isNull();
            EngineCacheTest.Out last = serve(e, prompt(ctx - 1, 2), 1); // a prefill chunk ending at context - 1
            assertThat(last.finish().completionTokens()).isEqualTo(1);
            assertThat(e.checkRequest(ctx, 1)).contains("exceed the model's context of " + ctx);

            Inspection idle = EngineCacheTest.awaitIdle(e);
            assertThat(idle.idle()).isTrue();
        } finally {
            e.shutdown(TimeUnit.SECONDS.toNanos(5));
        }
    }

    @ParameterizedTest(name = "radix cache {0}")
    @ValueSource(booleans = {true, false})
    void aFailedForwardFailsItsRequestAloneAndReturnsItsPages(boolean radix) throws Exception {
        Engine e = new Engine(config(radix), new ServeMetrics());
        e.start();
        try {
            int ctx = GQA.contextTokens();
            Inspection before = EngineCacheTest.awaitIdle(e);
            assertThat(e.checkRequest(ctx - 6, 10)).isNotNull(); // submitted past checkRequest: decode at ctx fails
            assertThatThrownBy(() -> serve(e, prompt(ctx - 6, 3), 10))
                .isInstanceOf(ExecutionException.class)
                .hasMessageContaining("500 engine error")
                .hasMessageContaining("outside the sequence");

            Inspection after = EngineCacheTest.awaitIdle(e);
            assertThat(after.idle()).isTrue(); // no lock held, every page free or cached in the tree
            assertThat(after.devicePagesFree() + after.devicePagesCached()).isEqualTo(before.devicePagesFree());
            assertThat(e.failure()).isNull();

            EngineCacheTest.Out next = serve(e, prompt(40, 4), 4);
            assertThat(next.finish().completionTokens()).isEqualTo(4);
        } finally {
            e.shutdown(TimeUnit.SECONDS.toNanos(5));
        }
    }
}
