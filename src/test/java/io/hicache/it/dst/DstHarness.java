package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.internal.Backup;
import io.hicache.core.BackupMode;
import io.hicache.core.HiCache;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.HostLayout;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.radix.RadixTree;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Deterministic simulation of the backup controller: one real {@link HiCache} (with its radix tree,
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
 * <p>With divergent schedules ({@link DivergenceDstTest}) the group has at least two ranks and, once in a run, the
 * engine gets one rank's schedule wrong: that rank skips the reservations of one request, or reserves them with the
 * draft flag flipped; sealed backups get a time limit of 5 to 20 ms (simulated), which settles a skipped reservation
 * nothing follows and now and then releases a backup on one rank while another commits it (revoked there next round). Divergence checks: (v1) no node is committed on one rank only, at every step
 * (a backup committed and not revoked on one rank is committed, sealed or in flight on every other, or released
 * there past its time limit, which the next round's digests settle) and at the end (every rank holds host values for
 * the same token prefixes); (v2) the backups of a divergent request abort on every rank and the group is degraded,
 * {@code DIVERGED} or (after a time limit) {@code AGREEMENT_TIMEOUT}.
 *
 * <p>After every step {@link #checkAll()} verifies the invariants of the design; a violation throws
 * {@link AssertionError} with the recent steps. Single-threaded; not reusable after {@link #close()}.
 *
 * <p>The harness keeps the configuration, the schedule, the drain, the final checks and the trace; the rest of the
 * model lives in package-private parts that it owns and that reach back into its state: {@link Rank} (one rank's
 * device, controller and byte models), {@link EngineSteps} (requests, forwards and their hooks, aborts, matches,
 * evictions), {@link LoadSteps} (the load-back steps and the checks made as loads end), {@link DevicePages} (device
 * page accounting), {@link HarnessAllocator} (the device allocator loadBack gets), {@link Invariants} (the checks after
 * every step and at each commit), and the records {@link Rec}, {@link Request}, {@link Forward}, {@link LoadRec} and
 * {@link Batch}.
 */
final class DstHarness implements AutoCloseable {
    static final int UNSET = -1;
    /** The lane strategies the schedules draw from (the three the suites began with, so old seeds keep their runs). */
    private static final OwnerLanes[] DRAWN_LANES = {OwnerLanes.Standard.ROUND_ROBIN, OwnerLanes.Standard.CONTIGUOUS, OwnerLanes.Standard.ZIGZAG};
    /** No divergent step; a rank skips a request's reservations; a rank flips their draft flag. */
    static final int SAME = 0;
    static final int SKIP = 1;
    static final int FLIP_DRAFT = 2;
    static final long BYTES_PER_TOKEN = 8;

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
    /**
     * The divergence suite ({@link DivergenceDstTest}): its own draws come from {@link #divergeRnd}, so the other
     * suites' schedules stay as they were.
     */
    final boolean diverge;
    final SplittableRandom divergeRnd;
    /** The sealed time limit (simulated ns; 0: the default, which never fires here). */
    final long sealedLimitNs;
    /** Set once the engine's schedule diverged (seq numbers no longer line up across ranks). */
    boolean diverged;

    /** The token prefixes requests share, one per family (part of the configuration). */
    final int[][] familyTokens;

    final Rank[] ranks;
    // ---- the parts of the model (see the class comment)
    final EngineSteps engine;
    final LoadSteps loadSteps;
    final Invariants checks;
    final DevicePages devices;
    // ---- state shared by the parts
    /**
     * Backups not yet terminal on every rank, in reservation order, keyed by a harness number (the sequence number
     * is identical on every rank until a divergent step).
     */
    final LinkedHashMap<Long, Rec> recs = new LinkedHashMap<>();
    /** Each backup's record, by identity. */
    final java.util.IdentityHashMap<Backup, Rec> byBackup = new java.util.IdentityHashMap<>();
    long nextRecId;
    /** Violations found and not yet thrown ({@link #throwViolations()}). */
    final List<String> violations = new ArrayList<>();
    /** The next fresh token, for request tails no other request shares. */
    int uniqueToken = 1_000_000;
    /** The next write tag, for the forwards' layer writes and the poison of freed device pages. */
    int nextTag = 2;
    boolean stickyInjected;
    private boolean closed;
    /** Set at the end of the run, when the harness frees host values itself (the host budget no longer matches). */
    boolean manualHostEviction;
    /** Set while controllers close: device pages they return are only accounted, not checked or overwritten. */
    boolean closing;
    private final String[] trace = new String[Boolean.getBoolean("hicache.dst.trace") ? 2_000 : 40];
    private long traceCount;
    /** A running hash of every step traced (all of them, not only the ring's), for {@link #digest()}. */
    private long traceHash = 0xCBF2_9CE4_8422_2325L;
    final Map<String, Integer> stats = new HashMap<>();

    DstHarness(long seed) {
        this(seed, false);
    }

    DstHarness(long seed, boolean loads) {
        this(seed, loads, false);
    }

    DstHarness(long seed, boolean loads, boolean leases) {
        this(seed, loads, leases, false);
    }

    DstHarness(long seed, boolean loads, boolean leases, boolean diverge) {
        this.seed = seed;
        this.loads = loads;
        this.leases = leases;
        this.diverge = diverge;
        this.rnd = new SplittableRandom(seed);
        this.divergeRnd = new SplittableRandom(seed ^ 0x4D1E_7E55_0047L);
        int cpDrawn = 1 + rnd.nextInt(4);
        this.cp = diverge ? Math.max(2, cpDrawn) : cpDrawn;
        OwnerLanes l = DRAWN_LANES[rnd.nextInt(DRAWN_LANES.length)];
        if (diverge) {
            l = OwnerLanes.Standard.values()[divergeRnd.nextInt(OwnerLanes.Standard.values().length)];
        }
        // a sealed backup the group has not agreed on for this long (simulated time) is released and the group degrades:
        // it settles a skipped reservation nothing follows, and now and then a healthy but slow round (then revoked)
        this.sealedLimitNs = diverge ? 30_000 + divergeRnd.nextInt(600_000) : 0;
        this.lanes = cp == 1 ? OwnerLanes.Standard.ROUND_ROBIN : l; // a single rank keeps the controller's default
        this.layers = 1 + rnd.nextInt(4);
        this.draftLayers = rnd.nextInt(3);
        this.pageSize = 1 << rnd.nextInt(3);
        this.devicePages = 24 + rnd.nextInt(24);
        int hostPagesDrawn = 4 + rnd.nextInt(20);
        int p = rnd.nextInt(100);
        WritePolicy policyDrawn = p < 60 ? WritePolicy.WRITE_THROUGH : p < 85 ? WritePolicy.WRITE_THROUGH_SELECTIVE
            : WritePolicy.WRITE_BACK;
        // (the divergence suite keeps to write-through: a diverged group's evictions, and so its write-backs, differ)
        this.policy = diverge && policyDrawn == WritePolicy.WRITE_BACK ? WritePolicy.WRITE_THROUGH : policyDrawn;
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
        // the parts come before the ranks: each rank's controller gets its listeners from them
        engine = new EngineSteps(this);
        loadSteps = new LoadSteps(this);
        checks = new Invariants(this);
        InProcessRankAgreement agreement = cp == 1 ? null : new InProcessRankAgreement(cp);
        try {
            for (int r = 0; r < cp; r++) {
                ranks[r] = new Rank(this, r, agreement, coalesce, batched, batchedSupported);
            }
        } catch (RuntimeException | Error e) {
            for (Rank rank : ranks) {
                if (rank != null) {
                    rank.closeQuietly();
                }
            }
            throw e;
        }
        devices = new DevicePages(this);
        for (Rank rank : ranks) {
            rank.freeModel.set(0, devicePages);
        }
    }

    // ------------------------------------------------------------------ the run

    /** Runs the seeded scenario: {@link #steps} random steps with checks after each, then the drain and final checks. */
    void run() {
        for (int i = 0; i < steps; i++) {
            step();
            checkAll();
            if (diverged && degradedEverywhere()) {
                // the ranks found the divergence: their trees may now differ (a skipped reservation's host eviction),
                // so the lockstep engine stops here; the drain and the end checks follow
                count("diverge.detected");
                break;
            }
        }
        finish();
    }

    private boolean degradedEverywhere() {
        for (Rank rank : ranks) {
            if (!rank.cache.groupState().degraded()) {
                return false;
            }
        }
        return true;
    }

    void count(String what) {
        stats.merge(what, 1, Integer::sum);
    }

    void trace(String what) {
        trace[(int) (traceCount++ % trace.length)] = what;
        traceHash = (traceHash ^ what.hashCode()) * 0x0000_0100_0000_01B3L;
    }

    /**
     * A fingerprint of the run, taken once after {@link #run()}: the configuration, every traced step, the path
     * counts and the next draw of each random source (any change in what the engine drew, or in what a step saw,
     * changes it). Compared across builds to show that a seed replays the same run ({@code scripts/dst --digest}).
     * Consumes a draw of each random source: call it last.
     */
    String digest() {
        long h = traceHash;
        h = h * 31 + describe().hashCode();
        h = h * 31 + traceCount;
        h = h * 31 + new java.util.TreeMap<>(stats).toString().hashCode();
        h = h * 31 + rnd.nextLong();
        h = h * 31 + divergeRnd.nextLong();
        return String.format("%016x steps=%d", h, traceCount);
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
            + " hostLayout=" + hostLayout + (diverge ? " diverge sealedLimitNs=" + sealedLimitNs : "")
            + (leases ? " maxOpenForwards=" + maxOpenForwards + " maxForwardsInFlight="
            + maxForwardsInFlight : "") + (loads ? " loadThreshold=" + loadThresholdTokens + " h2dFaultP="
            + h2dFaultProbability + " refuseP=" + refuseAllocationProbability : "");
    }

    private void step() {
        int k = rnd.nextInt(100);
        if (stickyRun && !stickyInjected && rnd.nextInt(steps) == 0) {
            injectSticky();
            return;
        }
        if (loads && !stickyInjected && rnd.nextInt(100) < 16 && loadSteps.loadStep()) {
            return;
        }
        if (k < 12) {
            if (engine.opens.size() < maxOpenForwards && !stickyInjected && consistent()) {
                int divergent = SAME;
                if (diverge && !diverged && divergeRnd.nextInt(Math.max(1, steps / 8)) == 0) {
                    divergent = draftLayers > 0 && divergeRnd.nextBoolean() ? FLIP_DRAFT : SKIP;
                }
                engine.engineRequest(divergent);
                return;
            }
        } else if (k < 40) {
            if (!engine.opens.isEmpty()) {
                engine.forwardStep(engine.opens.get(rnd.nextInt(engine.opens.size())));
                return;
            }
        } else if (k < 42) {
            if (!stickyInjected && consistent() && rnd.nextBoolean()) {
                engine.engineAbort();
                return;
            }
        } else if (k < 48) {
            if (!stickyInjected && consistent()) {
                engine.engineMatch();
                return;
            }
        } else if (k < 52) {
            if (!stickyInjected && consistent()) {
                engine.engineEvict(1 + rnd.nextInt(Math.max(1, devicePages / 4)));
                return;
            }
        } else if (k < 57) {
            if (!stickyInjected && consistent()) {
                engine.finishRequests();
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
                CacheInternals.stepSubmitter(rank.cache);
            } else {
                CacheInternals.stepCompletion(rank.cache);
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
        rank.cache.poll();
        rank.polls++;
        if (loads) {
            loadSteps.onLoadsPolled(rank);
        }
        throwViolations();
    }

    private void injectSticky() {
        trace("injectStickyError rank 0");
        count("sticky");
        stickyInjected = true;
        ranks[0].rt.injectStickyError(CudaError.ILLEGAL_ADDRESS);
        engine.opens.clear();
    }

    // ------------------------------------------------------------------ lockstep gate

    /** Pending, committed, or aborted; a backup a rank never reserved, or one revoked after commit, counts as aborted. */
    private static int stateClass(Backup b) {
        if (b == null || b.revoked()) {
            return 2;
        }
        return switch (b.state()) {
            case COMMITTED -> 1;
            case ABORTED -> 2;
            default -> 0;
        };
    }

    /** Loads in flight (queued or issued), loaded, failed. */
    static int loadClass(LoadOp.State s) {
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
    boolean consistent() {
        for (LoadRec rec : loadSteps.loadRecs) {
            int c = loadClass(rec.op[0].state());
            for (int r = 1; r < cp; r++) {
                if (loadClass(rec.op[r].state()) != c) {
                    return false;
                }
            }
        }
        for (Rec rec : recs.values()) {
            int c = stateClass(rec.b[0]);
            for (int r = 1; r < cp; r++) {
                if (stateClass(rec.b[r]) != c) {
                    return false;
                }
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ violations and checks

    void fail(String message) {
        violations.add(message);
        throwViolations();
    }

    void throwViolations() {
        if (!violations.isEmpty()) {
            String msg = String.join("\n", violations);
            violations.clear();
            throw new AssertionError(msg);
        }
    }

    /** Checks every invariant on every rank; throws {@link AssertionError} on the first violations. */
    void checkAll() {
        checks.checkAll();
    }

    // ------------------------------------------------------------------ drain and final checks

    private boolean quiescent() {
        if (!engine.opens.isEmpty() || !engine.requests.isEmpty() || !loadSteps.loadRecs.isEmpty()) {
            return false;
        }
        for (Rec rec : recs.values()) {
            for (Backup b : rec.b) {
                if (b != null && !b.state().terminal()) {
                    return false;
                }
            }
        }
        for (Rank rank : ranks) {
            if (rank.cache.backupsInFlight() > 0 || CacheInternals.completionInFlight(rank.cache) > 0
                || rank.cache.loadsInFlight() > 0) {
                return false;
            }
        }
        return true;
    }

    /** Steps agents, polls and devices (in seeded order) until nothing is in flight, checking after every round. */
    private void drain() {
        for (int i = 0; i < 20_000; i++) {
            if (!engine.opens.isEmpty()) {
                engine.forwardStep(engine.opens.get(rnd.nextInt(engine.opens.size())));
            }
            for (Rank rank : ranks) {
                agentStep(rank, true);
                agentStep(rank, false);
            }
            for (Rank rank : ranks) {
                pollStep(rank);
            }
            if (consistent()) {
                engine.finishRequests();
                if (loads) {
                    if (!loadSteps.queuedLoads.isEmpty()) {
                        loadSteps.engineStartLoading(rnd.nextBoolean());
                    }
                    loadSteps.finishLoads();
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
                    // (the divergence suite waits for sealed time limits: larger idle steps)
                    rank.rt.advanceTo(rank.rt.nowNs() + (diverge ? 100_000 : 1_000));
                }
            }
        }
        StringBuilder sb = new StringBuilder("did not drain:");
        for (Rank rank : ranks) {
            sb.append(" rank ").append(rank.r).append(" inFlight=").append(rank.cache.backupsInFlight())
                .append(" completionInFlight=").append(CacheInternals.completionInFlight(rank.cache))
                .append(" loadsInFlight=").append(rank.cache.loadsInFlight());
        }
        for (LoadRec rec : loadSteps.loadRecs) {
            sb.append(" load ").append(rec.id).append(':');
            for (LoadOp op : rec.op) {
                sb.append(' ').append(op.state());
            }
        }
        for (Rec rec : recs.values()) {
            sb.append(" seq ").append(rec.seq).append(':');
            for (Backup b : rec.b) {
                sb.append(' ').append(b == null ? "-" : b.state());
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
        // (f) every rank published the same backups, in the same order (the seqs line up until a divergent step)
        for (Rank rank : ranks) {
            if (!diverged && sealedLimitNs == 0 && !rank.committedSeqs.equals(ranks[0].committedSeqs)) {
                fail("rank " + rank.r + " committed " + rank.committedSeqs + " but rank 0 committed "
                    + ranks[0].committedSeqs);
            }
        }
        // (v2) a divergent schedule degrades the group on every rank (the rank that found it first tells the others
        // at the next round)
        if (diverged) {
            for (int round = 0; round < 3; round++) {
                for (Rank rank : ranks) {
                    pollStep(rank);
                }
            }
            for (Rank rank : ranks) {
                if (!rank.cache.groupState().degraded()) {
                    fail("rank " + rank.r + ": the schedules diverged but its group is " + rank.cache.groupState());
                }
            }
            count("group." + (ranks[0].cache.groupState().cause() == io.hicache.core.cp.GroupState.Cause.DIVERGED
                ? "diverged" : "degraded." + ranks[0].cache.groupState().cause()));
        }
        checks.checkSettled(() -> {
            for (Rank rank : ranks) {
                pollStep(rank);
            }
        });
        // (v1) no node committed on one rank only: every rank holds host values for the same token prefixes (where the
        // schedules stayed identical: after a divergence, or a release past a time limit, the ranks' host budgets and
        // so their host evictions differ, and the check is the per-backup one above)
        java.util.Set<String> hosts0 = hostPrefixes(ranks[0]);
        for (Rank rank : diverge ? new Rank[0] : ranks) {
            java.util.Set<String> hosts = hostPrefixes(rank);
            if (!hosts.equals(hosts0)) {
                java.util.Set<String> only = new java.util.TreeSet<>(hosts);
                only.removeAll(hosts0);
                java.util.Set<String> missing = new java.util.TreeSet<>(hosts0);
                missing.removeAll(hosts);
                fail("rank " + rank.r + " holds host values rank 0 does not (" + only + ") and lacks some it holds ("
                    + missing + "): a node committed on one rank only");
            }
        }
        // evict every device page (write-back copies first) and every host value: all pages come back. Host copies
        // are contiguous from the root (h), so no node without one waits on device for a host copy below it; the
        // rounds repeat while write-backs started by an eviction commit.
        manualHostEviction = true;
        for (int round = 0; round < 64 && ranks[0].tree.nodeCount() > 0; round++) {
            engine.engineEvict(Integer.MAX_VALUE);
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
            CacheInternals.hostAllocator(rank.cache).checkAllFree();
        }
        if (devices.freeDevice.freePages() != devicePages) {
            fail("device pages lost: " + devices.freeDevice.freePages() + " of " + devicePages
                + " back in the free list");
        }
        close();
    }

    /** The token prefixes (as text) of every node of {@code rank}'s tree that holds a host value. */
    static java.util.Set<String> hostPrefixes(Rank rank) {
        java.util.Set<String> out = new java.util.TreeSet<>();
        RadixTestAccess.forEachNode(rank.tree, n -> {
            if (n.hostValue() != null) {
                out.add(prefixOf(n));
            }
        });
        return out;
    }

    /** The token prefix from the root to the end of {@code n}, as text. */
    static String prefixOf(RadixNode n) {
        java.util.ArrayDeque<RadixNode> path = new java.util.ArrayDeque<>();
        for (RadixNode x = n; x != null && !x.isRoot(); x = x.parent()) {
            path.push(x);
        }
        StringBuilder sb = new StringBuilder();
        for (RadixNode x : path) {
            for (int i = 0; i < x.tokenCount(); i++) {
                sb.append(x.token(i)).append(',');
            }
        }
        return sb.toString();
    }

    /** Frees every host-only leaf's pages straight into the allocator (end of run; bypasses the host budget). */
    private void evictAllHost(Rank rank) {
        evictAllHost(rank.tree, CacheInternals.hostAllocator(rank.cache));
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
                if (b != null && !b.state().terminal()) {
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
                rank.cache.close();
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
                rank.cache.close();
                rank.cache.close();
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
}
