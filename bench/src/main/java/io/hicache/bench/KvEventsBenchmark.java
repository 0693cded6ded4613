package io.hicache.bench;

import io.hicache.core.HiCache;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.HiCacheController;
import io.hicache.events.CollectOnly;
import io.hicache.events.KvEventPublisher;
import io.hicache.events.KvEventsConfig;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What KV events cost, events off and on (a publisher attached through the public API, its thread draining and
 * sending on loopback with no subscriber); every row but the hook's and the publisher's also runs with
 * events {@code collect}: the scheduler thread records into a ring exactly as with a publisher, but no thread
 * drains it (the scheduler thread's cost alone, without the publisher thread's CPU, allocation and GC):
 * <ul>
 *   <li>{@code LayerHook.layerStored}: {@link HookBenchmark}'s per-layer forward hook ({@value LayerHook#LAYERS}
 *   target layers of a 1-page backup; the backup's commit and eviction, where events are recorded, are its untimed
 *   fixture); per layer. Events add no work there: the row shows it.</li>
 *   <li>{@code insertEvict}: a tree insert of a fresh 16-page sequence and the device eviction of it (one
 *   {@code BlockStored} and one {@code BlockRemoved} of 16 blocks when on); per page.</li>
 *   <li>{@code turnInsert}: a multi-turn request's insert, one new page after a {@value #PREFIX_PAGES}-page prefix
 *   already in the tree, and the device eviction of that page (one {@code BlockStored} and one {@code BlockRemoved}
 *   of one block when on); per turn. What events add must not grow with the prefix.</li>
 *   <li>{@code CommitPath.pollCommit}: the commit path exactly as {@link CommitBenchmark} and
 *   {@link JfrBenchmark} time it, on one rank: {@code poll()} until {@value #FORWARDS} acknowledged backups of one
 *   node of {@code backupPages} pages each are committed (a {@code BlockStored CPU} of each page when on); their
 *   insert, reservation, hooks and agents before and their eviction after are untimed; per backup. Also with
 *   events {@code replay}: on, with a replay endpoint, so the publisher also keeps a copy of every batch.</li>
 *   <li>{@code backupCycle}: a backup's whole life on the scheduler thread, one node of {@code backupPages} pages:
 *   insert, reserve, 4 layer hooks, agents, poll and commit, retire and evict (a {@code BlockStored GPU}, a
 *   {@code BlockStored CPU} and the removals of each page when on); per backup. The insert and eviction paths'
 *   events included, so it is the sum the other rows split.</li>
 *   <li>{@code publishThroughput} (on only): records produced on this thread and drained, encoded and sent by the
 *   publisher's, waited for; per page record, so 1e9 / score is the publisher's events (blocks) per second.</li>
 * </ul>
 * On {@link NoOpCudaRuntime}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
public class KvEventsBenchmark {
    static final int PAGES = 16;
    static final int PAGE_SIZE = 16;
    static final int FORWARDS = 16;
    static final int BURST = 4096;
    static final int PREFIX_PAGES = 256;

    @Param({"off", "collect", "on"})
    public String events;

    /** Records each cache's event queue holds ({@link KvEventsConfig#queueCapacity()}; its default). */
    @Param({"65536"})
    public int queue;

    /** Pages of each {@code backupCycle} backup (one node): 1 is the smallest backup, 8 a turn's worth. */
    @Param({"1"})
    public int backupPages;

    private ControllerRig rig;
    private ControllerRig bare;
    private ControllerRig turns;
    private final int[] turnTokens = new int[(PREFIX_PAGES + 1) * PAGE_SIZE];
    private final int[] turnPages = new int[PREFIX_PAGES + 1];
    private KvEventPublisher publisher;
    private final int[] tokens = new int[PAGES * PAGE_SIZE];
    private final int[] pages = new int[BURST];
    private final int[] burstTokens = new int[BURST * PAGE_SIZE];
    private int next;

    @Setup(Level.Trial)
    public void build() {
        rig = commitRig(backupPages);
        bare = new ControllerRig(ControllerRig.Runtime.NOOP, 1, 1, 0, PAGE_SIZE, BURST, 4, 2, 4, true);
        for (int i = 0; i < pages.length; i++) {
            pages[i] = i;
        }
        turns = new ControllerRig(ControllerRig.Runtime.NOOP, 1, 1, 0, PAGE_SIZE, 2 * PREFIX_PAGES, 4, 2, 4, true);
        for (int i = 0; i < turnPages.length; i++) {
            turnPages[i] = i;
        }
        fresh(turnTokens, 1 << 30);
        publisher = events(events, queue, rig.caches[0], bare.caches[0], turns.caches[0]);
        turns.controllers[0].tree().insert(turnTokens, 0, PREFIX_PAGES * PAGE_SIZE, turnPages, 0);
    }

    @TearDown(Level.Trial)
    public void close() {
        if (publisher != null) {
            publisher.close();
        }
        rig.close();
        bare.close();
        turns.close();
    }

    /** The rig of the commit-path rows: one rank, 4 layers, room for {@value #FORWARDS} backups of n pages. */
    static ControllerRig commitRig(int backupPages) {
        return new ControllerRig(ControllerRig.Runtime.NOOP, 1, 4, 0, PAGE_SIZE, 4 * FORWARDS * backupPages,
                4 * FORWARDS * backupPages, 2, FORWARDS, true);
    }

    /**
     * Events for {@code caches} as {@code mode} says: "off" nothing, "collect" a ring of {@code queue} records per
     * cache that nobody drains, "on" a publisher on loopback (returned; cache k publishes as rank k), "replay" the
     * same with a replay endpoint (every batch also kept for replay).
     */
    static KvEventPublisher events(String mode, int queue, HiCache... caches) {
        if (mode.equals("on") || mode.equals("replay")) {
            KvEventPublisher p = KvEventPublisher.open(KvEventsConfig.builder("tcp://127.0.0.1:*").closeFlushMillis(0)
                    .replayEndpoint(mode.equals("replay") ? "tcp://127.0.0.1:*" : null).queueCapacity(queue).build());
            for (int k = 0; k < caches.length; k++) {
                p.attach(caches[k], k);
            }
            return p;
        }
        if (mode.equals("collect")) {
            for (HiCache c : caches) {
                CollectOnly.attach(c, queue);
            }
        }
        return null;
    }

    private static void fresh(int[] t, int start) {
        for (int i = 0; i < t.length; i++) {
            t[i] = start + i;
        }
    }

    /** Insert and evict a fresh 16-page sequence; per page. */
    @Benchmark
    @OperationsPerInvocation(PAGES)
    public int insertEvict() {
        HiCacheController c = bare.controllers[0];
        fresh(tokens, next);
        next += tokens.length;
        c.tree().insert(tokens, 0, tokens.length, pages, 0);
        return c.evictDevice(PAGES, (p, off, n) -> { });
    }

    /** A turn's insert after a cached prefix, and the eviction of its new page; per turn. */
    @Benchmark
    public int turnInsert() {
        HiCacheController c = turns.controllers[0];
        int last = PREFIX_PAGES * PAGE_SIZE;
        for (int k = 0; k < PAGE_SIZE; k++) {
            turnTokens[last + k] = next++;
        }
        c.tree().insert(turnTokens, 0, turnTokens.length, turnPages, 0);
        return c.evictDevice(1, (p, off, n) -> { }); // the new leaf: the prefix has a child until then
    }

    /** A backup's whole life on one rank (insert to eviction); per backup. */
    @Benchmark
    @OperationsPerInvocation(FORWARDS)
    public void backupCycle() {
        rig.forwardAndAck(FORWARDS, backupPages, 4);
        rig.pollUntilRetired();
        rig.retireAndEvict(FORWARDS * backupPages);
    }

    /**
     * The commit path with events off, collected or published: {@code poll()} until {@value #FORWARDS} acknowledged
     * backups committed, the rest of each backup's life its untimed fixture (as in {@link CommitBenchmark}); per
     * backup. {@link TimedAllocation} counts the timed part's bytes alone.
     */
    @State(Scope.Thread)
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Warmup(iterations = 3, time = 1)
    @Measurement(iterations = 5, time = 1)
    @Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
    public static class CommitPath {
        @Param({"off", "collect", "on", "replay"})
        public String events;

        /** Pages of each backup (one node). */
        @Param({"1"})
        public int backupPages;

        /** Records the cache's event queue holds (its default). */
        @Param({"65536"})
        public int queue;

        private ControllerRig rig;
        private KvEventPublisher publisher;
        private final TimedAllocation.Meter meter = new TimedAllocation.Meter();

        @Setup(Level.Trial)
        public void build() {
            rig = commitRig(backupPages);
            publisher = events(events, queue, rig.caches[0]);
        }

        @TearDown(Level.Trial)
        public void close() {
            if (publisher != null) {
                publisher.close();
            }
            rig.close();
        }

        @Setup(Level.Iteration)
        public void resetMeter() {
            meter.reset();
        }

        @Setup(Level.Invocation)
        public void begin() {
            rig.forwardAndAck(FORWARDS, backupPages, 4);
            meter.start();
        }

        @TearDown(Level.Invocation)
        public void end() {
            meter.stop(FORWARDS);
            rig.retireAndEvict(FORWARDS * backupPages);
        }

        /** {@code poll()} until every backup committed; per backup. */
        @Benchmark
        @OperationsPerInvocation(FORWARDS)
        public void pollCommit(TimedAllocation alloc) {
            alloc.publish(meter);
            rig.pollUntilRetired();
        }
    }

    /** The per-layer hook of a forward thread, with the cache publishing events or not; per layer. */
    @State(Scope.Thread)
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Warmup(iterations = 3, time = 1)
    @Measurement(iterations = 5, time = 1)
    @Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
    public static class LayerHook {
        static final int LAYERS = 80;

        @Param({"off", "on"})
        public String events;

        private ControllerRig rig;
        private KvEventPublisher publisher;
        private ForwardHandle handle;

        @Setup(Level.Trial)
        public void build() {
            rig = new ControllerRig(ControllerRig.Runtime.NOOP, 1, LAYERS, 0, PAGE_SIZE, 64, 64, 16, 2, true);
            publisher = events(events, 1 << 16, rig.caches[0]); // the default queue
        }

        @TearDown(Level.Trial)
        public void close() {
            if (publisher != null) {
                publisher.close();
            }
            rig.close();
        }

        @Setup(Level.Invocation)
        public void begin() {
            rig.insertAndReserve(1, false);
            handle = rig.beginForward()[0];
        }

        @TearDown(Level.Invocation)
        public void end() {
            handle.endForward();
            handle = null;
            rig.runAgentsUntilAcked();
            rig.pollUntilRetired();
            rig.retireAndEvict(1);
        }

        @Benchmark
        @OperationsPerInvocation(LAYERS)
        public void layerStored() {
            ForwardHandle h = handle;
            for (int l = 0; l < LAYERS; l++) {
                h.targetLayerStored(l);
            }
        }
    }

    /** Produce a burst of page records and wait until the publisher sent (or dropped) them; per record. */
    @Benchmark
    @OperationsPerInvocation(2 * BURST)
    public long publishThroughput() {
        if (publisher == null) {
            return 0;
        }
        HiCacheController c = bare.controllers[0];
        long target = publisher.stats().blocksSent() + publisher.stats().blocksDropped() + 2L * BURST;
        fresh(burstTokens, next);
        next += burstTokens.length;
        c.tree().insert(burstTokens, 0, burstTokens.length, pages, 0);
        c.evictDevice(BURST, (p, off, n) -> { });
        long done;
        while ((done = publisher.stats().blocksSent() + publisher.stats().blocksDropped()) < target) {
            Thread.onSpinWait();
        }
        return done;
    }
}
