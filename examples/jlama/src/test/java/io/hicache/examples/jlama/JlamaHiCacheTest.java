package io.hicache.examples.jlama;

import static org.assertj.core.api.Assertions.assertThat;

import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.HostThreadCudaRuntime;
import io.hicache.radix.MatchResult;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The jlama-demo scenario at CI size (2 layers, 128-token prompts): a prefix backed up layer by layer during
 * Jlama's forward, evicted from the device, loaded back from the host and continued from must give exactly the
 * logits and tokens of recomputing it. Context parallelism 1, no draft model; the load before or overlapped
 * with the prefill; one variant with two forwards' backups in flight at once.
 */
class JlamaHiCacheTest {
    static final TinyLlama SPEC = new TinyLlama(2, 128, 4, 2, 256, 512, 256, 5);
    static final int PROMPT = 128;
    static final int SUFFIX = 32;
    static final int GENERATE = 8;
    static final int PAGES = PROMPT / JlamaHiCacheEngine.PAGE_TOKENS;

    @BeforeAll
    static void reductionsArePinned() {
        // without it, the comparison would measure the JIT, not the cache
        assertThat(ManagementFactory.getRuntimeMXBean().getInputArguments()).contains(JlamaDemo.DETERMINISM_FLAG);
    }

    static int[] tokens(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 3 + r.nextInt(SPEC.vocab() - 3);
        }
        return t;
    }

    @Test
    void twoFreshModelsAgreeBitForBitSoTheComparisonCanTellAnError() {
        int[] b = tokens(1, PROMPT + SUFFIX);
        Generation x = Generation.recompute(SPEC.newModel(), b, GENERATE);
        Generation y = Generation.recompute(SPEC.newModel(), b, GENERATE);
        assertThat(x.maxAbsLogitDiff(y)).isZero();
        assertThat(x.tokens()).isEqualTo(y.tokens());
        Generation other = Generation.recompute(SPEC.newModel(), tokens(2, PROMPT + SUFFIX), GENERATE);
        assertThat(x.maxAbsLogitDiff(other)).isPositive();
    }

    @ParameterizedTest(name = "load overlapped with the prefill: {0}")
    @ValueSource(booleans = {false, true})
    @SuppressWarnings("try") // closes the engine inside its try to check what it freed; close() is idempotent
    void aPrefixLoadedBackFromTheHostContinuesWithTheLogitsOfRecomputation(boolean overlap) {
        int[] b = tokens(3, PROMPT + SUFFIX);
        int[] a = Arrays.copyOf(b, PROMPT);
        Generation restored;
        try (HostThreadCudaRuntime gpu = new HostThreadCudaRuntime();
             JlamaHiCacheEngine engine = new JlamaHiCacheEngine(SPEC.newModel(), gpu, 4 * PAGES, 4 * PAGES, 1,
                 overlap)) {
            Generation ga = engine.generate(a, GENERATE);
            assertThat(ga.restoredTokens()).isZero();
            engine.awaitBackups();
            assertThat(engine.backupsCommitted()).isPositive();
            assertThat(engine.evictDevice(Integer.MAX_VALUE)).isEqualTo(PAGES);
            MatchResult m = new MatchResult();
            engine.cache().match(b, 0, PROMPT, m);
            assertThat(m.deviceTokenCount()).isZero();
            assertThat(m.hostTokenCount()).isEqualTo(PROMPT);

            restored = engine.generate(b, GENERATE);
            assertThat(engine.cache().metrics().get(Metric.LOADS_COMPLETED)).isEqualTo(1);
            assertThat(engine.cache().metrics().get(Metric.LOAD_TOKENS)).isEqualTo(PROMPT);
            engine.awaitBackups();
            assertThat(engine.backupsCommitted()).as("A's prompt, then B's suffix").isEqualTo(2);
            engine.close();
            assertThat(gpu.liveAllocations()).as("the engine and the cache free what they allocated").isEmpty();
        }
        assertThat(restored.restoredTokens()).isEqualTo(PROMPT);
        assertThat(restored.prefilledTokens()).isEqualTo(SUFFIX);
        Generation recomputed = Generation.recompute(SPEC.newModel(), b, GENERATE);
        assertThat(restored.maxAbsLogitDiff(recomputed)).isZero();
        assertThat(restored.tokens()).isEqualTo(recomputed.tokens());
    }

    @Test
    void withOverlapThePrefillStartsBeforeTheLoadLands() throws InterruptedException {
        int[] b = tokens(7, PROMPT + SUFFIX);
        Generation restored;
        AtomicLong loadsWhenForwardWaited = new AtomicLong(-1);
        try (HostThreadCudaRuntime gpu = new HostThreadCudaRuntime();
             JlamaHiCacheEngine engine = new JlamaHiCacheEngine(SPEC.newModel(), gpu, 4 * PAGES, 4 * PAGES, 1, true)) {
            engine.generate(Arrays.copyOf(b, PROMPT), GENERATE);
            engine.awaitBackups();
            engine.evictDevice(Integer.MAX_VALUE);
            // hold the compute stream: the load starts only after an event on it, and layer 0 waits on it
            CountDownLatch open = new CountDownLatch(1);
            gpu.launchHostFunc(engine.cache().computeStream(), () -> {
                try {
                    open.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            Thread forward = Thread.currentThread();
            Thread watcher = Thread.ofPlatform().start(() -> {
                long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!waitsForLayerLoad(forward) && System.nanoTime() < deadlineNs) {
                    Thread.onSpinWait();
                }
                if (waitsForLayerLoad(forward)) {
                    loadsWhenForwardWaited.set(engine.cache().metrics().get(Metric.LOADS_COMPLETED));
                }
                open.countDown();
            });
            restored = engine.generate(b, GENERATE);
            watcher.join();
        }
        assertThat(loadsWhenForwardWaited.get()).as("loads completed when the forward waited for layer 0").isZero();
        assertThat(restored.restoredTokens()).isEqualTo(PROMPT);
        Generation recomputed = Generation.recompute(SPEC.newModel(), b, GENERATE);
        assertThat(restored.maxAbsLogitDiff(recomputed)).isZero();
    }

    /** True while {@code t} is inside the prefill, blocked on the device before copying a layer's prefix. */
    private static boolean waitsForLayerLoad(Thread t) {
        boolean sync = false;
        for (StackTraceElement e : t.getStackTrace()) {
            sync |= e.getClassName().equals("io.hicache.cuda.simulated.HostThreadCudaRuntime")
                && e.getMethodName().equals("synchronizeEvent");
            if (sync && e.getMethodName().equals("beforeLayer") && e.getClassName().endsWith("JlamaHiCacheEngine$Mirror")) {
                return true;
            }
        }
        return false;
    }

    @Test
    void theRestoredRunReadsTheHostCopy() {
        int[] b = tokens(4, PROMPT + SUFFIX);
        Generation restored;
        try (HostThreadCudaRuntime gpu = new HostThreadCudaRuntime();
             JlamaHiCacheEngine engine = new JlamaHiCacheEngine(SPEC.newModel(), gpu, 4 * PAGES, 4 * PAGES, 1, true)) {
            engine.generate(Arrays.copyOf(b, PROMPT), GENERATE);
            engine.awaitBackups();
            engine.evictDevice(Integer.MAX_VALUE);
            for (HostThreadCudaRuntime.Allocation a : gpu.liveAllocations()) { // the host tier's pinned memory
                if (a.kind() != HostThreadCudaRuntime.MemoryKind.DEVICE) {
                    gpu.hostMemory(a.address(), a.bytes()).fill((byte) 0x3c); // every host KV float becomes 0.0117
                }
            }
            restored = engine.generate(b, GENERATE);
        }
        assertThat(restored.restoredTokens()).isEqualTo(PROMPT);
        Generation recomputed = Generation.recompute(SPEC.newModel(), b, GENERATE);
        assertThat(restored.maxAbsLogitDiff(recomputed)).isPositive();
    }

    @Test
    void twoForwardsWithBackupsInFlightBothCommitAndRestoreExactly() throws InterruptedException {
        int[] b1 = tokens(5, PROMPT + SUFFIX);
        int[] b2 = tokens(6, PROMPT + SUFFIX);
        Generation r1;
        Generation r2;
        try (HostThreadCudaRuntime gpu = new HostThreadCudaRuntime();
             JlamaHiCacheEngine engine = new JlamaHiCacheEngine(SPEC.newModel(), gpu, 4 * PAGES, 4 * PAGES, 2, false)) {
            // hold the compute stream: the hooks' events cannot complete, so neither forward's copies can run
            CountDownLatch open = new CountDownLatch(1);
            CountDownLatch held = new CountDownLatch(1);
            gpu.launchHostFunc(engine.cache().computeStream(), () -> {
                held.countDown();
                try {
                    open.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            try {
                assertThat(held.await(30, TimeUnit.SECONDS)).isTrue();
                engine.generate(Arrays.copyOf(b1, PROMPT), GENERATE);
                engine.generate(Arrays.copyOf(b2, PROMPT), GENERATE);
                engine.cache().poll();
                assertThat(engine.cache().backupsInFlight()).isEqualTo(2);
                assertThat(engine.backupsCommitted()).isZero();
            } finally {
                open.countDown();
            }
            engine.awaitBackups();
            assertThat(engine.backupsCommitted()).isEqualTo(2);
            assertThat(engine.evictDevice(Integer.MAX_VALUE)).isEqualTo(2 * PAGES);
            r1 = engine.generate(b1, GENERATE);
            r2 = engine.generate(b2, GENERATE);
        }
        assertThat(r1.restoredTokens()).isEqualTo(PROMPT);
        assertThat(r2.restoredTokens()).isEqualTo(PROMPT);
        Generation c1 = Generation.recompute(SPEC.newModel(), b1, GENERATE);
        Generation c2 = Generation.recompute(SPEC.newModel(), b2, GENERATE);
        assertThat(r1.maxAbsLogitDiff(c1)).isZero();
        assertThat(r2.maxAbsLogitDiff(c2)).isZero();
        assertThat(r1.tokens()).isEqualTo(c1.tokens());
        assertThat(r2.tokens()).isEqualTo(c2.tokens());
    }
}
