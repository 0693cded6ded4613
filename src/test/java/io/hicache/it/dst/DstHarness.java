package io.hicache.it.dst;

import io.hicache.core.AbortReason;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.ControllerBuilder;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.internal.HostPages;
import io.hicache.core.LoadListener;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.HostLayout;
import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.MatchResult;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.radix.RadixTree;
import io.hicache.testkit.DevicePagePool;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * Deterministic simulation of the backup controller: one real {@link HiCacheController} (with its radix tree,
 * host pool and allocator) per CP rank on its own {@link SimulatedCudaRuntime}, driven by a scheduler seeded
 * from one number. Every choice (configuration, requests, hook order, agent duty cycles, device advances,
 * polls, aborts, evictions, faults) comes from one {@link SplittableRandom}, so a failing seed replays exactly.
 *
 * <p>The engine model: requests insert token sequences that share prefixes, reserve by the write policy (or
 * explicitly), and run a forward whose per-layer "kernels" write a fresh pattern into the request's new device
 * pages from a host function on the compute stream (so the bytes change in device time, in stream order),
 * followed by the layer's hook; draft layers are interleaved with the target layers. Engine calls that touch the
 * tree are identical on every rank and are issued only when the ranks agree on the state of every backup (a
 * lockstep engine); agent duty cycles, device advances and polls interleave freely per rank.
 *
 * <p>The expected-bytes model: when the hook for layer {@code l} fires, the expected content of each host page of
 * the forward's backups for layer {@code l} is what the compute stream will have written to the device page at
 * that point. Device pages the tree gives back (eviction) are overwritten at once with a new pattern, so a copy
 * that still reads them, or that reads a layer before its hook, leaves bytes that differ from the model.
 *
 * <p>With loads ({@link LoadBackDstTest}) the engine also loads host hits back: it matches prefixes that end in
 * host-only nodes (evicting device pages first when there are none), calls {@code loadBack} on every rank with
 * random quotas (the threshold is part of the configuration), sometimes through a device allocator that refuses
 * once (the evict-and-retry path), issues batches with {@code startLoading} at random points and in bursts (a
 * reuse of an event set that is certainly still in use must throw and change nothing), runs forwards that wait per
 * layer and observe the loaded bytes and times from a host function on the compute stream, and injects H2D copy
 * faults on one rank. Load checks: (l1) the pages of a load not yet agreed are never in the tree; (l2) after
 * LOADED every attached page holds the host bytes of every layer, target and draft; (l3) loads are agreed across
 * ranks and a failed one returns every page; (l4) no device page is owned twice (tree, load, free list) and none
 * is lost; (l5) the host-only chain of a load in flight stays protected; (l6) a forward's layer compute never
 * starts before the layer's load event and the copies before it completed, and never reads other bytes than the
 * host copy of an agreed load.
 *
 * <p>After every step {@link #checkAll()} verifies the invariants of the design; a violation throws
 * {@link AssertionError} with the recent steps. Single-threaded; not reusable after {@link #close()}.
 */
final class DstHarness implements AutoCloseable {
    static final int UNSET = -1;
    static final long BYTES_PER_TOKEN = 8;
    private static final int MAX_FORWARD_GROUPS = 5;
    private static final AbortReason[] ENGINE_REASONS = {AbortReason.REQUEST_CANCELLED, AbortReason.PREEMPTED,
        AbortReason.ENGINE};

    // ---- configuration, all derived from the seed
    final long seed;
    final SplittableRandom rnd;
    final int cp;
    final OwnerLanes lanes;
    final int layers;
    final int draftLayers;
    final int pageSize;
    final int devicePages;
    final int hostPages;
    final WritePolicy policy;
    final BackupMode mode;
    final long leaseNs;
    final double copyFailureProbability;
    final double delayProbability;
    final boolean stickyRun;
    final int steps;
    final int maxRequestPages;
    final AttentionKind attention;
    final HostLayout hostLayout;
    /** Load-back steps are part of the schedule (the load-back suite); false keeps the backup suite's schedules. */
    final boolean loads;
    final int loadThresholdTokens;
    final double h2dFaultProbability;
    final double refuseAllocationProbability;
    /**
     * The lease suite ({@link LeaseDstTest}): several forwards open at once, short leases, few forward slots, so
     * leases expire while the forward goes on hooking its old handle and the slot is reused right after.
     */
    final boolean leases;
    final int maxOpenForwards;
    final int maxForwardsInFlight;

    final Rank[] ranks;
    private final DevicePagePool freeDevice;
    /** Backups not yet terminal on every rank, by sequence number (identical on every rank). */
    private final LinkedHashMap<Long, Rec> recs = new LinkedHashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final List<Request> requests = new ArrayList<>();
    private final int[][] familyTokens;
    private int uniqueToken = 1_000_000;
    /** Forwards in progress (at most {@link #maxOpenForwards}), in the order they began. */
    private final List<Forward> opens = new ArrayList<>();
    private int nextTag = 2;
    private int nextGroup;
    private int nextForwardId;
    private boolean stickyInjected;
    private boolean closed;
    private boolean manualHostEviction;
    /** Set while controllers close: device pages they return are only accounted, not checked or overwritten. */
    private boolean closing;
    // ---- load-back model
    private static final int[] REFUSED = new int[0];
    private final List<LoadRec> loadRecs = new ArrayList<>();
    private final List<LoadRec> queuedLoads = new ArrayList<>();
    private final Map<LoadOp, LoadRec> recOfOp = new IdentityHashMap<>();
    /** The ring of load event sets as the harness expects it: the batch that last used each set. */
    private final Batch[] ring = new Batch[3];
    private int ringNext;
    private int nextLoadId;
    /** Rank 0's allocation decisions during one loadBack, replayed by the other ranks' allocators. */
    private final List<int[]> allocScript = new ArrayList<>();
    private boolean refuseNextAllocation;
    private long hostPagesEvictedSeen;
    private final String[] trace = new String[Boolean.getBoolean("hicache.dst.trace") ? 2_000 : 40];
    private long traceCount;
    final Map<String, Integer> stats = new HashMap<>();

    DstHarness(long seed) {
        this(seed, false);
    }

    DstHarness(long seed, boolean loads) {
        this(seed, loads, false);
    }

    DstHarness(long seed, boolean loads, boolean leases) {
        this.seed = seed;
        this.loads = loads;
        this.leases = leases;
        this.rnd = new SplittableRandom(seed);
        this.cp = 1 + rnd.nextInt(4);
        OwnerLanes l = OwnerLanes.values()[rnd.nextInt(OwnerLanes.values().length)];
        this.lanes = cp == 1 ? OwnerLanes.ROUND_ROBIN : l; // a single rank keeps the controller's default
        this.layers = 1 + rnd.nextInt(4);
        this.draftLayers = rnd.nextInt(3);
        this.pageSize = 1 << rnd.nextInt(3);
        this.devicePages = 24 + rnd.nextInt(24);
        int hostPagesDrawn = 4 + rnd.nextInt(20);
        int p = rnd.nextInt(100);
        this.policy = p < 60 ? WritePolicy.WRITE_THROUGH : p < 85 ? WritePolicy.WRITE_THROUGH_SELECTIVE
            : WritePolicy.WRITE_BACK;
        this.mode = rnd.nextInt(100) < 15 ? BackupMode.ALL_LAYERS : BackupMode.LAYERED;
        long leaseDrawn = rnd.nextInt(5) == 0 ? 40_000 + rnd.nextInt(400_000) : 0;
        this.copyFailureProbability = rnd.nextInt(10) < 3 ? rnd.nextDouble() * 0.01 : 0;
        this.delayProbability = rnd.nextInt(10) < 3 ? 0.3 : 0;
        this.stickyRun = cp == 1 && rnd.nextInt(10) == 0;
        int stepsDrawn = 150 + rnd.nextInt(150);
        this.maxRequestPages = 2 + rnd.nextInt(6);
        this.attention = rnd.nextBoolean() ? AttentionKind.MHA : AttentionKind.MLA;
        this.hostLayout = HostLayout.values()[rnd.nextInt(HostLayout.values().length)];
        boolean coalesce = rnd.nextBoolean();
        boolean batched = rnd.nextBoolean();
        boolean batchedSupported = rnd.nextBoolean();
        if (loads) {
            // load-back needs host-only chains that survive a while: usually a host pool larger than the device's
            this.hostPages = rnd.nextInt(4) == 0 ? hostPagesDrawn : devicePages + rnd.nextInt(2 * devicePages);
            this.steps = 3 * stepsDrawn;
            int t = rnd.nextInt(4);
            this.loadThresholdTokens = t == 0 ? 0 : t == 1 ? 1 : t == 2 ? 2 * pageSize : 10;
            this.h2dFaultProbability = rnd.nextInt(3) == 0 ? 0.25 : 0.03;
            this.refuseAllocationProbability = rnd.nextInt(3) == 0 ? 0.5 : 0.1;
        } else {
            this.hostPages = hostPagesDrawn;
            this.steps = stepsDrawn;
            this.loadThresholdTokens = 10;
            this.h2dFaultProbability = 0;
            this.refuseAllocationProbability = 0;
        }

        if (leases) {
            // drawn after the shared configuration, so the other suites' schedules stay as they were
            this.leaseNs = 20_000L + rnd.nextInt(120_000);
            this.maxOpenForwards = 2 + rnd.nextInt(3);
            this.maxForwardsInFlight = 1 + rnd.nextInt(3);
        } else {
            this.leaseNs = leaseDrawn;
            this.maxOpenForwards = 1;
            this.maxForwardsInFlight = 8;
        }

        int families = 2 + rnd.nextInt(4);
        familyTokens = new int[families][];
        for (int f = 0; f < families; f++) {
            familyTokens[f] = new int[maxRequestPages * pageSize];
            for (int i = 0; i < familyTokens[f].length; i++) {
                familyTokens[f][i] = f * 100_000 + i;
            }
        }

        ranks = new Rank[cp];
        InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        try {
            for (int r = 0; r < cp; r++) {
                ranks[r] = new Rank(r, agreement, coalesce, batched, batchedSupported);
            }
        } catch (RuntimeException | Error e) {
            for (Rank rank : ranks) {
                if (rank != null) {
                    rank.closeQuietly();
                }
            }
            throw e;
        }
        freeDevice = new DevicePagePool(devicePages);
        for (Rank rank : ranks) {
            rank.freeModel.set(0, devicePages);
        }
    }

    /** One CP rank: its device, KV layouts, controller and the byte models. */
    final class Rank {
        final int r;
        final SimulatedCudaRuntime rt;
        final DeviceKvLayout target;
        final DeviceKvLayout draft;
        final long targetBase;
        final long draftBase;
        final MemorySegment targetDev;
        final MemorySegment draftDev;
        final HiCacheController ctl;
        final RadixTree tree;
        /** Tag of the newest write queued for (layer, device page); the bytes follow once it runs. */
        final int[][] devTagT;
        final int[][] devTagD;
        /** Expected content of (host page, layer): (tag << 32 | device page) when the layer's hook fired. */
        final long[][] expT;
        final long[][] expD;
        final boolean[] hostDraft;
        final List<Long> committedSeqs = new ArrayList<>();
        /** Device pages this rank's engine holds free (rank 0's also sit, in order, in {@code freeDevice}). */
        final BitSet freeModel = new BitSet();
        final HarnessAllocator allocator = new HarnessAllocator(this);
        /** Load batches whose load-stream operations the op listener times. */
        final List<Batch> timedBatches = new ArrayList<>();
        final long loadStream;
        long polls;

        Rank(int r, InProcessRankAgreement agreement, boolean coalesce, boolean batched, boolean batchedSupported) {
            this.r = r;
            SimulatedCudaConfig.Builder cb = SimulatedCudaConfig.builder().seed(seed * 31 + r)
                .batchedCopySupported(batchedSupported);
            if (copyFailureProbability > 0) {
                cb.copyFailureProbability(copyFailureProbability, CudaError.UNKNOWN);
            }
            if (delayProbability > 0) {
                cb.delayedCompletions(delayProbability, 20_000);
            }
            rt = new SimulatedCudaRuntime(cb.build());
            rt.checkUseAfterFree(true);
            boolean traceOps = Boolean.getBoolean("hicache.dst.trace");
            if (traceOps || loads) {
                rt.setOpListener((op, type, stream, startNs, endNs, err) -> {
                    if (traceOps) {
                        trace("  rank " + r + " device op " + op + " type " + type + " stream " + stream + " " + startNs
                            + ".." + endNs + (err != 0 ? " ERROR " + err : ""));
                    }
                    onDeviceOp(this, op, type, stream, endNs);
                });
            }
            DeviceKvLayout.Builder tb = DeviceKvLayout.builder(attention).layerCount(layers).pageSizeTokens(pageSize)
                .bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(devicePages);
            long tBytes = tb.packedBytes();
            targetBase = rt.deviceMalloc(tBytes);
            target = tb.packedFrom(targetBase).build();
            targetDev = rt.deviceMemory(targetBase, tBytes);
            if (draftLayers > 0) {
                DeviceKvLayout.Builder db = DeviceKvLayout.builder(attention).layerCount(draftLayers)
                    .pageSizeTokens(pageSize).bytesPerTokenPerBuffer(BYTES_PER_TOKEN).pageCount(devicePages);
                long dBytes = db.packedBytes();
                draftBase = rt.deviceMalloc(dBytes);
                draft = db.packedFrom(draftBase).build();
                draftDev = rt.deviceMemory(draftBase, dBytes);
            } else {
                draftBase = 0;
                draft = null;
                draftDev = null;
            }
            ControllerBuilder hb = HiCacheController.builder().runtime(rt).targetLayout(target)
                .draftLayout(draft).hostPages(hostPages).hostLayout(hostLayout).threadingMode(ThreadingMode.INVOKER)
                .clock(rt::nowNs).leaseNs(leaseNs).checkThread(false).writePolicy(policy).backupMode(mode)
                .coalesce(coalesce).batchedCopies(batched).listener(new Listener(this))
                .maxForwardsInFlight(maxForwardsInFlight);
            if (cp > 1) {
                hb.cpGroup(cp, r, lanes, agreement);
            }
            if (loads) {
                // this harness models loads that become device hits at agreement; LoadOverlapDstTest covers the
                // same-forward LOADING state
                hb.loadThresholdTokens(loadThresholdTokens).loadListener(new Loads(this))
                    .loadOverlap(io.hicache.core.LoadOverlap.PREVIOUS_BATCH, "DST model of batch-ahead loads");
            }
            try {
                ctl = hb.build();
            } catch (RuntimeException e) {
                rt.close();
                throw e;
            }
            loadStream = ctl.loadStream().handle();
            tree = ctl.tree();
            devTagT = new int[layers][devicePages];
            devTagD = new int[Math.max(draftLayers, 0)][devicePages];
            expT = new long[hostPages][layers];
            expD = new long[hostPages][Math.max(draftLayers, 0)];
            hostDraft = new boolean[hostPages];
            for (long[] row : expT) {
                Arrays.fill(row, UNSET);
            }
            for (long[] row : expD) {
                Arrays.fill(row, UNSET);
            }
            for (int pg = 0; pg < devicePages; pg++) {
                for (int l = 0; l < layers; l++) {
                    devTagT[l][pg] = 1;
                    writeDevice(false, l, pg, 1);
                }
                for (int d = 0; d < draftLayers; d++) {
                    devTagD[d][pg] = 1;
                    writeDevice(true, d, pg, 1);
                }
            }
        }

        void writeDevice(boolean isDraft, int layer, int page, int tag) {
            DeviceKvLayout l = isDraft ? draft : target;
            MemorySegment seg = isDraft ? draftDev : targetDev;
            long base = isDraft ? draftBase : targetBase;
            long words = l.pageBytes() / 8;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = l.pageAddress(layer, buf, page) - base;
                for (long w = 0; w < words; w++) {
                    seg.set(ValueLayout.JAVA_LONG_UNALIGNED, off + w * 8, pattern(tag, r, isDraft, layer, buf, page, w));
                }
            }
        }

        /**
         * Null when host page {@code hostPage} holds the copy of device page {@code devPage} written with {@code tag};
         * else a description of the first differing word.
         */
        String hostMismatch(boolean isDraft, int layer, int hostPage, long expected) {
            if (expected == UNSET) {
                return "rank " + r + (isDraft ? " draft" : " target") + " layer " + layer + " host page " + hostPage
                    + ": published although its hook never fired";
            }
            int tag = (int) (expected >>> 32);
            int devPage = (int) expected;
            DeviceKvLayout l = isDraft ? draft : target;
            HostKvPool pool = isDraft ? ctl.draftHostPool() : ctl.hostPool();
            MemorySegment seg = pool.segment();
            long base = pool.baseAddress();
            long words = l.pageBytes() / 8;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long off = pool.pageAddress(layer, buf, hostPage) - base;
                long pitch = pool.tokenPitchBytes();
                for (long w = 0; w < words; w++) {
                    long want = pattern(tag, r, isDraft, layer, buf, devPage, w);
                    long byteInPage = w * 8;
                    long at = off + (byteInPage / BYTES_PER_TOKEN) * pitch + byteInPage % BYTES_PER_TOKEN;
                    long got = seg.get(ValueLayout.JAVA_LONG_UNALIGNED, at);
                    if (got != want) {
                        return "rank " + r + (isDraft ? " draft" : " target") + " layer " + layer + " host page "
                            + hostPage + " buf " + buf + " word " + w + ": expected the copy of device page " + devPage
                            + " with tag " + tag + " but found other bytes";
                    }
                }
            }
            return null;
        }

        /** True when layer {@code layer} of device page {@code devPage} holds the bytes of host page {@code hostPage}. */
        boolean deviceEqualsHost(boolean isDraft, int layer, int devPage, int hostPage) {
            DeviceKvLayout l = isDraft ? draft : target;
            MemorySegment dev = isDraft ? draftDev : targetDev;
            long devBase = isDraft ? draftBase : targetBase;
            HostKvPool pool = isDraft ? ctl.draftHostPool() : ctl.hostPool();
            MemorySegment host = pool.segment();
            long hostBase = pool.baseAddress();
            long pitch = pool.tokenPitchBytes();
            long words = l.pageBytes() / 8;
            for (int buf = 0; buf < l.bufferCount(); buf++) {
                long devOff = l.pageAddress(layer, buf, devPage) - devBase;
                long hostOff = pool.pageAddress(layer, buf, hostPage) - hostBase;
                for (long w = 0; w < words; w++) {
                    long byteInPage = w * 8;
                    long at = hostOff + (byteInPage / BYTES_PER_TOKEN) * pitch + byteInPage % BYTES_PER_TOKEN;
                    if (dev.get(ValueLayout.JAVA_LONG_UNALIGNED, devOff + byteInPage)
                        != host.get(ValueLayout.JAVA_LONG_UNALIGNED, at)) {
                        return false;
                    }
                }
            }
            return true;
        }

        void closeQuietly() {
            try {
                ctl.close();
            } catch (RuntimeException ignored) {
                // cleanup after a failed construction
            }
            rt.close();
        }
    }


    // ------------------------------------------------------------------ the run

    /** Runs the seeded scenario: {@link #steps} random steps with checks after each, then the drain and final checks. */
    void run() {
        for (int i = 0; i < steps; i++) {
            step();
            checkAll();
        }
        finish();
    }

    private void count(String what) {
        stats.merge(what, 1, Integer::sum);
    }

    private void trace(String what) {
        trace[(int) (traceCount++ % trace.length)] = what;
    }

    /** The last steps, oldest first, for failure messages. */
    String recentSteps() {
        StringBuilder sb = new StringBuilder();
        long from = Math.max(0, traceCount - trace.length);
        for (long i = from; i < traceCount; i++) {
            sb.append("\n  #").append(i).append(' ').append(trace[(int) (i % trace.length)]);
        }
        return sb.toString();
    }

    String describe() {
        return "cp=" + cp + " lanes=" + lanes + " layers=" + layers + "+" + draftLayers + " pageSize=" + pageSize
            + " devicePages=" + devicePages + " hostPages=" + hostPages + " policy=" + policy + " mode=" + mode
            + " leaseNs=" + leaseNs + " copyFailureP=" + String.format("%.3f", copyFailureProbability) + " delayP="
            + delayProbability + " sticky=" + stickyRun + " steps=" + steps + " attention=" + attention
            + " hostLayout=" + hostLayout + (leases ? " maxOpenForwards=" + maxOpenForwards + " maxForwardsInFlight="
            + maxForwardsInFlight : "") + (loads ? " loadThreshold=" + loadThresholdTokens + " h2dFaultP="
            + h2dFaultProbability + " refuseP=" + refuseAllocationProbability : "");
    }

    private void step() {
        int k = rnd.nextInt(100);
        if (stickyRun && !stickyInjected && rnd.nextInt(steps) == 0) {
            injectSticky();
            return;
        }
        if (loads && !stickyInjected && rnd.nextInt(100) < 16 && loadStep()) {
            return;
        }
        if (k < 12) {
            if (opens.size() < maxOpenForwards && !stickyInjected && consistent()) {
                engineRequest();
                return;
            }
        } else if (k < 40) {
            if (!opens.isEmpty()) {
                forwardStep(opens.get(rnd.nextInt(opens.size())));
                return;
            }
        } else if (k < 42) {
            if (!stickyInjected && consistent() && rnd.nextBoolean()) {
                engineAbort();
                return;
            }
        } else if (k < 48) {
            if (!stickyInjected && consistent()) {
                engineMatch();
                return;
            }
        } else if (k < 52) {
            if (!stickyInjected && consistent()) {
                engineEvict(1 + rnd.nextInt(Math.max(1, devicePages / 4)));
                return;
            }
        } else if (k < 57) {
            if (!stickyInjected && consistent()) {
                finishRequests();
                return;
            }
        }
        int j = rnd.nextInt(3);
        Rank rank = ranks[rnd.nextInt(cp)];
        if (j == 0) {
            agentStep(rank, rnd.nextBoolean());
        } else if (j == 1) {
            deviceStep(rank);
        } else {
            pollStep(rank);
        }
    }

    private void agentStep(Rank rank, boolean submitter) {
        trace((submitter ? "submitter" : "completion") + ".doWork rank " + rank.r);
        try {
            if (submitter) {
                rank.ctl.submitterAgent().doWork();
            } else {
                rank.ctl.completionAgent().doWork();
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private void deviceStep(Rank rank) {
        try {
            if (rnd.nextBoolean()) {
                trace("advanceToNextEvent rank " + rank.r);
                rank.rt.advanceToNextEvent();
            } else {
                long dt = rnd.nextInt(30_000);
                trace("advanceTo now+" + dt + " rank " + rank.r);
                rank.rt.advanceTo(rank.rt.nowNs() + dt);
            }
        } catch (CudaException e) {
            if (!stickyInjected) {
                throw e;
            }
        }
    }

    private void pollStep(Rank rank) {
        trace("poll rank " + rank.r);
        rank.ctl.poll();
        rank.polls++;
        if (loads) {
            onLoadsPolled(rank);
        }
        throwViolations();
    }

    private void injectSticky() {
        trace("injectStickyError rank 0");
        count("sticky");
        stickyInjected = true;
        ranks[0].rt.injectStickyError(CudaError.ILLEGAL_ADDRESS);
        opens.clear();
    }

    // ------------------------------------------------------------------ lockstep gate

    private static int stateClass(BackupState s) {
        return switch (s) {
            case COMMITTED -> 1;
            case ABORTED -> 2;
            default -> 0;
        };
    }

    /** Loads in flight (queued or issued), loaded, failed. */
    private static int loadClass(LoadOp.State s) {
        return switch (s) {
            case LOADED -> 1;
            case FAILED -> 2;
            default -> 0;
        };
    }

    /**
     * True when every rank shows every backup in the same tree-visible state (pending, committed or aborted) and
     * every load in the same state (in flight, loaded or failed).
     */
    private boolean consistent() {
        for (LoadRec rec : loadRecs) {
            int c = loadClass(rec.op[0].state());
            for (int r = 1; r < cp; r++) {
                if (loadClass(rec.op[r].state()) != c) {
                    return false;
                }
            }
        }
        for (Rec rec : recs.values()) {
            int c = stateClass(rec.b[0].state());
            for (int r = 1; r < cp; r++) {
                if (stateClass(rec.b[r].state()) != c) {
                    return false;
                }
            }
        }
        return true;
    }

    private int forwardGroupsInFlight() {
        Set<Integer> groups = new HashSet<>();
        for (Rec rec : recs.values()) {
            for (Backup b : rec.b) {
                if (b.state() == BackupState.COPYING || b.state() == BackupState.DRAINING) {
                    groups.add(rec.group);
                }
            }
        }
        return groups.size();
    }

    // ------------------------------------------------------------------ engine steps (identical on every rank)

    private int[] requestTokens(int pages) {
        int[] base = familyTokens[rnd.nextInt(familyTokens.length)];
        int shared = rnd.nextInt(pages + 1);
        if (rnd.nextInt(3) == 0) {
            shared = pages;
        }
        int[] t = new int[pages * pageSize];
        System.arraycopy(base, 0, t, 0, shared * pageSize);
        for (int i = shared * pageSize; i < t.length; i++) {
            t[i] = uniqueToken++;
        }
        return t;
    }

    /**
     * An engine shares with a new request only KV whose forward has been launched: a request whose prefix another
     * open forward has yet to write would attend over KV not computed yet (and a write-back of that prefix, ordered
     * after the compute stream's work so far, would copy it unwritten). Where {@code tokens} would share a page an
     * open forward still writes, they diverge from the first such page on, with fresh tokens (no random draw).
     */
    private void divergeFromPagesBeingWritten(int[] tokens) {
        int pages = tokens.length / pageSize;
        int keep = pages;
        for (Forward f : opens) {
            int[] other = f.req.tokens;
            int same = 0;
            int max = Math.min(tokens.length, other.length);
            while (same < max && tokens[same] == other[same]) {
                same++;
            }
            if (same / pageSize > f.req.firstNewPage) {
                keep = Math.min(keep, f.req.firstNewPage);
            }
        }
        if (keep < pages) {
            for (int i = keep * pageSize; i < tokens.length; i++) {
                tokens[i] = uniqueToken++;
            }
            trace("request diverges after " + keep + " pages: an open forward still writes the next");
            count("request.divergedFromOpenForward");
        }
    }

    private void engineRequest() {
        int pages = 1 + rnd.nextInt(maxRequestPages);
        int[] tokens = requestTokens(pages);
        divergeFromPagesBeingWritten(tokens);
        if (freeDevice.freePages() < pages) {
            engineEvict(pages - freeDevice.freePages());
            if (freeDevice.freePages() < pages) {
                trace("request of " + pages + " pages skipped: no device room");
                count("request.noDeviceRoom");
                return;
            }
        }
        int[] dev = new int[pages];
        for (int i = 0; i < pages; i++) {
            dev[i] = freeDevice.poll();
            for (Rank rank : ranks) {
                takeDevice(rank, dev[i]);
            }
        }
        int dup = -1;
        RadixNode[] last = new RadixNode[cp];
        for (Rank rank : ranks) {
            int d = rank.tree.insert(tokens, 0, tokens.length, dev, 0);
            if (dup >= 0 && d != dup) {
                fail("insert found " + d + " tokens present on rank " + rank.r + " but " + dup + " on rank 0");
            }
            dup = d;
            last[rank.r] = rank.tree.lastInsertNode();
        }
        int dupPages = dup / pageSize;
        for (int i = 0; i < dupPages; i++) {
            freeDevice.free(dev[i]);
            for (Rank rank : ranks) {
                rank.freeModel.set(dev[i]);
            }
        }
        int[] newPages = Arrays.copyOfRange(dev, dupPages, pages);
        trace("request " + pages + " pages (" + dupPages + " present) new device pages " + Arrays.toString(newPages));
        count("request");
        Request req = new Request(last, cp, newPages, tokens, dupPages);
        if (!last[0].isRoot()) {
            for (Rank rank : ranks) {
                rank.tree.lock(last[rank.r]);
            }
        }
        requests.add(req);

        List<List<Backup>> per = new ArrayList<>();
        for (int r = 0; r < cp; r++) {
            per.add(new ArrayList<>());
        }
        boolean withDraft = draftLayers > 0 && rnd.nextInt(4) != 0;
        int group = nextGroup++;
        List<Rec> forwardRecs = new ArrayList<>();
        if (forwardGroupsInFlight() < MAX_FORWARD_GROUPS && !last[0].isRoot() && !pathBeingWritten(last[0])) {
            if (rnd.nextInt(5) == 0) {
                boolean can = ranks[0].tree.canBackUp(last[0]);
                if (can) {
                    for (Rank rank : ranks) {
                        Backup b = rank.ctl.reserve(last[rank.r], withDraft);
                        if (b != null) {
                            per.get(rank.r).add(b);
                        }
                    }
                    trace("reserve explicit -> " + per.get(0).size());
                }
            } else {
                for (Rank rank : ranks) {
                    long skippedBefore = rank.ctl.metrics().snapshot().skipped();
                    rank.ctl.reserveByPolicy(last[rank.r], withDraft, per.get(rank.r));
                    checkNoSilentSkip(rank, last[rank.r], skippedBefore);
                }
                trace("reserveByPolicy -> " + per.get(0).size());
            }
            for (int r = 1; r < cp; r++) {
                if (per.get(r).size() != per.get(0).size()) {
                    fail("rank " + r + " reserved " + per.get(r).size() + " backups but rank 0 reserved "
                        + per.get(0).size());
                }
            }
            for (int i = 0; i < per.get(0).size(); i++) {
                Backup[] bs = new Backup[cp];
                for (int r = 0; r < cp; r++) {
                    bs[r] = per.get(r).get(i);
                }
                forwardRecs.add(register(bs, group));
            }
            // sometimes the engine drops a reservation before its forward starts
            if (!forwardRecs.isEmpty() && rnd.nextInt(10) == 0) {
                int idx = rnd.nextInt(forwardRecs.size());
                Rec rec = forwardRecs.remove(idx);
                AbortReason reason = ENGINE_REASONS[rnd.nextInt(ENGINE_REASONS.length)];
                trace("abort RESERVED seq " + rec.seq + " " + reason);
                for (int r = 0; r < cp; r++) {
                    ranks[r].ctl.abort(rec.b[r], reason);
                    per.get(r).remove(idx);
                }
            }
        }
        count(forwardRecs.isEmpty() ? "forward.noBackup" : "forward.withBackups");
        ForwardHandle[] h = new ForwardHandle[cp];
        int[] counts = new int[cp];
        Arrays.fill(counts, forwardRecs.size());
        boolean noSlot = false;
        for (Rank rank : ranks) {
            try {
                h[rank.r] = rank.ctl.beginForward(per.get(rank.r));
            } catch (IllegalStateException e) {
                // every slot is leased (forwards in flight, or handles that have not let go): the engine drops
                // this forward's reservations on every rank and runs it without backups
                if (!leases || !e.getMessage().contains("forwards with backups in flight")) {
                    throw e;
                }
                noSlot = true;
            }
        }
        if (noSlot) {
            trace("beginForward: no free slot on some rank; reservations dropped");
            count("forward.noSlot");
            for (Rec rec : forwardRecs) {
                for (Rank rank : ranks) {
                    rank.ctl.abort(rec.b[rank.r], AbortReason.ENGINE);
                }
            }
            for (Rank rank : ranks) {
                if (h[rank.r] == null) {
                    h[rank.r] = rank.ctl.beginForward(List.of());
                    counts[rank.r] = 0;
                }
            }
            forwardRecs = new ArrayList<>();
        }
        Forward f = new Forward(h, forwardRecs, req, plan(), nextForwardId++, counts);
        trace("forward " + f.id + " begins with " + forwardRecs.size() + " backups");
        opens.add(f);
    }

    /**
     * Nothing is skipped silently: after {@code reserveByPolicy}, every node of the path that is neither backed up
     * nor pending was counted under a {@code WritePolicy.SkipReason} by that call (loads in flight, failed loads,
     * lease expiries and CP ranks included: a node below a loading chain is reserved like any other).
     */
    private void checkNoSilentSkip(Rank rank, RadixNode last, long skippedBefore) {
        long notBackedUp = 0;
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            if (!n.isBackedUp()) {
                notBackedUp++;
            }
        }
        long counted = rank.ctl.metrics().snapshot().skipped() - skippedBefore;
        if (counted != notBackedUp) {
            fail("rank " + rank.r + ": reserveByPolicy left " + notBackedUp + " nodes of the path without a backup but"
                + " counted " + counted + " as skipped");
        }
        count(notBackedUp == 0 ? "reserve.pathCovered" : "reserve.pathSkipped");
    }

    /**
     * True when the path to {@code last} holds a page another open forward has not finished writing: an engine
     * does not back up KV still being computed (the expected bytes at a hook would be overtaken by that forward's
     * later writes, which no copy is ordered against).
     */
    private boolean pathBeingWritten(RadixNode last) {
        if (opens.isEmpty()) {
            return false;
        }
        BitSet writing = new BitSet(devicePages);
        for (Forward f : opens) {
            for (int p : f.req.newPages) {
                writing.set(p);
            }
        }
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            if (n.hasDeviceValue()) {
                for (int i = 0; i < n.pageCount(); i++) {
                    if (writing.get(n.devicePage(i))) {
                        count("reserve.pathBeingWritten");
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** Target layers in order, draft layers in order interleaved among them, then END; sometimes a hook is left out. */
    private int[] plan() {
        int[] p = new int[layers + draftLayers + 1];
        int t = 0;
        int d = 0;
        int n = 0;
        boolean skips = mode == BackupMode.LAYERED;
        while (t < layers || d < draftLayers) {
            boolean takeDraft = d < draftLayers && (t == layers || rnd.nextInt(3) == 0);
            if (takeDraft) {
                boolean skip = skips && rnd.nextInt(25) == 0;
                p[n++] = ((skip ? Forward.DRAFT_NO_HOOK : Forward.DRAFT) << 16) | d++;
            } else {
                boolean skip = skips && rnd.nextInt(60) == 0;
                p[n++] = ((skip ? Forward.TARGET_NO_HOOK : Forward.TARGET) << 16) | t++;
            }
        }
        p[n] = Forward.END << 16;
        return p;
    }

    private Rec register(Backup[] bs, int group) {
        long seq = bs[0].seq();
        for (int r = 1; r < cp; r++) {
            if (bs[r].seq() != seq || bs[r].pageCount() != bs[0].pageCount()) {
                fail("rank " + r + " reserved seq " + bs[r].seq() + " (" + bs[r].pageCount() + " pages) where rank 0 "
                    + "reserved seq " + seq + " (" + bs[0].pageCount() + " pages)");
            }
        }
        RadixNode node = bs[0].node();
        int[] allDev = new int[node.pageCount()];
        node.copyDevicePages(allDev, 0);
        Rec rec = new Rec(seq, bs, allDev, bs[0].withDraft(), RadixTestAccess.startPage(node), node.pageCount(), group);
        if (recs.put(seq, rec) != null) {
            fail("sequence number " + seq + " reserved twice");
        }
        for (Rank rank : ranks) {
            Backup b = bs[rank.r];
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int hp = b.hostPage(i);
                Arrays.fill(rank.expT[hp], UNSET);
                Arrays.fill(rank.expD[hp], UNSET);
                rank.hostDraft[hp] = b.withDraft();
            }
        }
        count("reserved");
        return rec;
    }

    private void forwardStep(Forward f) {
        int op = f.plan[f.pos++];
        int kind = op >>> 16;
        int layer = op & 0xFFFF;
        try {
            switch (kind) {
                case Forward.TARGET, Forward.TARGET_NO_HOOK -> {
                    int tag = nextTag++;
                    long kernelNs = 1_000L + rnd.nextInt(20_000);
                    trace("forward " + f.id + " target layer " + layer + (kind == Forward.TARGET ? " + hook" : " WITHOUT hook") + " tag " + tag);
                    for (Rank rank : ranks) {
                        rank.rt.simulateKernel(rank.ctl.computeStream(), kernelNs);
                        queueWrite(rank, false, layer, f.req.newPages, tag);
                        if (kind == Forward.TARGET && hook(f, rank, false, layer)) {
                            if (mode == BackupMode.LAYERED) {
                                expectLayer(rank, f.recs, false, layer);
                            }
                        }
                    }
                    if (kind == Forward.TARGET_NO_HOOK) {
                        count("hook.targetSkipped");
                    }
                }
                case Forward.DRAFT, Forward.DRAFT_NO_HOOK -> {
                    int tag = nextTag++;
                    trace("forward " + f.id + " draft layer " + layer + (kind == Forward.DRAFT ? " + hook" : " WITHOUT hook") + " tag " + tag);
                    for (Rank rank : ranks) {
                        rank.rt.simulateKernel(rank.ctl.computeStream(), 500 + rnd.nextInt(5_000));
                        queueWrite(rank, true, layer, f.req.newPages, tag);
                        if (kind == Forward.DRAFT && hook(f, rank, true, layer)) {
                            if (mode == BackupMode.LAYERED) {
                                expectLayer(rank, f.recs, true, layer);
                            }
                        }
                    }
                    if (kind == Forward.DRAFT_NO_HOOK) {
                        count("hook.draftSkipped");
                    }
                }
                default -> {
                    trace("forward " + f.id + " endForward");
                    for (Rank rank : ranks) {
                        if (hook(f, rank, false, -1) && mode == BackupMode.ALL_LAYERS) {
                            for (int l = 0; l < layers; l++) {
                                expectLayer(rank, f.recs, false, l);
                            }
                            for (int d = 0; d < draftLayers; d++) {
                                expectLayer(rank, f.recs, true, d);
                            }
                        }
                        Request req = f.req;
                        int r = rank.r;
                        rank.rt.launchHostFunc(rank.ctl.computeStream(), () -> req.computeDone[r] = true);
                    }
                    f.req.ended = true;
                    opens.remove(f);
                }
            }
        } catch (CudaException e) {
            if (!stickyInjected) {
                throw e;
            }
            opens.clear();
        }
    }

    /**
     * Calls one hook ({@code layer} -1: endForward) of {@code f} on {@code rank}. Returns false when the hook threw
     * because the forward's lease expired: allowed only when the forward's backups on that rank were aborted, the
     * hook must have touched no CUDA state, and every later hook of the handle must throw too (the forward thread
     * goes on calling them, as a stalled engine would).
     */
    private boolean hook(Forward f, Rank rank, boolean isDraft, int layer) {
        ForwardHandle h = f.h[rank.r];
        long opsBefore = rank.rt.opsIssued();
        try {
            if (layer < 0) {
                h.endForward();
            } else if (isDraft) {
                h.draftLayerStored(layer);
            } else {
                h.targetLayerStored(layer);
            }
        } catch (IllegalStateException e) {
            if (!e.getMessage().contains("lease expired")) {
                throw e;
            }
            if (rank.rt.opsIssued() != opsBefore) {
                fail("rank " + rank.r + " forward " + f.id + ": a hook that threw for an expired lease issued "
                    + (rank.rt.opsIssued() - opsBefore) + " device operations");
            }
            for (Rec rec : f.recs) {
                BackupState s = rec.b[rank.r].state();
                if (s != BackupState.DRAINING && s != BackupState.ABORTED) {
                    fail("rank " + rank.r + " forward " + f.id + " hook threw a lease expiry but backup seq "
                        + rec.seq + " is " + s);
                }
            }
            if (!f.revoked[rank.r]) {
                f.revoked[rank.r] = true;
                trace("forward " + f.id + " rank " + rank.r + " lease expired; its hooks now throw");
                count("lease.handleRevoked");
            } else {
                count("lease.hookAfterRevoked");
            }
            return false;
        }
        if (f.revoked[rank.r]) {
            fail("rank " + rank.r + " forward " + f.id + ": a hook succeeded after an earlier one threw a lease expiry");
        }
        // the poll that expired the lease revoked the handle at once: a hook that still succeeds acts on a slot its
        // forward no longer owns (before slot leases: re-recording the events of the forward that reused the slot)
        for (Rec rec : f.recs) {
            Backup b = rec.b[rank.r];
            if (b.abortReason() == AbortReason.LEASE_EXPIRED) {
                fail("rank " + rank.r + " forward " + f.id + ": a hook succeeded after the lease of backup seq "
                    + rec.seq + " expired");
            }
        }
        if (h.backupCount() != f.backupCounts[rank.r]) {
            fail("rank " + rank.r + " forward " + f.id + " carries " + f.backupCounts[rank.r] + " backups but its handle reports "
                + h.backupCount() + " (another forward's slot)");
        }
        return true;
    }

    /** Queues, on the compute stream, a write of a new pattern into layer {@code layer} of {@code pages}. */
    private void queueWrite(Rank rank, boolean isDraft, int layer, int[] pages, int tag) {
        int[][] tags = isDraft ? rank.devTagD : rank.devTagT;
        for (int pg : pages) {
            tags[layer][pg] = tag;
        }
        rank.rt.launchHostFunc(rank.ctl.computeStream(), () -> {
            for (int pg : pages) {
                rank.writeDevice(isDraft, layer, pg, tag);
            }
        });
    }

    /** The hook of {@code layer} fired: every host page of the forward's backups must end up with the device's bytes now. */
    private void expectLayer(Rank rank, List<Rec> forwardRecs, boolean isDraft, int layer) {
        for (Rec rec : forwardRecs) {
            if (isDraft && !rec.withDraft) {
                continue;
            }
            Backup b = rec.b[rank.r];
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int dp = b.ownedDevicePage(i);
                int tag = (isDraft ? rank.devTagD : rank.devTagT)[layer][dp];
                (isDraft ? rank.expD : rank.expT)[b.hostPage(i)][layer] = ((long) tag << 32) | dp;
            }
        }
    }

    private void engineAbort() {
        List<Rec> live = new ArrayList<>();
        for (Rec rec : recs.values()) {
            if (!rec.b[0].state().terminal()) {
                live.add(rec);
            }
        }
        if (live.isEmpty()) {
            return;
        }
        Rec rec = live.get(rnd.nextInt(live.size()));
        AbortReason reason = ENGINE_REASONS[rnd.nextInt(ENGINE_REASONS.length)];
        trace("abort seq " + rec.seq + " (" + rec.b[0].state() + ") " + reason);
        count("abort");
        for (Rank rank : ranks) {
            rank.ctl.abort(rec.b[rank.r], reason);
        }
    }

    private void engineMatch() {
        int[] base = familyTokens[rnd.nextInt(familyTokens.length)];
        int pages = 1 + rnd.nextInt(maxRequestPages);
        int dev = -1;
        int host = -1;
        for (Rank rank : ranks) {
            MatchResult m = rank.tree.match(base, 0, pages * pageSize, new MatchResult());
            if (dev >= 0 && (m.devicePageCount() != dev || m.hostPageCount() != host)) {
                fail("match on rank " + rank.r + " found " + m.devicePageCount() + "+" + m.hostPageCount()
                    + " pages but rank 0 found " + dev + "+" + host);
            }
            dev = m.devicePageCount();
            host = m.hostPageCount();
        }
        trace("match " + pages + " pages -> device " + dev + " host " + host);
        count("match");
    }

    private void engineEvict(int pages) {
        if (policy == WritePolicy.WRITE_BACK && forwardGroupsInFlight() >= MAX_FORWARD_GROUPS) {
            return;
        }
        List<List<Integer>> freed = new ArrayList<>();
        int evicted = -1;
        for (Rank rank : ranks) {
            List<Integer> got = new ArrayList<>();
            freed.add(got);
            int e = rank.ctl.evictDevice(pages, (arr, off, n) -> {
                for (int i = 0; i < n; i++) {
                    releaseDevice(rank, arr[off + i]);
                    got.add(arr[off + i]);
                }
            });
            if (evicted >= 0 && e != evicted) {
                fail("evictDevice evicted " + e + " pages on rank " + rank.r + " but " + evicted + " on rank 0");
            }
            evicted = e;
        }
        for (int r = 1; r < cp; r++) {
            if (!freed.get(r).equals(freed.get(0))) {
                fail("rank " + r + " freed device pages " + freed.get(r) + " but rank 0 freed " + freed.get(0));
            }
        }
        trace("evictDevice " + pages + " -> " + freed.get(0));
        count("evict");
        if (policy == WritePolicy.WRITE_BACK) {
            registerWriteBacks();
        }
    }

    /** Check (c) and the poison: a freed device page is overwritten at once, as an engine reusing it would. */
    private void onDeviceFreed(Rank rank, int page) {
        for (Rec rec : recs.values()) {
            Backup b = rec.b[rank.r];
            if (b.state().terminal()) {
                continue;
            }
            for (int p : rec.allDev) {
                if (p == page) {
                    fail("device page " + page + " freed on rank " + rank.r + " while backup seq " + rec.seq
                        + " holding it is " + b.state());
                }
            }
        }
        for (Request req : requests) {
            for (int p : req.newPages) {
                if (p == page) {
                    fail("device page " + page + " freed on rank " + rank.r + " while its request still runs");
                }
            }
        }
        int tag = nextTag++;
        for (int l = 0; l < layers; l++) {
            rank.devTagT[l][page] = tag;
            rank.writeDevice(false, l, page, tag);
        }
        for (int d = 0; d < draftLayers; d++) {
            rank.devTagD[d][page] = tag;
            rank.writeDevice(true, d, page, tag);
        }
    }

    /** Write-back reservations made inside evictDevice: registered, expected bytes are the device's now. */
    private void registerWriteBacks() {
        List<List<Backup>> found = new ArrayList<>();
        for (Rank rank : ranks) {
            List<Backup> mine = new ArrayList<>();
            RadixTestAccess.forEachNode(rank.tree, n -> {
                PendingBackup pb = n.pending();
                if (pb instanceof Backup b && !recs.containsKey(b.seq()) && !mine.contains(b)) {
                    mine.add(b);
                }
            });
            mine.sort((a, c) -> Long.compare(a.seq(), c.seq()));
            found.add(mine);
        }
        int group = nextGroup++;
        for (int i = 0; i < found.get(0).size(); i++) {
            Backup[] bs = new Backup[cp];
            for (int r = 0; r < cp; r++) {
                if (found.get(r).size() != found.get(0).size()) {
                    fail("rank " + r + " made " + found.get(r).size() + " write-backs but rank 0 made " + found.get(0).size());
                }
                bs[r] = found.get(r).get(i);
            }
            Rec rec = register(bs, group);
            List<Rec> one = List.of(rec);
            for (Rank rank : ranks) {
                for (int l = 0; l < layers; l++) {
                    expectLayer(rank, one, false, l);
                }
                for (int d = 0; d < draftLayers; d++) {
                    expectLayer(rank, one, true, d);
                }
            }
            count("writeBack");
            trace("write-back seq " + rec.seq);
        }
    }

    private void finishRequests() {
        for (Iterator<Request> it = requests.iterator(); it.hasNext(); ) {
            Request req = it.next();
            boolean done = req.ended;
            for (boolean b : req.computeDone) {
                done &= b;
            }
            if (done) {
                if (!req.last[0].isRoot()) {
                    for (Rank rank : ranks) {
                        rank.tree.unlock(req.last[rank.r]);
                    }
                }
                it.remove();
                trace("request finished");
            }
        }
    }

    // ------------------------------------------------------------------ device page accounting

    /** The engine takes free page {@code page} on {@code rank}. */
    private void takeDevice(Rank rank, int page) {
        if (!rank.freeModel.get(page)) {
            fail("rank " + rank.r + " engine takes device page " + page + " that is not free");
        }
        rank.freeModel.clear(page);
    }

    /** A page comes back to the engine on {@code rank} (eviction, failed or duplicate load): checked, overwritten. */
    private void releaseDevice(Rank rank, int page) {
        if (page < 0 || page >= devicePages || rank.freeModel.get(page)) {
            violations.add("rank " + rank.r + " device page " + page + " returned to the engine but it is already free "
                + "(double free) or out of range");
            if (!closing) {
                throwViolations();
            }
            return;
        }
        rank.freeModel.set(page);
        retireDevicePage(rank, page);
        if (!closing && !stickyInjected) {
            onDeviceFreed(rank, page);
        }
        if (rank.r == 0) {
            freeDevice.free(page);
        }
    }

    /** The device learns the page is free now: a copy queued before that still touching it is a use-after-free. */
    private void retireDevicePage(Rank rank, int page) {
        for (int l = 0; l < layers; l++) {
            for (int buf = 0; buf < rank.target.bufferCount(); buf++) {
                rank.rt.retire(rank.target.pageAddress(l, buf, page), rank.target.pageBytes());
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int buf = 0; buf < rank.draft.bufferCount(); buf++) {
                rank.rt.retire(rank.draft.pageAddress(d, buf, page), rank.draft.pageBytes());
            }
        }
    }

    /**
     * The engine's device pool on one rank, given to loadBack. Rank 0 decides (refusing the first call when the
     * schedule says so, then granting from the free list if it can); the other ranks replay its decisions, as
     * identical scheduling would, and check they are asked for the same.
     */
    private final class HarnessAllocator implements DevicePageAllocator {
        private final Rank rank;
        private int scriptPos;

        HarnessAllocator(Rank rank) {
            this.rank = rank;
        }

        void beginCall() {
            scriptPos = 0;
        }

        boolean scriptDone() {
            return rank.r == 0 || scriptPos == allocScript.size();
        }

        @Override
        public boolean allocate(int count, int[] out, int offset) {
            if (closing) {
                return false;
            }
            int[] got;
            if (rank.r == 0) {
                if (refuseNextAllocation) {
                    refuseNextAllocation = false;
                    count("load.allocationRefusedOnce");
                    got = REFUSED;
                } else if (freeDevice.freePages() < count) {
                    got = REFUSED;
                } else {
                    got = new int[count];
                    for (int i = 0; i < count; i++) {
                        got[i] = freeDevice.poll();
                        takeDevice(rank, got[i]);
                    }
                }
                allocScript.add(got);
            } else {
                if (scriptPos >= allocScript.size()) {
                    fail("rank " + rank.r + " asks its device allocator for " + count + " pages more often than rank 0");
                }
                got = allocScript.get(scriptPos++);
                if (got != REFUSED && got.length != count) {
                    fail("rank " + rank.r + " asks its device allocator for " + count + " pages, rank 0 for " + got.length);
                }
                if (got != REFUSED) {
                    for (int p : got) {
                        takeDevice(rank, p);
                    }
                }
            }
            if (got == REFUSED) {
                return false;
            }
            System.arraycopy(got, 0, out, offset, count);
            return true;
        }

        @Override
        public void free(int[] pages, int offset, int count) {
            for (int i = 0; i < count; i++) {
                releaseDevice(rank, pages[offset + i]);
            }
        }
    }

    /** Told of loads that end; only checks that they are known. */
    private final class Loads implements LoadListener {
        private final Rank rank;

        Loads(Rank rank) {
            this.rank = rank;
        }

        @Override
        public void onLoaded(io.hicache.core.LoadHandle op) {
            known((LoadOp) op, "loaded");
        }

        @Override
        public void onLoadFailed(io.hicache.core.LoadHandle op) {
            known((LoadOp) op, "failed");
        }

        private void known(LoadOp op, String what) {
            LoadRec rec = recOfOp.get(op);
            if (rec == null || rec.op[rank.r] != op) {
                violations.add("rank " + rank.r + " listener told of an unknown load " + op + " " + what);
            }
            count("load.listener." + what);
        }
    }

    // ------------------------------------------------------------------ load-back (identical on every rank)

    /** One engine load step; false when nothing was done. */
    private boolean loadStep() {
        if (!consistent()) {
            return false;
        }
        int k = rnd.nextInt(10);
        if (k < 4) {
            engineLoad();
            return true;
        }
        if (k < 6) {
            return engineStartLoading(rnd.nextInt(5) != 0);
        }
        if (k < 8) {
            // a burst: several batches without a poll in between, so the ring runs out of free sets
            for (int i = 0; i < 4; i++) {
                engineLoad();
                engineStartLoading(rnd.nextBoolean());
            }
            return true;
        }
        finishLoads();
        return true;
    }

    /** Rank 0's host-only nodes with no ancestor (or self) in the chain of a load in flight. */
    private List<RadixNode> hostOnlyNotLoading() {
        Set<RadixNode> loading = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (LoadRec rec : loadRecs) {
            LoadOp op = rec.op[0];
            if (loadClass(op.state()) == 0 && op.node(op.nodeCount() - 1).isAttached()) {
                for (RadixNode n = op.node(op.nodeCount() - 1); n.isDeviceEvicted(); n = n.parent()) {
                    loading.add(n);
                }
            }
        }
        List<RadixNode> out = new ArrayList<>();
        RadixTestAccess.forEachNode(ranks[0].tree, n -> {
            if (!n.isDeviceEvicted()) {
                return;
            }
            for (RadixNode a = n; !a.isRoot(); a = a.parent()) {
                if (loading.contains(a)) {
                    return;
                }
            }
            out.add(n);
        });
        return out;
    }

    /** Matches a prefix of a family on every rank and, when it has a host-only extension, loads it back. */
    private void engineLoad() {
        List<RadixNode> hostOnly = hostOnlyNotLoading();
        if (hostOnly.isEmpty() && rnd.nextInt(4) != 0) {
            engineEvict(1 + rnd.nextInt(Math.max(1, devicePages / 3))); // make host-only chains to load
            hostOnly = hostOnlyNotLoading();
        }
        int[] base;
        int pages;
        if (!hostOnly.isEmpty() && rnd.nextInt(4) != 0) {
            // a request whose prefix ends in (or runs past) a host-only node
            RadixNode target = hostOnly.get(rnd.nextInt(hostOnly.size()));
            int tokens = 0;
            for (RadixNode n = target; !n.isRoot(); n = n.parent()) {
                tokens += n.tokenCount();
            }
            int extra = rnd.nextInt(3) == 0 ? pageSize * (1 + rnd.nextInt(2)) : 0;
            base = new int[tokens + extra];
            int at = tokens;
            for (RadixNode n = target; !n.isRoot(); n = n.parent()) {
                at -= n.tokenCount();
                n.copyTokens(base, at);
            }
            for (int i = tokens; i < base.length; i++) {
                base[i] = uniqueToken++;
            }
            pages = rnd.nextInt(4) == 0 ? 1 + rnd.nextInt(base.length / pageSize) : base.length / pageSize;
        } else {
            base = familyTokens[rnd.nextInt(familyTokens.length)];
            pages = 1 + rnd.nextInt(maxRequestPages);
        }
        MatchResult[] m = new MatchResult[cp];
        for (Rank rank : ranks) {
            m[rank.r] = rank.tree.match(base, 0, pages * pageSize, new MatchResult());
            if (rank.r > 0 && (m[rank.r].devicePageCount() != m[0].devicePageCount()
                || m[rank.r].hostPageCount() != m[0].hostPageCount())) {
                fail("match on rank " + rank.r + " found " + m[rank.r].devicePageCount() + "+"
                    + m[rank.r].hostPageCount() + " pages but rank 0 found " + m[0].devicePageCount() + "+"
                    + m[0].hostPageCount());
            }
        }
        int hostTokens = m[0].hostTokenCount();
        if (hostTokens == 0) {
            count("load.noHostHit");
            return;
        }
        int quota = rnd.nextInt(4) == 0 ? rnd.nextInt(hostTokens + 2 * pageSize + 1) : Integer.MAX_VALUE;
        refuseNextAllocation = rnd.nextDouble() < refuseAllocationProbability;
        allocScript.clear();
        int id = nextLoadId++;
        LoadOp[] ops = new LoadOp[cp];
        for (Rank rank : ranks) {
            rank.allocator.beginCall();
            ops[rank.r] = rank.ctl.loadBack(m[rank.r], id, quota, rank.allocator);
            if (!rank.allocator.scriptDone()) {
                fail("rank " + rank.r + " asked its device allocator less often than rank 0");
            }
            if ((ops[rank.r] == null) != (ops[0] == null)
                || ops[rank.r] != null && (ops[rank.r].pageCount() != ops[0].pageCount()
                || ops[rank.r].nodeCount() != ops[0].nodeCount())) {
                fail("loadBack on rank " + rank.r + " returned " + ops[rank.r] + " but on rank 0 " + ops[0]);
            }
        }
        refuseNextAllocation = false;
        if (policy == WritePolicy.WRITE_BACK) {
            registerWriteBacks(); // loadBack may have evicted device pages to make room
        }
        if (ops[0] == null) {
            trace("loadBack " + hostTokens + " host tokens (quota " + quota + ") -> none");
            count("load.none");
            return;
        }
        LoadRec rec = new LoadRec(id, ops, cp);
        for (Rank rank : ranks) {
            LoadOp op = ops[rank.r];
            if (op.state() != LoadOp.State.QUEUED) {
                fail("rank " + rank.r + " new load is " + op.state());
            }
            int[] hostOf = rec.hostOf[rank.r];
            boolean[] draftOf = rec.draftOf[rank.r];
            int pos = 0;
            for (int k = 0; k < op.nodeCount(); k++) {
                RadixNode n = op.node(k);
                HostPages hp = (HostPages) n.hostValue();
                int[] offsets = new int[n.pageCount()];
                int owned = hp.lanes().ownedOffsets(offsets);
                for (int j = 0; j < owned; j++) {
                    hostOf[pos + offsets[j]] = hp.hostPage(j);
                    draftOf[pos + offsets[j]] = hp.hasDraft() && draftLayers > 0;
                }
                pos += n.pageCount();
            }
            if (pos != op.pageCount()) {
                fail("rank " + rank.r + " load " + id + " covers " + op.pageCount() + " pages but its nodes " + pos);
            }
            recOfOp.put(op, rec);
        }
        loadRecs.add(rec);
        queuedLoads.add(rec);
        int[] devPages = new int[ops[0].pageCount()];
        for (int i = 0; i < devPages.length; i++) {
            devPages[i] = ops[0].devicePage(i);
        }
        trace("loadBack " + hostTokens + " host tokens (quota " + quota + ") -> load " + id + " of "
            + ops[0].pageCount() + " pages into " + Arrays.toString(devPages));
        count("load.queued");
    }

    /**
     * Issues the queued loads on every rank when the next event set is free on every rank; provokes a reuse when
     * it is certainly still in use on every rank (no poll since it was issued), which must throw and change
     * nothing; does nothing when it cannot tell.
     */
    private boolean engineStartLoading(boolean forward) {
        if (queuedLoads.isEmpty()) {
            return false;
        }
        Batch cur = ring[ringNext];
        boolean freeAll = true;
        boolean busyAll = true;
        for (Rank rank : ranks) {
            boolean free = cur == null || cur.terminalOn(rank.r);
            freeAll &= free;
            busyAll &= !free && rank.polls == cur.pollsAtIssue[rank.r];
        }
        if (busyAll) {
            provokeRingReuse();
            return true;
        }
        if (!freeAll) {
            return false;
        }
        int faultRank = -1;
        int faultLayer = -1;
        if (rnd.nextDouble() < h2dFaultProbability) {
            faultRank = rnd.nextInt(cp);
            faultLayer = rnd.nextBoolean() ? -1 : rnd.nextInt(layers);
        }
        Batch b = new Batch(new ArrayList<>(queuedLoads), cp, layers + draftLayers + 1);
        for (Rank rank : ranks) {
            if (rank.r == faultRank) {
                installH2dFault(rank, b, faultLayer);
            }
            long before = rank.rt.opsIssued();
            long token = rank.ctl.startLoading();
            long after = rank.rt.opsIssued();
            if (rank.r == faultRank) {
                rank.rt.failCopiesMatching(null, null);
            }
            if (token < 0 || (token & 3) != ringNext) {
                fail("rank " + rank.r + " startLoading returned token " + token + " but event set " + ringNext
                    + " was expected");
            }
            b.token[rank.r] = token;
            b.seqFrom[rank.r] = before;
            b.seqTo[rank.r] = after;
            b.pollsAtIssue[rank.r] = rank.polls;
            rank.timedBatches.add(b);
        }
        for (LoadRec rec : b.recs) {
            rec.batch = b;
            for (LoadOp op : rec.op) {
                if (op.state() != LoadOp.State.ISSUED) {
                    fail("load " + rec.id + " is " + op.state() + " after startLoading");
                }
            }
        }
        queuedLoads.clear();
        ring[ringNext] = b;
        ringNext = (ringNext + 1) % ring.length;
        trace("startLoading set " + (b.token[0] & 3) + " loads " + b.ids() + (faultRank >= 0 ? " with H2D fault on rank "
            + faultRank + (faultLayer >= 0 ? " layer " + faultLayer : " all layers") : "")
            + (forward ? " + forward waiting per layer" : ""));
        count("load.batch");
        if (faultRank >= 0) {
            count("load.faultInjected");
        }
        if (forward) {
            loadForward(b);
        }
        return true;
    }

    /** Fails the H2D copies of this batch on {@code rank}: all, or those writing target layer {@code layer}. */
    private void installH2dFault(Rank rank, Batch b, int layer) {
        List<long[]> ranges = new ArrayList<>();
        if (layer >= 0) {
            for (LoadRec rec : b.recs) {
                LoadOp op = rec.op[rank.r];
                for (int i = 0; i < op.pageCount(); i++) {
                    for (int buf = 0; buf < rank.target.bufferCount(); buf++) {
                        long a = rank.target.pageAddress(layer, buf, op.devicePage(i));
                        ranges.add(new long[] {a, a + rank.target.pageBytes()});
                    }
                }
            }
        }
        rank.rt.failCopiesMatching((dst, src, bytes, kind) -> {
            if (kind != CopyKind.HOST_TO_DEVICE) {
                return false;
            }
            if (layer < 0) {
                return true;
            }
            for (long[] r : ranges) {
                if (dst < r[1] && r[0] < dst + bytes) {
                    return true;
                }
            }
            return false;
        }, CudaError.UNKNOWN);
    }

    private void provokeRingReuse() {
        for (Rank rank : ranks) {
            int inFlight = rank.ctl.loadsInFlight();
            long ops = rank.rt.opsIssued();
            try {
                long token = rank.ctl.startLoading();
                fail("rank " + rank.r + " startLoading reused event set " + ringNext + " still in use (no poll since it "
                    + "was issued) and returned token " + token);
            } catch (IllegalStateException e) {
                if (e.getMessage() == null || !e.getMessage().contains("still in use")) {
                    fail("rank " + rank.r + " ring reuse threw " + e + " without saying the set is still in use");
                }
            }
            if (rank.ctl.loadsInFlight() != inFlight || rank.rt.opsIssued() != ops) {
                fail("rank " + rank.r + " a refused startLoading changed state: loads in flight " + inFlight + " -> "
                    + rank.ctl.loadsInFlight() + ", device ops " + ops + " -> " + rank.rt.opsIssued());
            }
        }
        for (LoadRec rec : queuedLoads) {
            for (LoadOp op : rec.op) {
                if (op.state() != LoadOp.State.QUEUED) {
                    fail("load " + rec.id + " is " + op.state() + " after a refused startLoading");
                }
            }
        }
        trace("startLoading refused: event set " + ringNext + " still in use");
        count("load.ringReuseRefused");
    }

    /** Record index on the load stream of (layer, draft): per layer the target event, then the draft event. */
    private int recordIndex(int layer, boolean isDraft) {
        int idx = 0;
        for (int l = 0; l < layer; l++) {
            idx += (l < layers ? 1 : 0) + (l < draftLayers ? 1 : 0);
        }
        return idx + (isDraft && layer < layers ? 1 : 0);
    }

    /**
     * The batch's forward on every rank: per layer a wait on the load, then a host function on the compute stream
     * that observes the loaded layer (its time and bytes), then the layer's compute.
     */
    private void loadForward(Batch b) {
        for (LoadRec rec : b.recs) {
            rec.forward = true;
        }
        int maxLayers = Math.max(layers, draftLayers);
        for (Rank rank : ranks) {
            for (int l = 0; l < maxLayers; l++) {
                for (int d = 0; d < 2; d++) {
                    boolean isDraft = d == 1;
                    if (l >= (isDraft ? draftLayers : layers)) {
                        continue;
                    }
                    if (isDraft) {
                        rank.ctl.waitDraftLayer(b.token[rank.r], l);
                    } else {
                        rank.ctl.waitLayer(b.token[rank.r], l);
                    }
                    int layer = l;
                    int idx = recordIndex(l, isDraft);
                    rank.rt.launchHostFunc(rank.ctl.computeStream(), () -> observeLayer(rank, b, isDraft, layer, idx));
                    rank.rt.simulateKernel(rank.ctl.computeStream(), 500 + rnd.nextInt(10_000));
                }
            }
            int r = rank.r;
            rank.rt.launchHostFunc(rank.ctl.computeStream(), () -> {
                for (LoadRec rec : b.recs) {
                    rec.computeDone[r] = true;
                }
            });
        }
        count("load.forward");
    }

    /**
     * (l6) Runs on the compute stream just before the layer's compute: the layer's load event and every copy before
     * it on the load stream have completed by now; pages whose bytes differ from the host copy are remembered (the
     * load must then fail).
     */
    private void observeLayer(Rank rank, Batch b, boolean isDraft, int layer, int idx) {
        long now = rank.rt.nowNs();
        int r = rank.r;
        long eventNs = b.recordEndNs[r][idx];
        if (eventNs < 0 || eventNs > now || b.copiesDoneNs[r][idx] > now) {
            violations.add("rank " + r + " compute of " + (isDraft ? "draft" : "target") + " layer " + layer
                + " waiting on loads " + b.ids() + " started at " + now + " ns but the layer's load event completed at "
                + (eventNs < 0 ? "(not yet)" : eventNs + " ns") + " and its copies at " + b.copiesDoneNs[r][idx] + " ns");
        }
        for (LoadRec rec : b.recs) {
            LoadOp op = rec.op[r];
            for (int i = 0; i < op.pageCount(); i++) {
                int h = rec.hostOf[r][i];
                if (h < 0 || isDraft && !rec.draftOf[r][i]) {
                    continue;
                }
                if (!rank.deviceEqualsHost(isDraft, layer, op.devicePage(i), h)) {
                    rec.badRead[r].set(i);
                }
            }
        }
    }

    /** Op listener: times the load-stream copies and events of each batch in flight. */
    private void onDeviceOp(Rank rank, long seq, int type, long stream, long endNs) {
        if (stream != rank.loadStream || rank.timedBatches.isEmpty()) {
            return;
        }
        int r = rank.r;
        for (Batch b : rank.timedBatches) {
            if (seq <= b.seqFrom[r] || seq > b.seqTo[r]) {
                continue;
            }
            if (type == SimulatedCudaRuntime.OP_COPY) {
                b.maxCopyEndNs[r] = Math.max(b.maxCopyEndNs[r], endNs);
            } else if (type == SimulatedCudaRuntime.OP_RECORD && b.nextRecord[r] < b.recordEndNs[r].length) {
                int k = b.nextRecord[r]++;
                b.recordEndNs[r][k] = endNs;
                b.copiesDoneNs[r][k] = b.maxCopyEndNs[r];
            }
        }
    }

    /**
     * After a poll on {@code rank}: (l2) a load that became LOADED has, on every page attached to the tree, the
     * committed host bytes of every layer, target and draft; the engine locks its last node while its forward
     * runs. (l3) one that FAILED returned every device page and left no page of it in the tree.
     */
    private void onLoadsPolled(Rank rank) {
        int r = rank.r;
        for (LoadRec rec : loadRecs) {
            LoadOp op = rec.op[r];
            if (rec.terminalSeen[r] || loadClass(op.state()) == 0) {
                continue;
            }
            rec.terminalSeen[r] = true;
            if (op.state() == LoadOp.State.LOADED) {
                count("load.loaded");
                for (int i = 0; i < op.pageCount(); i++) {
                    int dp = op.devicePage(i);
                    if (rank.freeModel.get(dp)) {
                        count("load.duplicatePageFreed"); // an insert adopted the node meanwhile
                        continue;
                    }
                    rec.attached[r].set(i);
                    int h = rec.hostOf[r][i];
                    if (h < 0) {
                        continue;
                    }
                    for (int l = 0; l < layers; l++) {
                        if (!rank.deviceEqualsHost(false, l, dp, h)) {
                            violations.add("rank " + r + " load " + rec.id + " is LOADED but device page " + dp
                                + " (chain page " + i + ") target layer " + l + " differs from host page " + h);
                        }
                    }
                    for (int d = 0; d < draftLayers && rec.draftOf[r][i]; d++) {
                        if (!rank.deviceEqualsHost(true, d, dp, h)) {
                            violations.add("rank " + r + " load " + rec.id + " is LOADED but device page " + dp
                                + " (chain page " + i + ") draft layer " + d + " differs from host page " + h);
                        }
                    }
                }
                RadixNode last = op.node(op.nodeCount() - 1);
                rank.tree.lock(last);
                rec.locked[r] = last;
            } else {
                count("load.failed");
                for (int i = 0; i < op.pageCount(); i++) {
                    if (!rank.freeModel.get(op.devicePage(i))) {
                        violations.add("rank " + r + " load " + rec.id + " FAILED but its device page "
                            + op.devicePage(i) + " did not come back to the engine");
                    }
                }
            }
        }
    }

    /** Ends loads that are terminal on every rank and whose forward ran everywhere: unlocks, final checks. */
    private void finishLoads() {
        for (Iterator<LoadRec> it = loadRecs.iterator(); it.hasNext(); ) {
            LoadRec rec = it.next();
            boolean done = true;
            for (int r = 0; r < cp; r++) {
                done &= rec.terminalSeen[r] && (!rec.forward || rec.computeDone[r]);
            }
            if (!done) {
                continue;
            }
            for (Rank rank : ranks) {
                int r = rank.r;
                if (rec.op[r].state() == LoadOp.State.LOADED && rec.badRead[r].intersects(rec.attached[r])) {
                    BitSet bad = (BitSet) rec.badRead[r].clone();
                    bad.and(rec.attached[r]);
                    violations.add("rank " + r + " load " + rec.id + " was agreed LOADED but the forward waiting on it "
                        + "read other bytes than the host copy on chain pages " + bad);
                }
                if (rec.locked[r] != null) {
                    rank.tree.unlock(rec.locked[r]);
                    rec.locked[r] = null;
                }
                recOfOp.remove(rec.op[r]);
            }
            it.remove();
            trace("load " + rec.id + " finished " + rec.op[0].state());
            if (rec.batch != null && rec.batch.finished()) {
                for (Rank rank : ranks) {
                    rank.timedBatches.remove(rec.batch);
                }
            }
        }
        throwViolations();
    }

    // ------------------------------------------------------------------ checks

    private final class Listener implements BackupListener {
        private final Rank rank;

        Listener(Rank rank) {
            this.rank = rank;
        }

        @Override
        public void onCommitted(io.hicache.core.BackupHandle committed) {
            Backup backup = (Backup) committed;
            rank.committedSeqs.add(backup.seq());
            count("committed");
            Rec rec = recs.get(backup.seq());
            if (rec == null || rec.b[rank.r] != backup) {
                violations.add("rank " + rank.r + " committed unknown backup " + backup);
                return;
            }
            // (a) visible only after every layer, target and draft, on every rank, was acked
            for (Rank other : ranks) {
                Backup b = rec.b[other.r];
                if (b.state() != BackupState.SEALED && b.state() != BackupState.COMMITTED) {
                    violations.add("rank " + rank.r + " committed seq " + rec.seq + " while rank " + other.r
                        + " has it " + b.state() + (b.abortReason() != null ? " " + b.abortReason() : ""));
                }
                checkBackupBytes(other, rec, b, "at commit on rank " + rank.r);
            }
        }

        @Override
        public void onAborted(io.hicache.core.BackupHandle backup, AbortReason reason) {
            count("aborted." + reason);
        }
    }

    private void checkBackupBytes(Rank rank, Rec rec, Backup b, String when) {
        for (int i = 0; i < b.ownedPageCount(); i++) {
            int hp = b.hostPage(i);
            for (int l = 0; l < layers; l++) {
                String m = rank.hostMismatch(false, l, hp, rank.expT[hp][l]);
                if (m != null) {
                    violations.add("seq " + rec.seq + " " + when + ": " + m);
                    return;
                }
            }
            if (rec.withDraft) {
                for (int d = 0; d < draftLayers; d++) {
                    String m = rank.hostMismatch(true, d, hp, rank.expD[hp][d]);
                    if (m != null) {
                        violations.add("seq " + rec.seq + " " + when + ": " + m);
                        return;
                    }
                }
            }
        }
    }

    private void fail(String message) {
        violations.add(message);
        throwViolations();
    }

    private void throwViolations() {
        if (!violations.isEmpty()) {
            String msg = String.join("\n", violations);
            violations.clear();
            throw new AssertionError(msg);
        }
    }

    /** Adds what pages {@code [start, start + pages)} of a sequence of {@code total} cost each rank of the group. */
    private void addBudget(long[] perRank, int start, int pages, int total) {
        for (int r = 0; r < cp; r++) {
            perRank[r] += cp == 1 ? pages : lanes.ownedCount(r, start, pages, total, cp);
        }
    }

    /** Checks every invariant on every rank; throws {@link AssertionError} on the first violations. */
    void checkAll() {
        for (Rank rank : ranks) {
            if (rank.rt.useAfterFreeCount() != 0) {
                violations.add("rank " + rank.r + ": " + rank.rt.useAfterFreeCount() + " copies ran on memory freed "
                    + "while they were queued: " + rank.rt.useAfterFreeReports());
            }
            checkRank(rank);
            if (!stickyInjected && !rank.ctl.isClosed()) {
                checkDevicePages(rank);
            }
        }
        long hostEvicted = ranks[0].ctl.metrics().get(io.hicache.core.metrics.Metric.HOST_PAGES_EVICTED);
        if (hostEvicted != hostPagesEvictedSeen && !loadRecs.isEmpty()) {
            count("load.hostEvictionWhileLoading"); // (l5) is checked under pressure
        }
        hostPagesEvictedSeen = hostEvicted;
        for (LoadRec rec : loadRecs) {
            // (l3) loads are agreed: loaded on every rank or failed on every rank
            boolean loaded = false;
            boolean failed = false;
            for (LoadOp op : rec.op) {
                loaded |= op.state() == LoadOp.State.LOADED;
                failed |= op.state() == LoadOp.State.FAILED;
            }
            if (loaded && failed) {
                StringBuilder sb = new StringBuilder("load " + rec.id + " loaded on some ranks, failed on others:");
                for (LoadOp op : rec.op) {
                    sb.append(' ').append(op.state());
                }
                violations.add(sb.toString());
            }
        }
        // (f) no backup committed on one rank and aborted on another
        for (Iterator<Rec> it = recs.values().iterator(); it.hasNext(); ) {
            Rec rec = it.next();
            boolean committed = false;
            boolean aborted = false;
            boolean allTerminal = true;
            for (Backup b : rec.b) {
                committed |= b.state() == BackupState.COMMITTED;
                aborted |= b.state() == BackupState.ABORTED;
                allTerminal &= b.state().terminal();
            }
            if (committed && aborted) {
                StringBuilder sb = new StringBuilder("seq " + rec.seq + " committed on some ranks, aborted on others:");
                for (Backup b : rec.b) {
                    sb.append(' ').append(b.state()).append(b.abortReason() != null ? "/" + b.abortReason() : "");
                }
                violations.add(sb.toString());
            }
            if (allTerminal) {
                it.remove();
            }
        }
        throwViolations();
    }

    /**
     * (l1) the pages of a load not yet agreed are not in the tree (no partially loaded node is a device hit);
     * (l4) no device page is owned twice: every page is in exactly one of the tree, a load in flight or the
     * engine's free list; (l5) the host-only part of a chain being loaded is still attached and protected.
     */
    private void checkDevicePages(Rank rank) {
        BitSet inTree = new BitSet(devicePages);
        RadixTestAccess.forEachNode(rank.tree, n -> {
            if (n.hasDeviceValue()) {
                for (int i = 0; i < n.pageCount(); i++) {
                    int p = n.devicePage(i);
                    if (inTree.get(p)) {
                        violations.add("rank " + rank.r + " device page " + p + " is held by two tree nodes");
                    }
                    inTree.set(p);
                }
            }
        });
        BitSet inLoads = new BitSet(devicePages);
        for (LoadRec rec : loadRecs) {
            LoadOp op = rec.op[rank.r];
            if (loadClass(op.state()) != 0) {
                continue;
            }
            for (int i = 0; i < op.pageCount(); i++) {
                int p = op.devicePage(i);
                if (inTree.get(p)) {
                    violations.add("rank " + rank.r + " device page " + p + " of load " + rec.id + " (" + op.state()
                        + ") is in the tree before the load was agreed");
                }
                if (inLoads.get(p)) {
                    violations.add("rank " + rank.r + " device page " + p + " belongs to two loads in flight");
                }
                inLoads.set(p);
            }
            RadixNode last = op.node(op.nodeCount() - 1);
            if (!last.isAttached()) {
                violations.add("rank " + rank.r + " load " + rec.id + " (" + op.state() + "): its last node " + last
                    + " was removed from the tree (host-evicted?) while the load is in flight");
            } else {
                for (RadixNode n = last; n.isDeviceEvicted(); n = n.parent()) {
                    if (n.hostRef() <= 0) {
                        violations.add("rank " + rank.r + " load " + rec.id + ": host-only chain node " + n
                            + " is not protected from host eviction while the load is in flight");
                    }
                }
            }
        }
        BitSet owned = (BitSet) inTree.clone();
        owned.or(inLoads);
        if (rank.freeModel.intersects(owned)) {
            BitSet both = (BitSet) rank.freeModel.clone();
            both.and(owned);
            violations.add("rank " + rank.r + " device pages " + both + " are free in the engine's pool and owned by the "
                + "tree or a load");
        }
        owned.or(rank.freeModel);
        if (owned.cardinality() != devicePages || owned.length() > devicePages) {
            BitSet lost = new BitSet(devicePages);
            lost.set(0, devicePages);
            lost.andNot(owned);
            violations.add("rank " + rank.r + " device pages " + lost + " are neither free, in the tree nor in a load");
        }
        if (rank.r == 0 && freeDevice.freePages() != rank.freeModel.cardinality()) {
            violations.add("free list holds " + freeDevice.freePages() + " pages, the model " + rank.freeModel.cardinality());
        }
    }

    private void checkRank(Rank rank) {
        if (rank.ctl.isClosed()) {
            return;
        }
        try {
            rank.tree.checkInvariants();
        } catch (IllegalStateException e) {
            violations.add("rank " + rank.r + " tree: " + e.getMessage());
        }
        BitSet used = new BitSet(hostPages);
        long[] budget = new long[cp]; // every rank's pages, as each rank's budget counts them
        RadixTestAccess.forEachNode(rank.tree, n -> {
            HostValue v = n.hostValue();
            if (v != null) {
                if (!(v instanceof HostPages hp)) {
                    violations.add("rank " + rank.r + " node " + n + " has a foreign host value " + v);
                    return;
                }
                // (d) lane metadata describes exactly this node's positions on this rank
                LaneDescription l = hp.lanes();
                int start = RadixTestAccess.startPage(n);
                if (l.pageCount() != n.pageCount() || l.startPage() != start || l.cpSize() != cp || l.rank() != rank.r
                    || l.strategy() != lanes || l.totalPages() < start + n.pageCount()
                    || hp.ownedPageCount() != l.ownedCount()) {
                    violations.add("rank " + rank.r + " node at page " + start + " with " + n.pageCount()
                        + " pages carries lanes " + l + " for " + hp.ownedPageCount() + " host pages");
                    return;
                }
                addBudget(budget, l.startPage(), l.pageCount(), l.totalPages());
                for (int i = 0; i < hp.ownedPageCount(); i++) {
                    int h = hp.hostPage(i);
                    if (used.get(h)) {
                        violations.add("rank " + rank.r + " host page " + h + " referenced twice");
                    }
                    used.set(h);
                    // (a) committed bytes equal the device bytes when the layer's hook fired
                    for (int layer = 0; layer < layers; layer++) {
                        String m = rank.hostMismatch(false, layer, h, rank.expT[h][layer]);
                        if (m != null) {
                            violations.add("committed " + m);
                            return;
                        }
                    }
                    if (rank.hostDraft[h]) {
                        for (int d = 0; d < draftLayers; d++) {
                            String m = rank.hostMismatch(true, d, h, rank.expD[h][d]);
                            if (m != null) {
                                violations.add("committed " + m);
                                return;
                            }
                        }
                    }
                }
            }
            PendingBackup pb = n.pending();
            if (pb != null) {
                if (!(pb instanceof Backup b) || recs.get(b.seq()) == null || recs.get(b.seq()).b[rank.r] != b) {
                    violations.add("rank " + rank.r + " node " + n + " is pending with an unknown backup " + pb);
                } else if (b.state().terminal()) {
                    violations.add("rank " + rank.r + " node " + n + " still pending with " + b);
                }
            }
        });
        // (b) allocated host pages == pages of committed values + pages of backups in flight
        for (Rec rec : recs.values()) {
            Backup b = rec.b[rank.r];
            if (b.state().terminal()) {
                continue;
            }
            addBudget(budget, rec.startPage, rec.pageCount, rec.startPage + rec.pageCount);
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int h = b.hostPage(i);
                if (used.get(h)) {
                    violations.add("rank " + rank.r + " host page " + h + " of in-flight seq " + rec.seq
                        + " is referenced elsewhere too");
                }
                used.set(h);
            }
        }
        var alloc = rank.ctl.allocator();
        if (alloc.allocatedPages() != used.cardinality()) {
            violations.add("rank " + rank.r + " allocator holds " + alloc.allocatedPages() + " pages but the tree and "
                + "backups in flight reference " + used.cardinality());
        }
        for (int h = used.nextSetBit(0); h >= 0; h = used.nextSetBit(h + 1)) {
            if (!alloc.isAllocated(h)) {
                violations.add("rank " + rank.r + " host page " + h + " is referenced but free in the allocator");
            }
        }
        long most = java.util.Arrays.stream(budget).max().orElse(0);
        if (rank.ctl.stickyError() == null && !manualHostEviction) {
            if (rank.ctl.hostBudgetUsedPages() != most) {
                violations.add("rank " + rank.r + " host budget says " + rank.ctl.hostBudgetUsedPages()
                    + " pages used on its fullest rank but committed values and backups in flight need " + most);
            }
            if (budget[rank.r] != alloc.allocatedPages()) {
                violations.add("rank " + rank.r + " holds " + alloc.allocatedPages() + " host pages but its share of "
                    + "committed values and backups in flight is " + budget[rank.r]);
            }
        }
    }

    // ------------------------------------------------------------------ drain and final checks

    private boolean quiescent() {
        if (!opens.isEmpty() || !requests.isEmpty() || !loadRecs.isEmpty()) {
            return false;
        }
        for (Rec rec : recs.values()) {
            for (Backup b : rec.b) {
                if (!b.state().terminal()) {
                    return false;
                }
            }
        }
        for (Rank rank : ranks) {
            if (rank.ctl.backupsInFlight() > 0 || rank.ctl.completionAgent().inFlight() > 0
                || rank.ctl.loadsInFlight() > 0) {
                return false;
            }
        }
        return true;
    }

    /** Steps agents, polls and devices (in seeded order) until nothing is in flight, checking after every round. */
    private void drain() {
        for (int i = 0; i < 20_000; i++) {
            if (!opens.isEmpty()) {
                forwardStep(opens.get(rnd.nextInt(opens.size())));
            }
            for (Rank rank : ranks) {
                agentStep(rank, true);
                agentStep(rank, false);
            }
            for (Rank rank : ranks) {
                pollStep(rank);
            }
            if (consistent()) {
                finishRequests();
                if (loads) {
                    if (!queuedLoads.isEmpty()) {
                        engineStartLoading(rnd.nextBoolean());
                    }
                    finishLoads();
                }
            }
            checkAll();
            if (quiescent()) {
                return;
            }
            boolean any = false;
            for (Rank rank : ranks) {
                any |= rank.rt.advanceToNextEvent();
            }
            if (!any) {
                for (Rank rank : ranks) {
                    rank.rt.advanceTo(rank.rt.nowNs() + 1_000);
                }
            }
        }
        StringBuilder sb = new StringBuilder("did not drain:");
        for (Rank rank : ranks) {
            sb.append(" rank ").append(rank.r).append(" inFlight=").append(rank.ctl.backupsInFlight())
                .append(" completionInFlight=").append(rank.ctl.completionAgent().inFlight())
                .append(" loadsInFlight=").append(rank.ctl.loadsInFlight());
        }
        for (LoadRec rec : loadRecs) {
            sb.append(" load ").append(rec.id).append(':');
            for (LoadOp op : rec.op) {
                sb.append(' ').append(op.state());
            }
        }
        for (Rec rec : recs.values()) {
            sb.append(" seq ").append(rec.seq).append(':');
            for (Backup b : rec.b) {
                sb.append(' ').append(b.state());
            }
        }
        throw new AssertionError(sb.toString());
    }

    private void finish() {
        if (stickyInjected) {
            finishAfterSticky();
            return;
        }
        drain();
        // (f) every rank published the same backups, in the same order
        for (Rank rank : ranks) {
            if (!rank.committedSeqs.equals(ranks[0].committedSeqs)) {
                fail("rank " + rank.r + " committed " + rank.committedSeqs + " but rank 0 committed "
                    + ranks[0].committedSeqs);
            }
        }
        // evict every device page (write-back copies first) and every host value: all pages come back. A host
        // value may sit below a node whose own backup was aborted, which keeps that node on device until the
        // host value goes, so device and host eviction alternate.
        manualHostEviction = true;
        for (int round = 0; round < 64 && ranks[0].tree.nodeCount() > 0; round++) {
            engineEvict(Integer.MAX_VALUE);
            drain();
            for (Rank rank : ranks) {
                evictAllHost(rank);
            }
            checkAll();
        }
        if (policy == WritePolicy.WRITE_BACK && ranks[0].tree.nodeCount() != 0) {
            // write-back cannot evict a leaf it cannot copy, and a host pool smaller than a path of device-resident
            // backed-up nodes leaves no room: those pages stay (accounting was checked after every step)
            count("writeBack.unevictableAtEnd");
            close();
            return;
        }
        for (Rank rank : ranks) {
            if (rank.tree.nodeCount() != 0) {
                StringBuilder nodes = new StringBuilder();
                RadixTestAccess.forEachNode(rank.tree, n -> nodes.append("\n    ").append(n).append(" parentBackedUp=")
                    .append(n.parent().isRoot() || n.parent().isBackedUp()));
                fail("rank " + rank.r + " keeps " + rank.tree.nodeCount() + " nodes after evicting everything:" + nodes);
            }
            rank.tree.checkInvariants();
            rank.ctl.allocator().checkAllFree();
        }
        if (freeDevice.freePages() != devicePages) {
            fail("device pages lost: " + freeDevice.freePages() + " of " + devicePages + " back in the free list");
        }
        close();
    }

    /** Frees every host-only leaf's pages straight into the allocator (end of run; bypasses the host budget). */
    private void evictAllHost(Rank rank) {
        evictAllHost(rank.tree, rank.ctl.allocator());
    }

    /**
     * Removes every host-only leaf of {@code tree} and frees its pages straight into {@code allocator} (end of a run;
     * bypasses the controller's host budget). Shared by the suites of this package.
     */
    static void evictAllHost(RadixTree tree, HostPageAllocator allocator) {
        HostEvictionListener release = new HostEvictionListener() {
            @Override
            public boolean mayEvictHost(RadixNode node) {
                return true;
            }

            @Override
            public void onHostEvicted(RadixNode node, HostValue value) {
                HostPages hp = (HostPages) value;
                int[] pages = new int[hp.ownedPageCount()];
                hp.copyHostPages(pages, 0);
                allocator.free(pages, 0, pages.length);
            }
        };
        while (tree.evictHost(Integer.MAX_VALUE, release) > 0) {
            // repeat: removing a leaf may expose its parent
        }
    }

    private void finishAfterSticky() {
        for (int i = 0; i < 50; i++) {
            for (Rank rank : ranks) {
                agentStep(rank, true);
                agentStep(rank, false);
                pollStep(rank);
                deviceStep(rank);
            }
            checkAll();
        }
        close();
        for (Rec rec : recs.values()) {
            for (Backup b : rec.b) {
                if (!b.state().terminal()) {
                    fail("after a sticky error and close, " + b + " is not terminal");
                }
            }
        }
    }

    /** After a failure: releases everything without further checks. */
    void abandon() {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        for (Rank rank : ranks) {
            try {
                rank.ctl.close();
            } catch (RuntimeException ignored) {
                // best effort after a failure
            }
            rank.rt.close();
        }
    }

    /** Closes every controller, frees the device KV areas and checks (g): nothing leaks. Idempotent. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        try {
            for (Rank rank : ranks) {
                rank.ctl.close();
                rank.ctl.close();
                if (rank.rt.stickyErrorCode() != 0) {
                    continue; // a poisoned context frees nothing, as on a real device
                }
                rank.rt.deviceFree(rank.targetBase);
                if (rank.draftBase != 0) {
                    rank.rt.deviceFree(rank.draftBase);
                }
                SimulatedCudaRuntime.LeakReport leaks = rank.rt.leakReport();
                if (!leaks.clean()) {
                    violations.add("rank " + rank.r + " leaks after close: " + leaks);
                }
            }
        } finally {
            for (Rank rank : ranks) {
                rank.rt.close();
            }
        }
        throwViolations();
    }

    // ------------------------------------------------------------------ byte patterns

    static long pattern(int tag, int rank, boolean isDraft, int layer, int buf, int page, long word) {
        long h = tag * 0x9E3779B97F4A7C15L ^ (rank + 1) * 0xC2B2AE3D27D4EB4FL ^ (isDraft ? 0x165667B19E3779F9L : 0)
            ^ (layer + 1L) * 0x27D4EB2F165667C5L ^ (buf + 1L) * 0x94D049BB133111EBL ^ (page + 1L) * 0xBF58476D1CE4E5B9L
            ^ word * 0x85EBCA77C2B2AE63L;
        return h ^ (h >>> 29);
    }

    // ------------------------------------------------------------------ records

    /** One reservation, identical sequence number on every rank. */
    static final class Rec {
        final long seq;
        final Backup[] b;
        final int[] allDev;
        final boolean withDraft;
        final int startPage;
        final int pageCount;
        final int group;

        Rec(long seq, Backup[] b, int[] allDev, boolean withDraft, int startPage, int pageCount, int group) {
            this.seq = seq;
            this.b = b;
            this.allDev = allDev;
            this.withDraft = withDraft;
            this.startPage = startPage;
            this.pageCount = pageCount;
            this.group = group;
        }
    }

    /** A request: its last node is locked on every rank until its forward's compute work ran everywhere. */
    static final class Request {
        final RadixNode[] last;
        final boolean[] computeDone;
        final int[] newPages;
        /** The request's tokens, and the first page its forward writes (the ones before were present). */
        final int[] tokens;
        final int firstNewPage;
        boolean ended;

        Request(RadixNode[] last, int cp, int[] newPages, int[] tokens, int firstNewPage) {
            this.last = last;
            this.computeDone = new boolean[cp];
            this.newPages = newPages;
            this.tokens = tokens;
            this.firstNewPage = firstNewPage;
        }
    }

    /** A forward in progress: its hooks and writes, in plan order, identical on every rank. */
    static final class Forward {
        static final int TARGET = 1;
        static final int TARGET_NO_HOOK = 2;
        static final int DRAFT = 3;
        static final int DRAFT_NO_HOOK = 4;
        static final int END = 5;

        final ForwardHandle[] h;
        final List<Rec> recs;
        final Request req;
        final int[] plan;
        final int id;
        /** Per rank: a hook threw because the forward's lease expired. */
        final boolean[] revoked;
        int pos;

        /** Per rank: backups its handle carries. */
        final int[] backupCounts;

        Forward(ForwardHandle[] h, List<Rec> recs, Request req, int[] plan, int id, int[] backupCounts) {
            this.backupCounts = backupCounts;
            this.h = h;
            this.recs = recs;
            this.req = req;
            this.plan = plan;
            this.id = id;
            this.revoked = new boolean[h.length];
        }
    }

    /** One load, identical id on every rank. */
    final class LoadRec {
        final int id;
        final LoadOp[] op;
        /** Per rank, per chain page: the host page it is loaded from, or -1 where another rank owns the page. */
        final int[][] hostOf;
        final boolean[][] draftOf;
        final boolean[] terminalSeen;
        final RadixNode[] locked;
        /** Per rank: chain pages attached to the tree when the load was agreed. */
        final BitSet[] attached;
        /** Per rank: chain pages whose bytes a forward waiting on the load saw differ from the host copy. */
        final BitSet[] badRead;
        final boolean[] computeDone;
        Batch batch;
        boolean forward;

        LoadRec(int id, LoadOp[] op, int cp) {
            this.id = id;
            this.op = op;
            int pages = op[0].pageCount();
            this.hostOf = new int[cp][pages];
            for (int[] row : hostOf) {
                Arrays.fill(row, -1);
            }
            this.draftOf = new boolean[cp][pages];
            this.terminalSeen = new boolean[cp];
            this.locked = new RadixNode[cp];
            this.attached = new BitSet[cp];
            this.badRead = new BitSet[cp];
            for (int r = 0; r < cp; r++) {
                attached[r] = new BitSet();
                badRead[r] = new BitSet();
            }
            this.computeDone = new boolean[cp];
        }
    }

    /** The loads one startLoading issued, with per rank its token and the timing of its load-stream operations. */
    final class Batch {
        final List<LoadRec> recs;
        final long[] token;
        final long[] pollsAtIssue;
        final long[] seqFrom;
        final long[] seqTo;
        final long[][] recordEndNs;
        final long[][] copiesDoneNs;
        final int[] nextRecord;
        final long[] maxCopyEndNs;

        Batch(List<LoadRec> recs, int cp, int records) {
            this.recs = recs;
            this.token = new long[cp];
            this.pollsAtIssue = new long[cp];
            this.seqFrom = new long[cp];
            this.seqTo = new long[cp];
            this.recordEndNs = new long[cp][records];
            this.copiesDoneNs = new long[cp][records];
            for (long[] row : recordEndNs) {
                Arrays.fill(row, -1);
            }
            this.nextRecord = new int[cp];
            this.maxCopyEndNs = new long[cp];
        }

        /** True when every load of the batch is loaded or failed on rank {@code r} (its event set is free there). */
        boolean terminalOn(int r) {
            for (LoadRec rec : recs) {
                if (loadClass(rec.op[r].state()) == 0) {
                    return false;
                }
            }
            return true;
        }

        boolean finished() {
            for (LoadRec rec : recs) {
                if (loadRecs.contains(rec)) {
                    return false;
                }
            }
            return true;
        }

        String ids() {
            StringBuilder sb = new StringBuilder("[");
            for (LoadRec rec : recs) {
                sb.append(sb.length() > 1 ? "," : "").append(rec.id);
            }
            return sb.append(']').toString();
        }
    }
}
