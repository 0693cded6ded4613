package io.hicache.example;

import io.hicache.core.BackupHandle;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The facade adds no allocation to the hot path: through {@link HiCache} alone, {@code beginForward}, the hooks,
 * {@code endForward}, the agents' duty cycles and the {@code poll} that commits allocate 0 bytes in every measured
 * round once warm. Bytes are counted per thread around each facade call only (the simulated device's kernels and
 * advances, inserts, reservations and evictions run unmeasured in between); nothing depends on timing.
 *
 * <p>Early in the warm-up, {@link StringLiterals#resolveInitialized} resolves the string literals of the classes
 * that ran. Without it about one run in four saw 64 to 3,520 bytes inside {@code doAgentWork}, {@code poll} or
 * {@code beginForward} at an irregular round: HotSpot, before it queues a C2 compilation, resolves every string
 * constant of the method's class on the thread that crossed the threshold, so the never-thrown exception messages of
 * e.g. {@code CompletionAgent$Fifo} or {@code DeviceKvLayout} became a {@code String} and a {@code byte[]} on the
 * caller (JFR: allocation stacks ending at the entry of the interpreted or C1-profiled call that requested the
 * compile, a 53-character message as 24 + 72 bytes; the same sizes in every run, once per class; no deoptimization at
 * those rounds; none with {@code -XX:TieredStopAtLevel=1}; none once the literals are resolved ahead: 16 of 16 runs
 * of 3,200 rounds at 0 bytes; details in docs/RELIABILITY.md). That is one-time JIT warm-up per class and JVM, not
 * the hot path; every other allocation still fails the test.
 */
class HiCacheFacadeAllocationTest {
    static final int LAYERS = 8;
    static final int PAGE = 4;
    static final int WARMUP_ROUNDS = 200;
    /** Rounds after which every class on the path is initialized and its string literals are resolved. */
    static final int RESOLVE_AFTER_ROUNDS = 20;
    static final int MEASURED_ROUNDS = 20;

    private static final com.sun.management.ThreadMXBean THREADS =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private long bytes;
    private long from;

    private void start() {
        from = THREADS.getCurrentThreadAllocatedBytes();
    }

    private void stop() {
        bytes += THREADS.getCurrentThreadAllocatedBytes() - from;
    }

    @Test
    void fromBeginForwardToCommitEveryMeasuredRoundAllocatesNothing() {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled(),
            "per-thread allocation counting unsupported by this JVM");
        SimulatedCudaRuntime gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(16).pageCount(64);
        long kvBase = gpu.deviceMalloc(lb.packedBytes());
        DevicePagePool pool = new DevicePagePool(64);
        List<BackupHandle> backups = new ArrayList<>();
        int[] pages = new int[2];
        try (HiCache cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build()).hostPages(16)
                .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs).build()) {
            for (int round = 0; round < WARMUP_ROUNDS + MEASURED_ROUNDS; round++) {
                int[] tokens = new int[2 * PAGE];
                for (int i = 0; i < tokens.length; i++) {
                    tokens[i] = 1_000 * round + i;
                }
                assertThat(pool.allocate(2, pages, 0)).isTrue();
                cache.insert(tokens, 0, tokens.length, pages, 0);
                backups.clear();
                assertThat(cache.reserveByPolicy(cache.lastInsertNode(), false, backups)).isEqualTo(1);

                bytes = 0;
                start();
                ForwardHooks hooks = cache.beginForward(backups);
                stop();
                for (int l = 0; l < LAYERS; l++) {
                    gpu.simulateKernel(cache.computeStream(), 1_000);
                    start();
                    hooks.targetLayerStored(l);
                    stop();
                }
                start();
                hooks.endForward();
                stop();
                for (int step = 0; step < 10_000 && backups.getFirst().state() != BackupState.COMMITTED; step++) {
                    start();
                    cache.doAgentWork();
                    stop();
                    gpu.advanceToNextEvent();
                    start();
                    cache.poll();
                    stop();
                }
                assertThat(backups.getFirst().state()).as("round %d committed", round).isEqualTo(BackupState.COMMITTED);
                assertThat(cache.evictDevice(2, pool)).isEqualTo(2);
                if (round == RESOLVE_AFTER_ROUNDS) {
                    assertThat(StringLiterals.resolveInitialized("io.hicache.", "org.jctools.", "com.lmax.", "org.agrona.",
                        "java.", "jdk.", "sun.", "com.sun.")).as("string literals resolved").isPositive();
                }
                if (round >= WARMUP_ROUNDS) {
                    assertThat(bytes).as("bytes allocated from beginForward to commit in measured round %d",
                        round - WARMUP_ROUNDS).isZero();
                }
            }
        } finally {
            gpu.deviceFree(kvBase);
            gpu.close();
        }
    }
}
