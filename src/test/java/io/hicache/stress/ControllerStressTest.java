package io.hicache.stress;

import io.hicache.core.CacheInternals;
import io.hicache.core.AbortReason;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupState;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.HiCache;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.RadixNode;
import io.hicache.core.DevicePagePool;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Real-thread stress of the controller: agents on {@code AgentRunner}s ({@link ThreadingMode#DEDICATED}), a
 * forward thread per rank firing target and draft hooks at full speed (sometimes skipping one), the scheduler
 * thread reserving, beginning forwards, polling, aborting and evicting, a device thread per rank running the
 * simulated device, and injected copy faults and delayed completions. Two parts, each for
 * {@code hicache.stress.seconds} / 2 (default 20 s in all):
 * <ul>
 *   <li>one rank, free-running: aborts at any moment, device eviction and host-pool pressure; after every few
 *       operations the tree's invariants hold and the allocator holds exactly the host pages of committed nodes
 *       plus pending backups;</li>
 *   <li>a CP group of two ranks, each on its own threads with the in-process agreement, run in epochs (the same
 *       seeded decisions on every rank, each epoch drained before the next): every backup ends in the same state
 *       on both ranks, so a fault on one rank aborts the backup on the other.</li>
 * </ul>
 * At the end everything drains, every page is accounted for, and after {@code close()} the simulated devices
 * hold nothing and no host pool is open. Prints operations done and faults survived.
 */
class ControllerStressTest {
    static final int LAYERS = 4;
    static final int DRAFT_LAYERS = 2;
    static final int PAGE = 4;
    static final int DEVICE_PAGES = 256;
    /** Lease of the single-rank part, in virtual device nanoseconds. */
    static final long LEASE_NS = 2_000_000L;

    /** A forward handed to the forward thread; {@code stall} ones wait (past their lease) for {@code leaseSeen}. */
    record Forward(ForwardHandle handle, List<Backup> backups, boolean stall, AtomicBoolean leaseSeen) {
    }

    static long seconds() {
        return Long.getLong("hicache.stress.seconds", 20L);
    }

    static long seed() {
        return Long.getLong("hicache.stress.seed", System.nanoTime());
    }

    @Test
    void singleRankUnderFaultsAbortsAndEviction() throws Exception {
        long seed = seed();
        long openBefore = HostKvPool.openPoolBytes();
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(Math.max(1, seconds() / 2));
        Rank r = new Rank(seed, 0, 1, null, 48, 0.002, false);
        SplittableRandom rnd = new SplittableRandom(seed);
        long ops = 0;
        List<Backup> live = new ArrayList<>();
        try {
            r.start();
            while (System.nanoTime() < deadlineNs) {
                r.failIfBroken();
                ops += r.randomStep(rnd, live, true);
                if ((ops & 31) == 0) {
                    r.checkInvariants();
                }
            }
            r.finish(live);
            r.checkInvariants();
            assertThat(CacheInternals.tree(r.cache).hostPagesPending()).isZero();
            for (Backup b : live) {
                assertThat(b.state()).isIn(BackupState.COMMITTED, BackupState.ABORTED);
            }
        } finally {
            r.close();
        }
        assertThat(r.leaks()).as("simulated device after close").isEqualTo("clean");
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(openBefore);
        System.out.printf("stress single-rank seed=%d seconds=%d ops=%d %s%n", seed, seconds() / 2, ops, r.figures());
        assertThat(r.cache.metric(Metric.BACKUPS_COMMITTED)).isPositive();
        if (r.stallsStarted > 0) {
            // a forward stalled past its lease while its thread went on hooking: the lease fired
            assertThat(r.cache.metrics().abortedBy(AbortReason.LEASE_EXPIRED)).as("lease aborts").isPositive();
        }
    }

    @Test
    void cpGroupOfTwoRanksAgreesUnderFaults() throws Exception {
        long seed = seed();
        long openBefore = HostKvPool.openPoolBytes();
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(Math.max(1, seconds() / 2));
        InProcessRankAgreement agreement = new InProcessRankAgreement(2);
        Rank[] ranks = {new Rank(seed, 0, 2, agreement, 96, 0.003, true), new Rank(seed, 1, 2, agreement, 96, 0.0, true)};
        // one stop decision for both ranks, taken by the barrier's action: each rank reading the clock itself let
        // one rank stop while the other began an epoch whose agreement rounds then never closed
        AtomicBoolean stopAll = new AtomicBoolean();
        CyclicBarrier epochEnd = new CyclicBarrier(2, () -> stopAll.set(System.nanoTime() >= deadlineNs));
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long[] ops = new long[2];
        List<List<Backup>> all = List.of(new ArrayList<>(), new ArrayList<>());
        Thread[] schedulers = new Thread[2];
        try {
            for (Rank r : ranks) {
                r.start();
            }
            for (int i = 0; i < 2; i++) {
                Rank r = ranks[i];
                int rank = i;
                schedulers[i] = new Thread(() -> {
                    try {
                        SplittableRandom rnd = new SplittableRandom(seed); // the same decisions on every rank
                        List<Backup> mine = all.get(rank);
                        while (true) {
                            epochEnd.await(60, TimeUnit.SECONDS);
                            if (stopAll.get()) {
                                break;
                            }
                            ops[rank] += r.epoch(rnd, mine);
                        }
                        r.finish(mine);
                    } catch (Throwable t) {
                        failure.compareAndSet(null, t);
                        epochEnd.reset();
                    }
                }, "scheduler-" + i);
                schedulers[i].start();
            }
            for (Thread t : schedulers) {
                t.join();
            }
            if (failure.get() != null) {
                throw new AssertionError("CP stress failed (seed " + seed + ")", failure.get());
            }
            assertThat(all.get(0)).hasSameSizeAs(all.get(1));
            int agreedAborts = 0;
            for (int i = 0; i < all.get(0).size(); i++) {
                Backup a = all.get(0).get(i);
                Backup b = all.get(1).get(i);
                assertThat(a.seq()).isEqualTo(b.seq());
                assertThat(a.state()).as("backup %d on rank 0 and rank 1", a.seq()).isEqualTo(b.state());
                assertThat(a.state()).isIn(BackupState.COMMITTED, BackupState.ABORTED);
                if (a.abortReason() == AbortReason.RANK_FAILED || b.abortReason() == AbortReason.RANK_FAILED) {
                    agreedAborts++;
                }
            }
            System.out.printf("stress cp=2 seed=%d seconds=%d ops=%d rank0{%s} rank1{%s} abortsAgreedAcrossRanks=%d%n",
                seed, seconds() / 2, ops[0] + ops[1], ranks[0].figures(), ranks[1].figures(), agreedAborts);
            assertThat(ranks[0].cache.metric(Metric.BACKUPS_COMMITTED)).isPositive();
        } finally {
            for (Rank r : ranks) {
                r.close();
            }
        }
        for (Rank r : ranks) {
            assertThat(r.leaks()).as("simulated device after close").isEqualTo("clean");
        }
        assertThat(HostKvPool.openPoolBytes()).isEqualTo(openBefore);
    }

    /** One rank: its simulated device and device thread, its controller, its forward thread, its device pages. */
    static final class Rank {
        final int rank;
        final int cp;
        final SimulatedCudaRuntime rt;
        final DeviceKvLayout target;
        final DeviceKvLayout draft;
        final long targetBase;
        final long draftBase;
        final HiCache cache;
        final DevicePagePool pool = new DevicePagePool(DEVICE_PAGES);
        final BlockingQueue<Forward> forwards = new ArrayBlockingQueue<>(64);
        /** Scheduler-owned: the stalled forwards whose thread waits for their lease to be revoked. */
        final List<Forward> stalled = new ArrayList<>();
        final boolean stalls;
        /** Scheduler-owned: draws which forwards stall. */
        final SplittableRandom stallRnd;
        long stallsStarted;
        volatile long stallsHookedAfterRevocation;
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final SplittableRandom forwardRnd;
        final Thread device;
        final Thread forward;
        volatile boolean running = true;
        volatile long forwardsDone;
        long aborted;
        long evictedPages;

        Rank(long seed, int rank, int cp, InProcessRankAgreement agreement, int hostPages, double faultProbability,
             boolean epochs) {
            this.rank = rank;
            this.cp = cp;
            this.forwardRnd = new SplittableRandom(seed * 7 + rank);
            this.stalls = !epochs;
            this.stallRnd = new SplittableRandom(seed * 13 + rank);
            SimulatedCudaConfig.Builder cb = SimulatedCudaConfig.builder().seed(seed * 31 + rank)
                .delayedCompletions(0.05, 20_000);
            if (faultProbability > 0) {
                cb.copyFailureProbability(faultProbability, CudaError.LAUNCH_OUT_OF_RESOURCES);
            }
            rt = new SimulatedCudaRuntime(cb.build());
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(LAYERS)
                .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
            targetBase = rt.deviceMalloc(tb.packedBytes());
            target = tb.packedFrom(targetBase).build();
            DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MHA).layerCount(DRAFT_LAYERS)
                .pageSizeTokens(PAGE).bytesPerTokenPerBuffer(16).pageCount(DEVICE_PAGES);
            draftBase = rt.deviceMalloc(db.packedBytes());
            draft = db.packedFrom(draftBase).build();
            HiCache.Builder hb = HiCache.builder().runtime(rt).targetLayout(target)
                .draftLayout(draft).hostPages(hostPages).threadingMode(ThreadingMode.DEDICATED)
                .writePolicy(WritePolicy.WRITE_THROUGH).clock(rt::nowNs).leaseNs(epochs ? 0 : LEASE_NS)
                .checkThread(false).maxForwardsInFlight(8);
            if (cp > 1) {
                hb.cpGroup(cp, rank, OwnerLanes.Standard.ROUND_ROBIN, agreement);
            }
            cache = hb.build();
            device = new Thread(this::runDevice, "device-" + rank);
            forward = new Thread(this::runForwards, "forward-" + rank);
        }

        void start() {
            device.start();
            forward.start();
        }

        void runDevice() {
            while (running) {
                try {
                    if (!rt.advanceToNextEvent()) {
                        Thread.onSpinWait();
                    }
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                    return;
                }
            }
        }

        /** The engine's forward thread: per layer a kernel, then the hook; sometimes a layer is never stored. */
        void runForwards() {
            try {
                while (running || !forwards.isEmpty()) {
                    Forward f = forwards.poll(10, TimeUnit.MILLISECONDS);
                    if (f == null) {
                        continue;
                    }
                    ForwardHandle h = f.handle();
                    int stallAt = f.stall() ? forwardRnd.nextInt(LAYERS) : -1;
                    int skipTarget = forwardRnd.nextInt(100) == 0 ? forwardRnd.nextInt(LAYERS) : -1;
                    int skipDraft = forwardRnd.nextInt(100) == 0 ? forwardRnd.nextInt(DRAFT_LAYERS) : -1;
                    try {
                        for (int l = 0; l < LAYERS; l++) {
                            if (l == stallAt) {
                                stall(f);
                            }
                            rt.simulateKernel(cache.computeStream(), 2_000);
                            if (l != skipTarget) {
                                h.targetLayerStored(l);
                            }
                        }
                        for (int d = 0; d < DRAFT_LAYERS; d++) {
                            if (d != skipDraft) {
                                h.draftLayerStored(d);
                            }
                        }
                        h.endForward();
                    } catch (IllegalStateException e) {
                        // the forward sat in the queue (or stalled) past its lease: its handle was revoked, the
                        // forward is over
                        if (!e.getMessage().contains("lease expired")) {
                            throw e;
                        }
                        if (stallAt >= 0) {
                            stallsHookedAfterRevocation++;
                        }
                    }
                    forwardsDone++;
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        }

        /**
         * The forward thread stalls past the lease: a kernel longer than the lease (so the device clock passes the
         * deadline), then the thread waits until the scheduler saw the lease fire (or the backups end another way),
         * and goes on hooking its now revoked handle. Bounded by wall time: a lease that never fires fails the test.
         */
        void stall(Forward f) throws InterruptedException {
            rt.simulateKernel(cache.computeStream(), 3 * LEASE_NS);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!f.leaseSeen().get()) {
                if (System.nanoTime() > until) {
                    throw new AssertionError("rank " + rank + ": the lease of a stalled forward never fired in 60 s");
                }
                Thread.onSpinWait();
            }
        }

        /** Scheduler, after each poll: releases the stalled forwards whose backups were revoked or ended. */
        void noteStalls() {
            if (stalled.isEmpty()) {
                return;
            }
            stalled.removeIf(f -> {
                for (Backup b : f.backups()) {
                    if (b.abortReason() != null || b.state() == BackupState.COMMITTED
                        || b.state() == BackupState.ABORTED) {
                        f.leaseSeen().set(true);
                        return true;
                    }
                }
                return false;
            });
        }

        void failIfBroken() {
            if (failure.get() != null) {
                throw new AssertionError("rank " + rank + " thread failed", failure.get());
            }
        }

        /** One free-running scheduler step (single rank). Returns operations done. */
        int randomStep(SplittableRandom rnd, List<Backup> live, boolean allowAbort) throws InterruptedException {
            int ops = 0;
            cache.poll();
            noteStalls();
            ops++;
            int what = rnd.nextInt(10);
            if (what < 5) {
                RadixNode last = insert(rnd);
                if (last != null) {
                    List<Backup> list = new ArrayList<>();
                    CacheInternals.reserveByPolicy(cache, last, rnd.nextBoolean(), list);
                    ops += 2;
                    if (!list.isEmpty()) {
                        begin(list, live);
                        ops++;
                    }
                }
            } else if (what < 7 && allowAbort && !live.isEmpty()) {
                Backup b = live.get(rnd.nextInt(live.size()));
                if (cache.abort(b, rnd.nextBoolean() ? AbortReason.ENGINE : AbortReason.PREEMPTED)) {
                    aborted++;
                }
                ops++;
            } else if (what < 8) {
                evictedPages += cache.evictDevice(1 + rnd.nextInt(16), pool);
                ops++;
            }
            if (live.size() > 4096) {
                live.removeIf(b -> b.state() == BackupState.COMMITTED || b.state() == BackupState.ABORTED);
            }
            return ops;
        }

        void begin(List<Backup> list, List<Backup> live) throws InterruptedException {
            ForwardHandle h;
            while (true) {
                // a reservation whose lease ran out while the engine waited for a slot is no longer RESERVED
                // (the device clock jumps past a stalled forward's lease): the engine drops it
                if (list.removeIf(b -> b.state() != BackupState.RESERVED) && list.isEmpty()) {
                    return;
                }
                try {
                    h = CacheInternals.forward(cache.beginForward(list));
                    break;
                } catch (IllegalStateException e) {
                    if (!e.getMessage().contains("forwards with backups in flight")) {
                        throw e;
                    }
                    failIfBroken();
                    cache.poll(); // the engine waits for a slot
                    noteStalls();
                    Thread.onSpinWait();
                }
            }
            live.addAll(list);
            // 1 % of the forwards of a rank with leases stall past their lease (at most 2 at once, so the other
            // slots keep the stress going)
            boolean stall = stalls && stalled.size() < 2 && stallRnd.nextInt(100) == 0;
            Forward f = new Forward(h, List.copyOf(list), stall, new AtomicBoolean());
            if (stall) {
                stalled.add(f);
                stallsStarted++;
            }
            forwards.put(f);
        }

        /**
         * One CP epoch: the same seeded inserts and reservations on every rank (reserved before any forward
         * begins, so host room is decided on identical state), then the forwards, then a full drain.
         */
        int epoch(SplittableRandom rnd, List<Backup> mine) throws InterruptedException {
            int ops = 0;
            List<List<Backup>> batches = new ArrayList<>();
            int n = 1 + rnd.nextInt(6);
            for (int i = 0; i < n; i++) {
                RadixNode last = insert(rnd);
                ops++;
                if (last == null) {
                    continue;
                }
                List<Backup> list = new ArrayList<>();
                CacheInternals.reserveByPolicy(cache, last, rnd.nextBoolean(), list);
                ops++;
                if (!list.isEmpty()) {
                    batches.add(list);
                }
            }
            for (List<Backup> list : batches) {
                begin(list, mine);
                ops++;
            }
            drain();
            if (rnd.nextInt(3) == 0) {
                evictedPages += cache.evictDevice(1 + rnd.nextInt(32), pool);
                ops++;
            }
            return ops;
        }

        RadixNode insert(SplittableRandom rnd) {
            int pages = 1 + rnd.nextInt(8);
            int prefix = rnd.nextInt(6);
            if (pool.freePages() < pages) {
                evictedPages += cache.evictDevice(pages - pool.freePages(), pool);
                if (pool.freePages() < pages) {
                    return null;
                }
            }
            int[] tokens = new int[pages * PAGE];
            for (int i = 0; i < tokens.length; i++) {
                tokens[i] = i < 2 * PAGE ? prefix * 100_000 + i : rnd.nextInt(4) * 1000 + i;
            }
            int[] dev = new int[pages];
            for (int i = 0; i < pages; i++) {
                dev[i] = pool.poll();
            }
            int dupTokens = cache.insert(tokens, 0, tokens.length, dev, 0);
            pool.free(dev, 0, dupTokens / PAGE);
            return cache.lastInsertNode();
        }

        /** Polls until nothing is in flight (bounded by wall time: a stuck controller fails the test). */
        void drain() {
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (cache.backupsInFlight() > 0 || cache.loadsInFlight() > 0 || !forwards.isEmpty()) {
                failIfBroken();
                cache.poll();
                noteStalls();
                if (System.nanoTime() > until) {
                    throw new AssertionError("rank " + rank + " did not drain: " + cache.backupsInFlight()
                        + " backups in flight, " + forwards.size() + " forwards queued");
                }
                Thread.onSpinWait();
            }
        }

        void finish(List<Backup> live) {
            drain();
            failIfBroken();
        }

        void checkInvariants() {
            CacheInternals.tree(cache).checkInvariants();
            if (cp == 1) {
                assertThat((long) CacheInternals.hostAllocator(cache).allocatedPages()).as("allocator == committed + pending pages")
                    .isEqualTo(CacheInternals.tree(cache).hostPagesCommitted() + CacheInternals.tree(cache).hostPagesPending());
            }
            assertThat(cache.hostPool().budgetUsedPages()).isLessThanOrEqualTo(cache.hostPool().budgetCapacityPages());
        }

        String figures() {
            MetricsSnapshot.View m = cache.metricsView();
            return String.format("reserved=%d committed=%d aborted=%d(engine=%d preempted=%d cuda=%d lease=%d "
                    + "targetMissing=%d draftMissing=%d rankFailed=%d) noRoom=%d forwards=%d cudaErrorsSurvived=%d "
                    + "deviceOpsFailed=%d hostPagesEvicted=%d devicePagesEvicted=%d d2hBytes=%d commitP99Ns=%d "
                    + "stalls=%d stallsHookedAfterRevocation=%d",
                m.get(Metric.BACKUPS_RESERVED), m.get(Metric.BACKUPS_COMMITTED), m.get(Metric.BACKUPS_ABORTED),
                m.abortedBy(AbortReason.ENGINE), m.abortedBy(AbortReason.PREEMPTED), m.abortedBy(AbortReason.CUDA_ERROR),
                m.abortedBy(AbortReason.LEASE_EXPIRED), m.abortedBy(AbortReason.TARGET_LAYER_MISSING),
                m.abortedBy(AbortReason.DRAFT_LAYER_MISSING), m.abortedBy(AbortReason.RANK_FAILED),
                m.get(Metric.RESERVE_NO_ROOM), forwardsDone, m.get(Metric.CUDA_ERRORS), rt.opsFailed(),
                m.get(Metric.HOST_PAGES_EVICTED), evictedPages,
                m.get(Metric.D2H_TARGET_BYTES) + m.get(Metric.D2H_DRAFT_BYTES), m.commitLatency().quantileNs(0.99),
                stallsStarted, stallsHookedAfterRevocation);
        }

        void close() throws InterruptedException {
            running = false;
            forward.join(10_000);
            try {
                cache.close();
            } finally {
                device.join(10_000);
                if (rt.stickyErrorCode() == 0) {
                    rt.deviceFree(targetBase);
                    rt.deviceFree(draftBase);
                }
            }
        }

        String leaks() {
            SimulatedCudaRuntime.LeakReport r = rt.leakReport();
            return r.clean() ? "clean" : r.toString();
        }
    }
}
