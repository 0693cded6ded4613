package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.AbortReason;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.HiCache;
import io.hicache.core.internal.HostPages;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.radix.RadixTree;
import io.hicache.core.DevicePagePool;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The backup controller on real threads: per CP rank, the agents run on their own {@code AgentRunner}s
 * ({@link ThreadingMode#DEDICATED}), a forward thread runs a stream of forwards handed over through a queue (per
 * layer: a simulated kernel, a host function writing the layer's new KV pattern, the target hook; draft layers
 * interleaved; {@code endForward}), a device thread advances the {@link SimulatedCudaRuntime} (thread-safe), and
 * the rank's scheduler thread (rank 0: the test thread) inserts, reserves, polls, aborts, matches and evicts.
 *
 * <p>The ranks run the same seeded plan of engine steps; before each step they poll until every rank shows every
 * backup in the same tree-visible state (a lockstep engine), meeting at a {@link CyclicBarrier}. No sleeps: threads
 * hand over through queues, the barrier, volatile flags set by host functions, and the controller's own queues.
 * At the end: committed host bytes equal the device bytes at hook time, every committed backup is committed on
 * every rank, host pages are accounted, and nothing leaks.
 */
class ThreadedBackupTest {
    private static final int LAYERS = 4;
    private static final int DRAFT_LAYERS = 2;
    private static final int PAGE_SIZE = 4;
    private static final int DEVICE_PAGES = 96;
    private static final int HOST_PAGES = 64;
    private static final int STEPS = 1_500;
    private static final int MAX_FORWARDS_WITH_BACKUPS = 4;
    private static final long SEED = 20_250_601L;
    private static final long UNSET = -1;

    @ParameterizedTest(name = "cp={0}")
    @ValueSource(ints = {1, 2})
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void agentsOnRealThreadsKeepTheInvariants(int cp) throws Throwable {
        Group group = new Group(cp);
        group.run();
        System.out.printf("threaded cp=%d: %s%n", cp, group.stats);
        assertThat(group.failures).isEmpty();
        assertThat(group.stats.get("committed")).isPositive();
    }

    /** The CP group: ranks, the lockstep barrier and what its action decides. */
    static final class Group {
        final int cp;
        final Rank[] ranks;
        final CyclicBarrier barrier;
        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        final Map<String, Integer> stats = new ConcurrentHashMap<>();
        final Map<Integer, Integer> reservedPerStep = new ConcurrentHashMap<>();
        // written by the barrier action, read after await (the barrier orders both)
        boolean agreed;
        int groupInFlight;
        int groupDonePrefix;

        Group(int cp) {
            this.cp = cp;
            this.ranks = new Rank[cp];
            InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
            for (int r = 0; r < cp; r++) {
                ranks[r] = new Rank(this, r, agreement);
            }
            this.barrier = new CyclicBarrier(cp, this::decide);
        }

        private void decide() {
            boolean same = true;
            int inFlight = 0;
            int done = Integer.MAX_VALUE;
            for (Rank rank : ranks) {
                same &= Arrays.equals(rank.summary, ranks[0].summary);
                inFlight = Math.max(inFlight, rank.summaryInFlight);
                done = Math.min(done, rank.summaryDonePrefix);
            }
            agreed = same;
            groupInFlight = inFlight;
            groupDonePrefix = done;
        }

        void count(String what) {
            stats.merge(what, 1, Integer::sum);
        }

        void run() throws Throwable {
            List<Thread> schedulers = new ArrayList<>();
            for (int r = 1; r < cp; r++) {
                Rank rank = ranks[r];
                Thread t = new Thread(rank::runScheduler, "scheduler-" + r);
                schedulers.add(t);
                t.start();
            }
            ranks[0].runScheduler();
            for (Thread t : schedulers) {
                t.join(TimeUnit.SECONDS.toMillis(120));
                assertThat(t.isAlive()).as("scheduler thread %s finished", t.getName()).isFalse();
            }
            if (!failures.isEmpty()) {
                Throwable first = failures.get(0);
                for (int i = 1; i < failures.size(); i++) {
                    first.addSuppressed(failures.get(i));
                }
                throw first;
            }
            for (Rank rank : ranks) {
                assertThat(rank.committedSeqs).as("rank %d commits the same backups as rank 0", rank.r)
                    .isEqualTo(ranks[0].committedSeqs);
            }
        }
    }

    /** A forward handed to the forward thread. */
    static final class Job {
        static final Job STOP = new Job(null, null, null, null, null);
        final ForwardHandle h;
        final List<Backup> backups;
        final int[] newPages;
        final int[] plan;
        final RadixNode last;
        /** [backup][owned page][layer] = tag << 32 | device page, set by the forward thread at each hook. */
        final long[][][] expT;
        final long[][][] expD;
        volatile boolean computeDone;

        Job(ForwardHandle h, List<Backup> backups, int[] newPages, int[] plan, RadixNode last) {
            this.h = h;
            this.backups = backups;
            this.newPages = newPages;
            this.plan = plan;
            this.last = last;
            int n = backups == null ? 0 : backups.size();
            expT = new long[n][][];
            expD = new long[n][][];
            for (int i = 0; i < n; i++) {
                expT[i] = new long[backups.get(i).ownedPageCount()][LAYERS];
                expD[i] = new long[backups.get(i).ownedPageCount()][DRAFT_LAYERS];
                for (long[] row : expT[i]) {
                    Arrays.fill(row, UNSET);
                }
                for (long[] row : expD[i]) {
                    Arrays.fill(row, UNSET);
                }
            }
        }
    }

    /** One rank: device, controller, forward thread, device thread and its scheduler loop. */
    static final class Rank {
        final Group group;
        final int r;
        final SimulatedCudaRuntime rt;
        final DeviceKvLayout target;
        final DeviceKvLayout draft;
        final long targetBase;
        final long draftBase;
        final MemorySegment targetDev;
        final MemorySegment draftDev;
        final HiCache cache;
        final AtomicIntegerArray[] devTagT = new AtomicIntegerArray[LAYERS];
        final AtomicIntegerArray[] devTagD = new AtomicIntegerArray[DRAFT_LAYERS];
        final BlockingQueue<Job> jobs = new ArrayBlockingQueue<>(1024);
        final DevicePagePool freeDevice = new DevicePagePool(DEVICE_PAGES);
        final List<Backup> registered = new ArrayList<>();
        final Map<Backup, Job> jobOf = new HashMap<>();
        final Map<Backup, Integer> indexInJob = new HashMap<>();
        final ArrayDeque<Job> requests = new ArrayDeque<>();
        final List<Long> committedSeqs = new ArrayList<>();
        final long[][] hostExpT = new long[HOST_PAGES][LAYERS];
        final long[][] hostExpD = new long[HOST_PAGES][DRAFT_LAYERS];
        final boolean[] hostDraft = new boolean[HOST_PAGES];
        final List<String> violations = new ArrayList<>();
        volatile boolean deviceStop;
        /** Tags of forward writes (forward thread only) and of eviction overwrites (scheduler only). */
        int forwardTag = 2;
        int poisonTag = 0x4000_0000;
        int uniqueToken = 1_000_000;
        // barrier snapshot
        long[] summary = new long[0];
        int summaryInFlight;
        int summaryDonePrefix;

        Rank(Group group, int r, InProcessRankAgreement agreement) {
            this.group = group;
            this.r = r;
            rt = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(SEED + r)
                .copyFailureProbability(0.002, CudaError.UNKNOWN).delayedCompletions(0.2, 10_000).build());
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS)
                .pageSizeTokens(PAGE_SIZE).bytesPerTokenPerBuffer(DstHarness.BYTES_PER_TOKEN).pageCount(DEVICE_PAGES);
            targetBase = rt.deviceMalloc(tb.packedBytes());
            target = tb.packedFrom(targetBase).build();
            targetDev = rt.deviceMemory(targetBase, tb.packedBytes());
            DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(DRAFT_LAYERS)
                .pageSizeTokens(PAGE_SIZE).bytesPerTokenPerBuffer(DstHarness.BYTES_PER_TOKEN).pageCount(DEVICE_PAGES);
            draftBase = rt.deviceMalloc(db.packedBytes());
            draft = db.packedFrom(draftBase).build();
            draftDev = rt.deviceMemory(draftBase, db.packedBytes());
            HiCache.Builder hb = HiCache.builder().runtime(rt).targetLayout(target)
                .draftLayout(draft).hostPages(HOST_PAGES).threadingMode(ThreadingMode.DEDICATED)
                .idleStrategy(() -> new BackoffIdleStrategy(10, 10, 1_000, 50_000)).clock(rt::nowNs).leaseNs(0)
                .writePolicy(WritePolicy.WRITE_THROUGH).backupMode(BackupMode.LAYERED)
                .listener(new Listener());
            if (group.cp > 1) {
                hb.cpGroup(group.cp, r, OwnerLanes.Standard.ZIGZAG, agreement);
            }
            cache = hb.build();
            for (int l = 0; l < LAYERS; l++) {
                devTagT[l] = new AtomicIntegerArray(DEVICE_PAGES);
            }
            for (int d = 0; d < DRAFT_LAYERS; d++) {
                devTagD[d] = new AtomicIntegerArray(DEVICE_PAGES);
            }
            for (int pg = 0; pg < DEVICE_PAGES; pg++) {
                for (int l = 0; l < LAYERS; l++) {
                    write(false, l, pg, 1);
                }
                for (int d = 0; d < DRAFT_LAYERS; d++) {
                    write(true, d, pg, 1);
                }
            }
        }

        void write(boolean isDraft, int layer, int page, int tag) {
            (isDraft ? devTagD : devTagT)[layer].set(page, tag);
            DeviceKvLayout l = isDraft ? draft : target;
            MemorySegment seg = isDraft ? draftDev : targetDev;
            long base = isDraft ? draftBase : targetBase;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = l.pageAddress(layer, buf, page) - base;
                for (long w = 0; w < l.pageBytes() / 8; w++) {
                    seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + w * 8,
                        DstHarness.pattern(tag, r, isDraft, layer, buf, page, w));
                }
            }
        }

        String hostMismatch(boolean isDraft, int layer, int hostPage, long expected) {
            if (expected == UNSET) {
                return "rank " + r + " layer " + layer + (isDraft ? " draft" : " target") + " host page " + hostPage
                    + " published without its hook";
            }
            int tag = (int) (expected >>> 32);
            int devPage = (int) expected;
            DeviceKvLayout l = isDraft ? draft : target;
            HostKvPool pool = isDraft ? CacheInternals.hostPool(cache, true) : CacheInternals.hostPool(cache, false);
            MemorySegment seg = pool.segment();
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = pool.pageAddress(layer, buf, hostPage) - pool.baseAddress();
                for (long w = 0; w < l.pageBytes() / 8; w++) {
                    long at = off + (w * 8 / DstHarness.BYTES_PER_TOKEN) * pool.tokenPitchBytes()
                        + (w * 8) % DstHarness.BYTES_PER_TOKEN;
                    if (seg.get(ValueLayout.JAVA_LONG_UNALIGNED, at)
                        != DstHarness.pattern(tag, r, isDraft, layer, buf, devPage, w)) {
                        return "rank " + r + " layer " + layer + (isDraft ? " draft" : " target") + " host page "
                            + hostPage + " differs from device page " + devPage + " at tag " + tag;
                    }
                }
            }
            return null;
        }

        private final class Listener implements BackupListener {
            @Override
            public void onCommitted(io.hicache.core.BackupHandle committed) {
                Backup b = (Backup) committed;
                committedSeqs.add(b.seq());
                group.count("committed");
                Job job = jobOf.get(b);
                int idx = indexInJob.get(b);
                for (int i = 0; i < b.ownedPageCount(); i++) {
                    int hp = b.hostPage(i);
                    hostExpT[hp] = job.expT[idx][i].clone();
                    hostExpD[hp] = job.expD[idx][i].clone();
                    hostDraft[hp] = b.withDraft();
                    for (int l = 0; l < LAYERS; l++) {
                        String m = hostMismatch(false, l, hp, hostExpT[hp][l]);
                        if (m != null) {
                            violations.add("at commit of seq " + b.seq() + ": " + m);
                        }
                    }
                    if (b.withDraft()) {
                        for (int d = 0; d < DRAFT_LAYERS; d++) {
                            String m = hostMismatch(true, d, hp, hostExpD[hp][d]);
                            if (m != null) {
                                violations.add("at commit of seq " + b.seq() + ": " + m);
                            }
                        }
                    }
                }
            }

            @Override
            public void onAborted(io.hicache.core.BackupHandle b, AbortReason reason) {
                group.count("aborted." + reason);
            }
        }

        // ------------------------------------------------------------ forward and device threads

        private void runForwards() {
            SplittableRandom rnd = new SplittableRandom(SEED * 7 + r);
            try {
                while (true) {
                    Job job = jobs.take();
                    if (job == Job.STOP) {
                        return;
                    }
                    for (int op : job.plan) {
                        boolean isDraft = op < 0;
                        int layer = isDraft ? -op - 1 : op;
                        rt.simulateKernel(cache.computeStream(), 1_000 + rnd.nextInt(8_000));
                        int tag = forwardTag++;
                        int[] pages = job.newPages;
                        for (int pg : pages) {
                            (isDraft ? devTagD : devTagT)[layer].set(pg, tag);
                        }
                        rt.launchHostFunc(cache.computeStream(), () -> {
                            for (int pg : pages) {
                                write(isDraft, layer, pg, tag);
                            }
                        });
                        // the expected bytes: what the device pages hold once this layer's writes ran
                        for (int i = 0; i < job.backups.size(); i++) {
                            Backup b = job.backups.get(i);
                            if (isDraft && !b.withDraft()) {
                                continue;
                            }
                            for (int k = 0; k < b.ownedPageCount(); k++) {
                                int dp = b.ownedDevicePage(k);
                                long e = ((long) (isDraft ? devTagD : devTagT)[layer].get(dp) << 32) | dp;
                                (isDraft ? job.expD : job.expT)[i][k][layer] = e;
                            }
                        }
                        if (isDraft) {
                            job.h.draftLayerStored(layer);
                        } else {
                            job.h.targetLayerStored(layer);
                        }
                    }
                    job.h.endForward();
                    rt.launchHostFunc(cache.computeStream(), () -> job.computeDone = true);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Throwable t) {
                group.failures.add(t);
            }
        }

        private void runDevice() {
            IdleStrategy idle = new BackoffIdleStrategy(10, 10, 1_000, 20_000);
            try {
                while (!deviceStop) {
                    idle.idle(rt.advanceToNextEvent() ? 1 : 0);
                }
            } catch (Throwable t) {
                group.failures.add(t);
            }
        }

        // ------------------------------------------------------------ scheduler

        void runScheduler() {
            Thread forward = new Thread(this::runForwards, "forward-" + r);
            Thread device = new Thread(this::runDevice, "device-" + r);
            forward.start();
            device.start();
            try {
                for (int step = 0; step < STEPS; step++) {
                    converge();
                    engineStep(step);
                    throwViolations();
                }
                drain();
                group.stats.merge("noRoom", (int) cache.metric(io.hicache.core.metrics.Metric.RESERVE_NO_ROOM),
                    Integer::sum);
                checkEnd();
            } catch (Throwable t) {
                group.failures.add(t);
                group.barrier.reset(); // wake the other ranks so they fail too instead of waiting
            } finally {
                jobs.offer(Job.STOP);
                try {
                    forward.join(TimeUnit.SECONDS.toMillis(30));
                    cache.close();
                } catch (Throwable ignored) {
                    // reported through the leak check below
                }
                deviceStop = true;
                try {
                    device.join(TimeUnit.SECONDS.toMillis(30));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                rt.deviceFree(targetBase);
                rt.deviceFree(draftBase);
                SimulatedCudaRuntime.LeakReport leaks = rt.leakReport();
                if (!leaks.clean()) {
                    group.failures.add(new AssertionError("rank " + r + " leaks after close: " + leaks));
                }
                rt.close();
            }
        }

        private void throwViolations() {
            if (!violations.isEmpty()) {
                throw new AssertionError(String.join("\n", violations));
            }
        }

        /** Polls until every rank shows every backup in the same tree-visible state; finishes requests done everywhere. */
        private void converge() throws Exception {
            while (true) {
                cache.poll();
                throwViolations();
                long[] s = new long[registered.size()];
                for (int i = 0; i < s.length; i++) {
                    BackupState st = registered.get(i).state();
                    s[i] = st == BackupState.COMMITTED ? 1 : st == BackupState.ABORTED ? 2 : 0;
                }
                java.util.Set<Job> busy = new java.util.HashSet<>();
                for (Backup b : registered) {
                    if (b.state() == BackupState.COPYING || b.state() == BackupState.DRAINING) {
                        busy.add(jobOf.get(b));
                    }
                }
                int inFlight = busy.size();
                int done = 0;
                for (Job j : requests) {
                    if (!j.computeDone) {
                        break;
                    }
                    done++;
                }
                if (!group.failures.isEmpty()) {
                    throw new AssertionError("rank " + r + " stops: another thread failed");
                }
                summary = s;
                summaryInFlight = inFlight;
                summaryDonePrefix = done;
                group.barrier.await(60, TimeUnit.SECONDS);
                boolean ok = group.agreed;
                int finish = group.groupDonePrefix;
                // second meeting: nobody overwrites its snapshot before every rank read the decision
                group.barrier.await(60, TimeUnit.SECONDS);
                if (ok) {
                    for (int i = 0; i < finish; i++) {
                        Job j = requests.poll();
                        cache.unlock(j.last);
                    }
                    return;
                }
                Thread.onSpinWait();
            }
        }

        private void engineStep(int step) throws Exception {
            SplittableRandom op = new SplittableRandom(SEED * 1_000_003L + step);
            int kind = op.nextInt(100);
            RadixTree tree = CacheInternals.tree(cache);
            if (kind < 55) {
                request(op, step);
            } else if (kind < 75) {
                evict(1 + op.nextInt(16));
            } else if (kind < 79) {
                List<Backup> live = new ArrayList<>();
                for (Backup b : registered) {
                    if (!b.state().terminal()) {
                        live.add(b);
                    }
                }
                if (!live.isEmpty()) {
                    Backup b = live.get(op.nextInt(live.size()));
                    cache.abort(b, op.nextBoolean() ? AbortReason.REQUEST_CANCELLED : AbortReason.PREEMPTED);
                    if (r == 0) {
                        group.count("abort");
                    }
                }
            } else {
                int[] tokens = family(op.nextInt(4), 1 + op.nextInt(8));
                tree.match(tokens, 0, tokens.length, new MatchResult());
            }
        }

        private int[] family(int f, int pages) {
            int[] t = new int[pages * PAGE_SIZE];
            for (int i = 0; i < t.length; i++) {
                t[i] = f * 100_000 + i;
            }
            return t;
        }

        private void request(SplittableRandom op, int step) throws Exception {
            int pages = 1 + op.nextInt(8);
            int shared = op.nextInt(pages + 1);
            int[] tokens = family(op.nextInt(4), pages);
            for (int i = shared * PAGE_SIZE; i < tokens.length; i++) {
                tokens[i] = uniqueToken++;
            }
            // under load: wait (polling, in lockstep) for running requests to finish until the device has room
            for (int tries = 0; freeDevice.freePages() < pages; tries++) {
                evict(pages - freeDevice.freePages());
                if (freeDevice.freePages() >= pages) {
                    break;
                }
                if (tries > 100_000) {
                    if (r == 0) {
                        group.count("request.noDeviceRoom");
                    }
                    return;
                }
                converge();
            }
            int[] dev = new int[pages];
            for (int i = 0; i < pages; i++) {
                dev[i] = freeDevice.poll();
            }
            int dupPages = cache.insert(tokens, 0, tokens.length, dev, 0) / PAGE_SIZE;
            for (int i = 0; i < dupPages; i++) {
                freeDevice.free(dev[i]);
            }
            RadixNode last = cache.lastInsertNode();
            cache.lock(last);
            for (int tries = 0; tries < 100_000 && group.groupInFlight >= MAX_FORWARDS_WITH_BACKUPS; tries++) {
                converge(); // back-pressure: wait, polling in lockstep, for a forward's copies to finish
            }
            List<Backup> backups = new ArrayList<>();
            if (group.groupInFlight < MAX_FORWARDS_WITH_BACKUPS) {
                CacheInternals.reserveByPolicy(cache, last, op.nextInt(4) != 0, backups);
            }
            Integer other = group.reservedPerStep.putIfAbsent(step, backups.size());
            if (other != null && other != backups.size()) {
                violations.add("rank " + r + " reserved " + backups.size() + " backups at step " + step
                    + " where another rank reserved " + other);
            }
            int[] plan = new int[LAYERS + DRAFT_LAYERS];
            int t = 0;
            int d = 0;
            for (int n = 0; n < plan.length; n++) {
                boolean takeDraft = d < DRAFT_LAYERS && (t == LAYERS || op.nextInt(3) == 0);
                plan[n] = takeDraft ? -(d++) - 1 : t++;
            }
            ForwardHandle h = CacheInternals.forward(cache.beginForward(backups));
            Job job = new Job(h, backups, Arrays.copyOfRange(dev, dupPages, pages), plan, last);
            for (int i = 0; i < backups.size(); i++) {
                registered.add(backups.get(i));
                jobOf.put(backups.get(i), job);
                indexInJob.put(backups.get(i), i);
            }
            requests.add(job);
            if (!jobs.offer(job)) {
                throw new IllegalStateException("forward queue full");
            }
            if (r == 0) {
                group.count(backups.isEmpty() ? "forward.noBackup" : "forward.withBackups");
            }
        }

        private void evict(int pages) {
            cache.evictDevice(pages, (arr, off, n) -> {
                for (int i = 0; i < n; i++) {
                    int page = arr[off + i];
                    for (Backup b : registered) {
                        if (b.state().terminal()) {
                            continue;
                        }
                        for (int k = 0; k < b.ownedPageCount(); k++) {
                            if (b.ownedDevicePage(k) == page) {
                                violations.add("rank " + r + " device page " + page + " freed while " + b + " holds it");
                            }
                        }
                    }
                    int tag = poisonTag++;
                    for (int l = 0; l < LAYERS; l++) {
                        write(false, l, page, tag);
                    }
                    for (int dl = 0; dl < DRAFT_LAYERS; dl++) {
                        write(true, dl, page, tag);
                    }
                    freeDevice.free(page);
                }
            });
        }

        private void drain() throws Exception {
            for (int i = 0; i < 1_000_000; i++) {
                converge();
                boolean busy = !requests.isEmpty();
                for (Backup b : registered) {
                    busy |= !b.state().terminal();
                }
                // every rank must see the same answer: decide on it at the barrier
                summary = new long[] {busy ? 1 : 0};
                group.barrier.await(60, TimeUnit.SECONDS);
                boolean anyBusy = !group.agreed || summary[0] == 1;
                group.barrier.await(60, TimeUnit.SECONDS);
                if (!anyBusy) {
                    return;
                }
            }
            throw new AssertionError("rank " + r + " did not drain");
        }

        private void checkEnd() {
            RadixTree tree = CacheInternals.tree(cache);
            tree.checkInvariants();
            BitSet used = new BitSet();
            RadixTestAccess.forEachNode(tree, n -> {
                if (n.pending() != null) {
                    violations.add("rank " + r + " node still pending at the end: " + n);
                }
                HostValue v = n.hostValue();
                if (v instanceof HostPages hp) {
                    if (hp.lanes().pageCount() != n.pageCount()
                        || hp.lanes().startPage() != RadixTestAccess.startPage(n)) {
                        violations.add("rank " + r + " lanes " + hp.lanes() + " do not describe " + n);
                    }
                    for (int i = 0; i < hp.ownedPageCount(); i++) {
                        int h = hp.hostPage(i);
                        if (used.get(h)) {
                            violations.add("rank " + r + " host page " + h + " referenced twice");
                        }
                        used.set(h);
                        for (int l = 0; l < LAYERS; l++) {
                            String m = hostMismatch(false, l, h, hostExpT[h][l]);
                            if (m != null) {
                                violations.add(m);
                            }
                        }
                        if (hostDraft[h]) {
                            for (int d = 0; d < DRAFT_LAYERS; d++) {
                                String m = hostMismatch(true, d, h, hostExpD[h][d]);
                                if (m != null) {
                                    violations.add(m);
                                }
                            }
                        }
                    }
                }
            });
            if (CacheInternals.hostAllocator(cache).allocatedPages() != used.cardinality()) {
                violations.add("rank " + r + " allocator holds " + CacheInternals.hostAllocator(cache).allocatedPages()
                    + " host pages but the tree references " + used.cardinality());
            }
            throwViolations();
            // everything comes back: device pages through eviction, host pages through host eviction
            for (int round = 0; round < 64 && tree.nodeCount() > 0; round++) {
                evict(Integer.MAX_VALUE);
                DstHarness.evictAllHost(tree, CacheInternals.hostAllocator(cache));
            }
            throwViolations();
            assertThat(tree.nodeCount()).as("rank %d nodes left", r).isZero();
            assertThat(freeDevice.freePages()).as("rank %d device pages back", r).isEqualTo(DEVICE_PAGES);
            CacheInternals.hostAllocator(cache).checkAllFree();
        }
    }
}
