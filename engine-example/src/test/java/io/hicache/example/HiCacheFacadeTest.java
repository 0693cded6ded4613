package io.hicache.example;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupHandle;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePagePool;
import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The facade as an engine sees it, through the exported API only: the whole backup life cycle with the agents
 * stepped by the test ({@link ThreadingMode#INVOKER}), locks, the read-only views, refusal of foreign handles,
 * and behaviour after close.
 */
class HiCacheFacadeTest {
    static final int LAYERS = 3;
    static final int PAGE = 16;
    static final int DEVICE_PAGES = 32;

    SimulatedCudaRuntime gpu;
    long kvBase;
    HiCache cache;
    DevicePagePool pool;
    final List<BackupHandle> committed = new ArrayList<>();

    @BeforeEach
    void build() {
        gpu = new SimulatedCudaRuntime();
        DeviceKvLayout.Builder lb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS).pageSizeTokens(PAGE)
            .bytesPerTokenPerBuffer(64).pageCount(DEVICE_PAGES);
        kvBase = gpu.deviceMalloc(lb.packedBytes());
        pool = new DevicePagePool(DEVICE_PAGES);
        cache = HiCache.builder().runtime(gpu).targetLayout(lb.packedFrom(kvBase).build()).hostPages(16)
            .threadingMode(ThreadingMode.INVOKER).clock(gpu::nowNs)
            .listener(new BackupListener() {
                @Override
                public void onCommitted(BackupHandle backup) {
                    committed.add(backup);
                }
            }).build();
    }

    @AfterEach
    void close() {
        cache.close();
        gpu.deviceFree(kvBase);
        assertThat(gpu.leakReport().liveStreams()).isZero();
        gpu.close();
    }

    private int[] insert(int tokens) {
        int[] t = new int[tokens];
        for (int i = 0; i < tokens; i++) {
            t[i] = i;
        }
        int[] pages = new int[tokens / PAGE];
        assertThat(pool.allocate(pages.length, pages, 0)).isTrue();
        assertThat(cache.insert(t, 0, t.length, pages, 0)).isZero();
        return t;
    }

    @Test
    void aBackupCommitsThroughTheFacadeAndTheViewsShowIt() {
        int[] tokens = insert(2 * PAGE);
        List<BackupHandle> backups = new ArrayList<>();
        assertThat(cache.reserveByPolicy(cache.lastInsertNode(), false, backups)).isEqualTo(1);
        assertThat(backups.getFirst().state()).isEqualTo(BackupState.RESERVED);
        assertThat(cache.hostPool().budgetUsedPages()).isEqualTo(2);

        ForwardHooks hooks = cache.beginForward(backups);
        assertThat(hooks.backupCount()).isEqualTo(1);
        for (int l = 0; l < LAYERS; l++) {
            gpu.simulateKernel(cache.computeStream(), 10_000);
            hooks.targetLayerStored(l);
        }
        hooks.endForward();
        for (int i = 0; i < 1_000 && !backups.getFirst().state().terminal(); i++) {
            cache.doAgentWork();
            gpu.advanceToNextEvent();
            cache.poll();
        }

        assertThat(backups.getFirst().state()).isEqualTo(BackupState.COMMITTED);
        assertThat(committed).containsExactly(backups.getFirst());
        assertThat(cache.metrics().get(Metric.BACKUPS_COMMITTED)).isEqualTo(1);
        assertThat(cache.tree().hostPagesCommitted()).isEqualTo(2);
        assertThat(cache.tree().nodeCount()).isEqualTo(1);
        assertThat(cache.hostPool().freePages()).isEqualTo(cache.hostPool().capacityPages() - 2);
        MatchResult m = cache.match(tokens, 0, tokens.length, new MatchResult());
        assertThat(m.deviceTokenCount()).isEqualTo(2 * PAGE);
        assertThat(m.lastDeviceNode().isBackedUp()).isTrue();
    }

    @Test
    void aLookAtTheCachedPrefixCountsItAndMovesNothing() {
        int[] tokens = insert(3 * PAGE);
        int[] twoPagesThenOther = java.util.Arrays.copyOf(tokens, 3 * PAGE);
        twoPagesThenOther[2 * PAGE] = -1;
        assertThat(cache.cachedPrefixPages(tokens, 0, tokens.length)).isEqualTo(3);
        assertThat(cache.cachedPrefixPages(twoPagesThenOther, 0, twoPagesThenOther.length)).isEqualTo(2);
        assertThat(cache.cachedPrefixPages(tokens, PAGE, 2 * PAGE)).isZero();
        assertThat(cache.tree().nodeCount()).as("nothing split").isEqualTo(1);
        assertThat(cache.metrics().get(Metric.DEVICE_HIT_TOKENS)).as("a look is not a hit").isZero();
        assertThatThrownBy(() -> cache.cachedPrefixPages(null, 0, 0)).isInstanceOf(IllegalArgumentException.class);

        cache.match(twoPagesThenOther, 0, twoPagesThenOther.length, new MatchResult());
        assertThat(cache.tree().nodeCount()).as("match splits").isEqualTo(2);
        assertThat(cache.metrics().get(Metric.DEVICE_HIT_TOKENS)).isEqualTo(2 * PAGE);
    }

    @Test
    void aLockedPrefixIsNotEvictedUntilUnlocked() {
        insert(2 * PAGE);
        RadixNode node = cache.lastInsertNode();
        cache.lock(node);
        assertThat(cache.tree().devicePagesLocked()).isEqualTo(2);
        assertThat(cache.evictDevice(2, pool)).isZero();

        cache.unlock(node);
        assertThat(cache.tree().devicePagesLocked()).isZero();
        assertThatThrownBy(() -> cache.unlock(node)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("every unlock must follow a lock");
        assertThatThrownBy(() -> cache.lock(null)).isInstanceOf(IllegalArgumentException.class);
        assertThat(cache.evictDevice(2, pool)).isEqualTo(2);
        assertThat(pool.freePages()).isEqualTo(DEVICE_PAGES);
        assertThat(node.isAttached()).isFalse();
    }

    @Test
    void aHandleTheCacheDidNotCreateIsRefusedAndChangesNothing() {
        insert(PAGE);
        List<BackupHandle> backups = new ArrayList<>();
        cache.reserveByPolicy(cache.lastInsertNode(), false, backups);
        BackupHandle foreign = new BackupHandle() {
            @Override public long seq() { return 0; }
            @Override public BackupState state() { return BackupState.RESERVED; }
            @Override public AbortReason abortReason() { return null; }
            @Override public boolean withDraft() { return false; }
            @Override public int pageCount() { return 1; }
            @Override public int ownedPageCount() { return 1; }
            @Override public RadixNode node() { return null; }
        };
        List<BackupHandle> mixed = List.of(backups.getFirst(), foreign);

        assertThatThrownBy(() -> cache.beginForward(mixed)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("not created by a HiCache");
        assertThatThrownBy(() -> cache.abort(foreign, AbortReason.ENGINE)).isInstanceOf(IllegalArgumentException.class);
        assertThat(backups.getFirst().state()).isEqualTo(BackupState.RESERVED);
        assertThat(cache.backupsInFlight()).isEqualTo(1);
        assertThat(cache.abort(backups.getFirst(), AbortReason.ENGINE)).isTrue();
    }

    @Test
    void afterCloseEveryCallThatActsThrowsNamingClosed() {
        int[] tokens = insert(PAGE);
        RadixNode node = cache.lastInsertNode();
        cache.close();

        assertThat(cache.isClosed()).isTrue();
        assertThat(cache.metrics().get(Metric.BACKUPS_COMMITTED)).isZero();
        assertThat(cache.targetLayers()).isEqualTo(LAYERS);
        assertThat(cache.stickyError()).isNull();
        List<Runnable> calls = List.of(
            () -> cache.match(tokens, 0, tokens.length, new MatchResult()),
            () -> cache.cachedPrefixPages(tokens, 0, tokens.length),
            () -> cache.insert(tokens, 0, tokens.length, new int[1], 0),
            () -> cache.lock(node),
            () -> cache.reserve(node, false),
            () -> cache.reserveByPolicy(node, false, new ArrayList<>()),
            () -> cache.beginForward(List.of()),
            () -> cache.poll(),
            () -> cache.startLoading(),
            () -> cache.evictDevice(1, pool),
            () -> cache.waitLayer(-1, 0),
            () -> cache.doAgentWork(),
            () -> cache.computeStream(),
            () -> cache.backupsInFlight(),
            () -> cache.tree().nodeCount(),
            () -> cache.hostPool().freePages());
        for (Runnable call : calls) {
            assertThatThrownBy(call::run).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
        cache.close(); // idempotent
    }
}
