package io.hicache.sim.engine;

import io.hicache.core.internal.Backup;
import io.hicache.core.DevicePageSink;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.ControllerBuilder;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.sim.BackupMode;
import io.hicache.sim.SimConfig;
import io.hicache.core.WritePolicy;

import java.util.ArrayList;
import java.util.List;

/**
 * One serving instance of a fleet: its CP ranks' controllers on their simulated devices (each rank stands
 * for its tensor-parallel group, see {@link ServingEngine}), its device page pool and its continuous-batching
 * scheduler. Instances share nothing but the router and the simulated time axis: {@link Replay} advances
 * each to the next arrival with {@link #runUntil} before routing it. Owned by the replay's thread; not
 * thread-safe.
 */
final class Instance {
    private static final DevicePageSink NO_SINK = (pages, offset, count) -> { };
    /** Deferrals of a request whose host chain another request is loading before it recomputes instead. */
    private static final int MAX_LOAD_WAITS = 8;
    private static final int LOAD_RING = 3;

    /** Tests set this to check, before every step, that no device page is held twice. */
    static volatile boolean checkPagesEachStep;

    final int index;
    private final Replay fleet;
    private final int cp;
    private final int pageSize;
    private final int layers;
    private final int draftLayers;
    /** Idle passes that end settling: 1 for a single rank; a group needs rounds to propagate (see settle). */
    private final int idlePasses;
    private final long hostCapacityPages;

    final SimulatedCudaRuntime[] rt;
    final HiCacheController[] ctl;
    private final CudaStream[] computeStreams;
    private final long[] targetBase;
    private final long[] draftBase;
    private final DevicePagePool pool;
    private final DevicePagePool.Recorder recorder;
    private final DevicePagePool.Mirror[] mirrors;
    private final MatchResult[] match;
    private final List<List<Backup>> pendingBackups = new ArrayList<>();
    private final ForwardHandle[] handles;
    private final long[] lastSealed;
    private final RadixNode[] anchors;
    private final ForwardTimeline timeline;

    private final ArrayList<ServedRequest> waiting = new ArrayList<>();
    private final ArrayList<ServedRequest> running = new ArrayList<>();
    private final ArrayList<ServedRequest> stepPrefill = new ArrayList<>();
    private final ArrayList<ServedRequest> stepDecode = new ArrayList<>();
    private final ArrayList<List<LoadOp>> loadSets = new ArrayList<>();
    private final ArrayList<LoadOp> queuedLoads = new ArrayList<>();
    private final boolean sameForward;
    /** Per rank, the largest load token this step's forward waits on per layer (-1: none). */
    private final long[] stepWait;
    /** Device ops issued before this step's loads: the timeline's window starts there. */
    private long stepOpsStart;
    /** Simulated time of the step being formed. */
    private long stepNowNs;
    /** Whether the forward being enqueued waits for a load. */
    private boolean stepWaits;

    /**
     * Whether the controllers may have work: set by device events and by scheduler calls into them, cleared
     * by {@link #settle}. A decode-only step touches neither, so it needs no settling.
     */
    private boolean dirty = true;
    private boolean stepping;
    private boolean deviceStep;
    private long stepEndNs;
    private int computeDoneRanks;
    private boolean wake;
    private final Runnable wakeFn = this::onWake;
    private final Runnable computeDoneFn = this::onComputeDone;

    /** Hit counts of the requests admitted here. */
    final io.hicache.sim.HitStats hits;
    /** This instance's storage tier on the fleet's shared store, or null without {@code --storage}. */
    final StorageSim storage;
    /** Outcomes of the requests finished here. */
    final Outcomes outcomes = new Outcomes();
    /** Rank 0's tree, kept for the router (read between phases, while this instance's thread is parked). */
    private RadixTree routerTree;
    private final MatchResult routerMatch = new MatchResult(256);
    private int nextOutputKey;
    private final int outputKeyStride;

    // counters
    long steps;
    long deviceForwards;
    long busyNs;
    long preemptions;
    long prefilledSimTotal;
    long recomputedSimTotal;
    /** Simulated tokens computed again only because a full hit still computes its last token. */
    long lastTokenRecomputeSim;
    long outputTokens;
    double hostPeak;

    Instance(int index, Replay fleet, int devicePagesCount, int hostPagesPerRank, long hostCapacityPages,
             long linkBytesPerSecond) {
        this.index = index;
        this.fleet = fleet;
        SimConfig config = fleet.config;
        this.cp = config.cp();
        this.pageSize = config.pageSize();
        this.layers = config.model().layers();
        this.draftLayers = config.draftLayers();
        this.idlePasses = cp == 1 ? 1 : 4;
        this.hostCapacityPages = hostCapacityPages;
        this.rt = new SimulatedCudaRuntime[cp];
        this.ctl = new HiCacheController[cp];
        this.computeStreams = new CudaStream[cp];
        this.targetBase = new long[cp];
        this.draftBase = new long[cp];
        this.match = new MatchResult[cp];
        this.handles = new ForwardHandle[cp];
        this.stepWait = new long[cp];
        this.sameForward = config.loadOverlap() == io.hicache.core.LoadOverlap.SAME_FORWARD;
        this.lastSealed = new long[cp];
        this.anchors = new RadixNode[cp];
        this.pool = new DevicePagePool(devicePagesCount);
        this.recorder = new DevicePagePool.Recorder(pool);
        this.mirrors = new DevicePagePool.Mirror[cp];
        InProcessRankAgreement agreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        InProcessRankAgreement loadAgreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        boolean backups = fleet.backupsEnabled;
        this.storage = fleet.store == null ? null : new StorageSim(fleet.storageOptions, fleet.store, cp, pageSize,
                layers, fleet.trueBytesPerSimByte);
        try {
            for (int r = 0; r < cp; r++) {
                rt[r] = new SimulatedCudaRuntime(SimulatedCudaConfig.builder()
                        .seed(config.seed() * 31 + r + 1_000_003L * index)
                        .copyLaunchLatencyNs(config.gpu().copyLaunchLatencyNs()).pcieBytesPerSecond(linkBytesPerSecond)
                        .sharedPcieLink(false).batchedCopySupported(true).deviceMemoryFill((byte) 0)
                        .moveBytes(false) // one-byte stand-ins for pages nobody reads: only copy time matters
                        .build());
                DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MLA).layerCount(layers)
                        .pageSizeTokens(1).bytesPerTokenPerBuffer(1).pageCount(devicePagesCount);
                targetBase[r] = rt[r].deviceMalloc(tb.packedBytes());
                DeviceKvLayout target = tb.packedFrom(targetBase[r]).build();
                DeviceKvLayout draft = null;
                if (draftLayers > 0) {
                    DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MLA).layerCount(draftLayers)
                            .pageSizeTokens(1).bytesPerTokenPerBuffer(1).pageCount(devicePagesCount);
                    draftBase[r] = rt[r].deviceMalloc(db.packedBytes());
                    draft = db.packedFrom(draftBase[r]).build();
                }
                SimulatedCudaRuntime runtime = rt[r];
                ControllerBuilder b = HiCacheController.builder().runtime(runtime).targetLayout(target)
                        .draftLayout(draft).hostPages(hostPagesPerRank).threadingMode(ThreadingMode.INVOKER)
                        .clock(runtime::nowNs).leaseNs(0).loadThresholdTokens(1).maxForwardsInFlight(64)
                        .writePolicy(backups ? config.writePolicy() : WritePolicy.WRITE_THROUGH)
                        .backupMode(config.backupMode() == BackupMode.NONE ? io.hicache.core.BackupMode.LAYERED
                                : config.backupMode().core())
                        .eviction(config.eviction().policy(), config.eviction().policy())
                        .loadOverlap(config.loadOverlap(), "simulated engine with --load-overlap previous-batch");
                if (cp > 1) {
                    b.cpGroup(cp, r, config.lanes(), agreement, loadAgreement);
                }
                if (storage != null) {
                    b.listener(storage.listener(r));
                }
                ctl[r] = b.build();
                computeStreams[r] = ctl[r].computeStream();
                match[r] = new MatchResult(256);
                pendingBackups.add(new ArrayList<>());
                mirrors[r] = new DevicePagePool.Mirror(recorder);
            }
            if (storage != null) {
                storage.attach(ctl, config.model().cliName());
            }
        } catch (RuntimeException e) {
            close(new ArrayList<>());
            throw e;
        }
        this.timeline = index == 0 ? new ForwardTimeline(rt[0], ctl[0], layers, draftLayers) : null;
        this.hits = new io.hicache.sim.HitStats(config.blockTokens());
        this.nextOutputKey = Integer.MAX_VALUE - index;
        this.outputKeyStride = fleet.serving.instances();
    }

    // ------------------------------------------------------------------ router's view

    /** Requests queued or running here. */
    int outstandingRequests() {
        return waiting.size() + running.size();
    }

    /** Simulated prompt tokens still to prefill here (queued and in progress). */
    long pendingPrefillSim() {
        long n = 0;
        for (int i = 0; i < waiting.size(); i++) {
            ServedRequest q = waiting.get(i);
            n += q.targetSim - q.prefilledSim;
        }
        for (int i = 0; i < running.size(); i++) {
            ServedRequest q = running.get(i);
            n += q.targetSim - q.prefilledSim;
        }
        return n;
    }

    /** Leading pages of {@code keys} cached here, on the device or committed on the host (rank 0's tree). */
    int cachedPages(int[] keys) {
        if (routerTree == null) {
            return 0; // not run yet: nothing cached
        }
        routerTree.match(keys, 0, keys.length, routerMatch);
        return routerMatch.devicePageCount() + routerMatch.hostPageCount();
    }

    /** Queues an arrived request (the instance's clock is at its arrival). */
    void enqueue(ServedRequest q) {
        q.instance = index;
        waiting.add(q);
    }

    long nowNs() {
        return rt[0].nowNs();
    }

    // ------------------------------------------------------------------ the event loop

    /**
     * Runs this instance until its clock reaches {@code limitNs}: steps end, steps start, backups commit
     * and loads land in time order; nothing starts at {@code limitNs} itself (a request arriving then is
     * queued first). With {@code Long.MAX_VALUE} runs until every queued request has finished.
     */
    void runUntil(long limitNs) {
        if (routerTree == null) {
            routerTree = ctl[0].tree(); // binds this thread as the controllers' scheduler thread
        }
        while (true) {
            settle();
            long now = nowNs();
            if (stepping && (deviceStep ? computeDoneRanks == cp : stepEndNs <= now)) {
                endStep(now);
                settle();
            }
            if (now >= limitNs) {
                return;
            }
            if (!stepping && startStep(now, false) && deviceStep) {
                settle(); // the submitter issues the forward's copies (each waits on its layer's event)
            }
            long external = stepping && !deviceStep ? stepEndNs : Long.MAX_VALUE;
            if (storage != null && storage.nextReadyNs > now) {
                external = Math.min(external, storage.nextReadyNs); // a request's prefetch lands then
            }
            if (!advance(Math.min(external, limitNs))) {
                // nothing queued on the devices and no time to wait for
                if (stepping || waiting.isEmpty()) {
                    return;
                }
                // Nothing can change any more: the head request cannot get device pages. Run it uncached.
                if (!startStep(now, true)) {
                    throw new IllegalStateException("instance " + index + ": simulation stalled with "
                            + waiting.size() + " requests waiting and nothing in flight");
                }
                settle();
            }
        }
    }

    /** Steps every rank's agents and scheduler until nothing moves; then marks new seals for waking. */
    private void settle() {
        if (!dirty) {
            return;
        }
        dirty = false;
        // A pass that retires nothing can still leave a round open whose values some rank contributed before its
        // latest acks (the in-process agreement never blocks); the group needs up to three more passes to
        // contribute fresh values and read them back, so settling stops only after that many idle passes.
        int idle = 0;
        for (int i = 0; i < 10_000 && idle < idlePasses; i++) {
            int work = 0;
            for (int r = 0; r < cp; r++) {
                work += ctl[r].doAgentWork();
            }
            for (int r = 0; r < cp; r++) {
                work += ctl[r].poll();
            }
            if (storage != null) {
                work += storage.poll();
            }
            idle = work == 0 ? idle + 1 : 0;
        }
        for (int r = 0; r < cp; r++) {
            long sealed = ctl[r].metrics().get(Metric.FORWARDS_SEALED);
            if (sealed != lastSealed[r]) {
                lastSealed[r] = sealed;
                // wakes the loop when the final event of what was just sealed has completed
                rt[r].launchHostFunc(ctl[r].backupStream(), wakeFn);
            }
        }
        if (fleet.backupsEnabled && hostCapacityPages != Long.MAX_VALUE) {
            HiCacheController c = ctl[0];
            double u = (double) c.hostBudgetUsedPages() / c.hostBudgetCapacityPages();
            if (u > hostPeak) {
                hostPeak = u;
            }
        }
        if (timeline != null) {
            timeline.maybeFinish();
        }
    }

    /**
     * Advances every rank's device to the next completion that matters (a wake-up host function) or to
     * {@code externalNs}, whichever is first.
     *
     * @return false when nothing is queued on any device and there is no external time
     */
    private boolean advance(long externalNs) {
        wake = false;
        while (true) {
            long t = Long.MAX_VALUE;
            for (int r = 0; r < cp; r++) {
                t = Math.min(t, rt[r].nextEventTimeNs());
            }
            if (t == Long.MAX_VALUE || t > externalNs) {
                break;
            }
            dirty = true;
            for (int r = 0; r < cp; r++) {
                rt[r].advanceTo(Math.max(t, rt[r].nowNs()));
            }
            if (wake) {
                return true;
            }
        }
        if (externalNs == Long.MAX_VALUE) {
            return false;
        }
        for (int r = 0; r < cp; r++) {
            rt[r].advanceTo(Math.max(externalNs, rt[r].nowNs()));
        }
        return true;
    }

    private void onWake() {
        wake = true;
    }

    private void onComputeDone() {
        computeDoneRanks++;
        wake = true;
    }

    /** Whether any backup or load is still in flight on a rank. */
    boolean copiesInFlight() {
        for (int r = 0; r < cp; r++) {
            if (ctl[r].backupsInFlight() > 0 || ctl[r].loadsInFlight() > 0) {
                return true;
            }
        }
        return false;
    }

    /** Runs until the devices hold no backup or load (after every request finished). */
    void drain() {
        for (int i = 0; i < 1_000_000; i++) {
            dirty = true;
            settle();
            if (!copiesInFlight()) {
                if (storage != null) {
                    storage.flush(); // what this run committed is in the store for the next one
                    dirty = true;
                    settle();
                }
                return;
            }
            if (!advance(Long.MAX_VALUE)) {
                settle();
            }
        }
        throw new IllegalStateException("instance " + index + ": backups or loads did not drain at the end of the run");
    }

    // ------------------------------------------------------------------ one step

    /**
     * Forms the next step at {@code now}: one token for every decoding request, the next chunk of every
     * request in prefill, then new requests from the head of the queue while the token budget lasts; and
     * starts it. A step that carries backups runs on the simulated devices layer by layer through the
     * controllers' hooks; any other step only takes its time (nothing on the devices would differ).
     *
     * @param force run the head request even without device pages (uncached), when nothing else can move
     * @return whether a step started
     */
    private boolean startStep(long now, boolean force) {
        if (checkPagesEachStep) {
            checkPageOwnership();
        }
        stepNowNs = now;
        stepPrefill.clear();
        stepDecode.clear();
        queuedLoads.clear();
        pruneLoadSets();
        int budget = fleet.serving.maxBatchTokens();
        // 1. decode: every running request past its prefill gets one token, growing its KV page by page
        boolean preempted = false;
        for (int i = 0; i < running.size(); i++) {
            ServedRequest q = running.get(i);
            if (q.inPrefill()) {
                continue;
            }
            if (!growForDecode(q)) {
                preempted = true;
                i = -1; // the running list changed; start over (requests already grown need nothing more)
            }
        }
        long decodeContext = 0;
        for (int i = 0; i < running.size() && budget > 0; i++) {
            ServedRequest q = running.get(i);
            if (!q.inPrefill()) {
                stepDecode.add(q);
                decodeContext += q.request.inputLength() + q.decoded;
                budget--;
            }
        }
        // 2. the next chunk of requests already prefilling, in admission order
        int budgetSim = fleet.simTokens(budget);
        for (int i = 0; i < running.size() && budgetSim > 0; i++) {
            ServedRequest q = running.get(i);
            if (q.inPrefill()) {
                q.chunkSim = Math.min(Math.min(q.targetSim - q.prefilledSim, fleet.chunkSim), budgetSim);
                budgetSim -= q.chunkSim;
                stepPrefill.add(q);
            }
        }
        // 3. new requests from the head of the queue (FCFS; a request whose host hit is loading is skipped)
        int taken = 0;
        if (!preempted) {
            for (int i = 0; i < waiting.size() && i < ServingEngine.LOOKAHEAD_REQUESTS && (budgetSim > 0 || force);) {
                ServedRequest q = waiting.get(i);
                int admitted = admit(q, force);
                if (admitted < 0) {
                    break; // FCFS: the head waits for device pages
                }
                if (admitted == 0) {
                    i++;
                    continue;
                }
                waiting.remove(i);
                running.add(q);
                q.chunkSim = Math.min(Math.min(q.targetSim - q.prefilledSim, fleet.chunkSim), Math.max(budgetSim, 1));
                budgetSim -= q.chunkSim;
                stepPrefill.add(q);
                taken++;
                if (q.firstScheduledNs < 0) {
                    q.firstScheduledNs = now;
                }
                if (force) {
                    break;
                }
            }
        }
        stepOpsStart = rt[0].opsIssued();
        if (!queuedLoads.isEmpty()) {
            for (int r = 0; r < cp; r++) {
                ctl[r].startLoading();
                rt[r].launchHostFunc(ctl[r].loadStream(), wakeFn);
            }
            loadSets.add(new ArrayList<>(queuedLoads));
        }
        if (preempted || taken > 0 || !stepPrefill.isEmpty() || !queuedLoads.isEmpty()) {
            dirty = true; // matches, loads, inserts and reservations went to the controllers
        }
        // same-forward: a step that prefills on pages still loading waits per layer for them on the device
        boolean waits = false;
        java.util.Arrays.fill(stepWait, -1);
        for (int i = 0; i < stepPrefill.size(); i++) {
            ServedRequest q = stepPrefill.get(i);
            if (q.waitFor == null) {
                continue;
            }
            LoadOp.State s = q.waitFor[0].state();
            if (s == LoadOp.State.LOADED || s == LoadOp.State.FAILED) {
                q.waitFor = null;
                continue;
            }
            for (int r = 0; r < cp; r++) {
                stepWait[r] = Math.max(stepWait[r], q.waitFor[r].consumer());
            }
            waits = true;
        }
        boolean backupsWaiting = !pendingBackups.get(0).isEmpty();
        if (stepPrefill.isEmpty() && stepDecode.isEmpty() && !backupsWaiting) {
            return false;
        }
        // 4. the chunks' whole pages join the tree before the forward, so their backups join its hooks
        long prefillTokens = 0;
        double attnPairs = 0;
        for (int i = 0; i < stepPrefill.size(); i++) {
            ServedRequest q = stepPrefill.get(i);
            long context = fleet.promptTokens(q.prefilledSim);
            long fresh = fleet.promptTokens(q.prefilledSim + q.chunkSim) - context;
            prefillTokens += fresh;
            attnPairs += fresh * (context + (fresh + 1) / 2.0);
            insertChunk(q);
        }
        long layerNs = fleet.compute.stepLayerNs(prefillTokens, attnPairs, stepDecode.size(), decodeContext,
                fleet.serving.tp());
        layerNs = (layerNs + cp - 1) / cp;
        long durationNs = layerNs * (layers + draftLayers);
        stepping = true;
        steps++;
        busyNs += durationNs;
        // Backups run the hooks of a step that prefills (its own chunks' pages, and finished requests' pages
        // waiting since); a decode-only step leaves them waiting, unless nothing else will run.
        boolean flush = stepPrefill.isEmpty() && stepDecode.isEmpty();
        if (waits || !pendingBackups.get(0).isEmpty() && (!stepPrefill.isEmpty() || flush)) {
            stepWaits = waits;
            enqueueForward(layerNs);
        } else {
            deviceStep = false;
            stepEndNs = now + durationNs;
        }
        return true;
    }

    /**
     * Admission of a queued request: match, load back a host hit first (the request joins a later step once
     * the loaded pages are published), then device pages for everything not on the device.
     *
     * @return 1 admitted, 0 not now (loading, or the load ring is busy), -1 no device pages
     */
    private int admit(ServedRequest q, boolean force) {
        dirty = true;
        if (q.load != null) {
            LoadOp.State s = q.load.state();
            if (s == LoadOp.State.QUEUED || s == LoadOp.State.ISSUED) {
                return 0;
            }
            q.loadedPages = s == LoadOp.State.LOADED ? q.load.pageCount() : 0;
            q.load = null;
            q.loadDone = true;
        }
        q.waitFor = null; // found again below: the loads this admission's prefix still waits for
        for (int r = 0; r < cp; r++) {
            ctl[r].match(q.keys, 0, q.keys.length, match[r]);
        }
        if (storage != null && !force) {
            long now = nowNs();
            if (!q.storageTried) {
                q.storageTried = true;
                storage.onMatch(match);
                long wait = storage.prefetch(q.keys, match, q.request.index());
                if (wait >= 0) {
                    q.storagePages = storage.lastPublished();
                    q.prefetches = storage.lastPrefetches();
                    q.storageReadyNs = now + wait;
                    for (int r = 0; r < cp; r++) {
                        ctl[r].tree().match(q.keys, 0, q.keys.length, match[r]);
                    }
                }
            }
            if (q.storageReadyNs > now) {
                storage.nextReadyNs = Math.min(storage.nextReadyNs <= now ? Long.MAX_VALUE : storage.nextReadyNs,
                        q.storageReadyNs);
                return 0; // its prefetch is still landing (modelled time)
            }
        }
        int devicePrefix = match[0].devicePageCount();
        if (match[0].hostPageCount() > 0 && fleet.backupsEnabled && !q.loadDone && !force) {
            if (loadSets.size() >= LOAD_RING) {
                return 0; // every load event set is busy; try again at the next step
            }
            long refused = ctl[0].metrics().get(Metric.LOADS_REFUSED);
            recorder.reset();
            LoadOp op = ctl[0].loadBack(match[0], q.request.index(), Integer.MAX_VALUE, recorder);
            LoadOp[] ops = sameForward && op != null ? new LoadOp[cp] : null;
            if (ops != null) {
                ops[0] = op;
            }
            for (int r = 1; r < cp; r++) {
                mirrors[r].reset();
                LoadOp mine = ctl[r].loadBack(match[r], q.request.index(), Integer.MAX_VALUE, mirrors[r]);
                if (ops != null) {
                    ops[r] = mine;
                }
            }
            if (q.prefetches != null) {
                storage.consume(q.prefetches); // the load protects its host pages from here on
                q.prefetches = null;
            }
            if (op != null) {
                queuedLoads.add(op);
                q.hostHitStartNs = stepNowNs;
                if (!sameForward) {
                    q.load = op;
                    return 0; // admitted at a later step, once the load is agreed
                }
                // same-forward: the chain is now a loading device prefix this step's forward computes on
                q.loadDone = true;
                q.loadedPages = op.pageCount();
                q.waitFor = ops; // the latest load issued: waiting for it covers any load above it
                for (int r = 0; r < cp; r++) {
                    ctl[r].tree().match(q.keys, 0, q.keys.length, match[r]);
                }
                devicePrefix = match[0].devicePageCount();
            } else {
                if (ctl[0].metrics().get(Metric.LOADS_REFUSED) != refused || ++q.loadWaits > MAX_LOAD_WAITS) {
                    q.loadDone = true; // no device room for the load (or waited long enough): recompute
                }
                return 0;
            }
        }
        if (sameForward && q.waitFor == null && match[0].loadingNode() != null) {
            // the prefix reaches a load in flight (this request's or another's): the forward waits for it
            q.waitFor = new LoadOp[cp];
            for (int r = 0; r < cp; r++) {
                q.waitFor[r] = ctl[r].joinLoad(match[r]);
            }
        }
        int totalPages = ceilPages(q.targetSim);
        int newPages = totalPages - devicePrefix;
        if (q.pages.length < totalPages + 1) {
            q.pages = new int[Math.max(totalPages + 1, q.pages.length * 2)];
        }
        System.arraycopy(match[0].devicePages(), 0, q.pages, 0, devicePrefix);
        if (allocate(newPages, q.pages, devicePrefix, true)) {
            // leave room after the prompt for the answer's pages, so they follow it and copy as one range
            pool.skip(ceilPages(fleet.decodedSim(q.request.outputLength())));
            q.noPages = false;
            q.pageCount = totalPages;
            q.ownedFrom = devicePrefix;
            q.insertedPages = devicePrefix;
            q.lock = new RadixNode[cp];
            for (int r = 0; r < cp; r++) {
                RadixNode n = match[r].lastDeviceNode();
                if (n != null && !n.isRoot()) {
                    ctl[r].tree().lock(n);
                    q.lock[r] = n;
                }
            }
        } else if (force) {
            q.noPages = true;
            q.pageCount = 0;
            q.ownedFrom = 0;
            q.lock = null;
        } else {
            return -1;
        }
        // a full hit still computes its last token (the logits of the next one), as SGLang matches len - 1
        int prefixSim = devicePrefix * pageSize;
        if (prefixSim >= q.targetSim) {
            prefixSim = q.targetSim - 1;
            if (!q.admittedOnce) {
                lastTokenRecomputeSim++; // a readmission's chunks count as recomputed already
            }
        }
        q.prefilledSim = prefixSim;
        if (!q.admittedOnce) {
            q.admittedOnce = true;
            int hostHit = Math.min(q.loadedPages, devicePrefix);
            q.hostHitPages = hostHit;
            if (q.prefetches != null) {
                storage.consume(q.prefetches);
                q.prefetches = null;
            }
            if (storage != null) {
                storage.recordHit(Math.min(q.storagePages, hostHit));
            }
            hits.record(q.request, q.simTokens, (devicePrefix - hostHit) * pageSize, hostHit * pageSize);
        }
        return 1;
    }

    /** Inserts the whole prompt pages this step's chunk completes, moves the lock, reserves their backups. */
    private void insertChunk(ServedRequest q) {
        if (q.noPages) {
            return;
        }
        int full = Math.min((q.prefilledSim + q.chunkSim) / pageSize, q.keys.length);
        if (full <= q.insertedPages) {
            return;
        }
        insertPages(q, q.keys, full);
        q.insertedPages = full;
    }

    /** Inserts {@code keys[0, n)} with the request's pages on every rank; the new path is locked instead of the old. */
    private void insertPages(ServedRequest q, int[] keys, int n) {
        dirty = true;
        int present = -1;
        RadixNode[] locks = new RadixNode[cp];
        for (int r = 0; r < cp; r++) {
            RadixTree tree = ctl[r].tree();
            int p = tree.insert(keys, 0, n, q.pages, 0);
            if (present < 0) {
                present = p;
            } else if (p != present) {
                throw new IllegalStateException("CP ranks diverged: rank " + r + " found " + p + " pages present, rank 0 "
                        + present);
            }
            RadixNode node = tree.lastInsertNode();
            if (!node.isRoot()) {
                tree.lock(node);
                locks[r] = node;
            }
        }
        if (present < q.insertedPages) {
            throw new IllegalStateException("request " + q.request.index() + ": its locked pages left the tree");
        }
        if (present > q.ownedFrom) {
            // another request inserted these pages first: ours are duplicates (as SGLang frees them)
            pool.free(q.pages, q.ownedFrom, present - q.ownedFrom);
        }
        q.ownedFrom = Math.max(q.ownedFrom, n);
        unlock(q);
        q.lock = locks;
        if (fleet.backupsEnabled && fleet.config.writePolicy() != WritePolicy.WRITE_BACK && locks[0] != null) {
            for (int r = 0; r < cp; r++) {
                ctl[r].reserveByPolicy(locks[r], fleet.withDraft, pendingBackups.get(r));
            }
        }
    }

    private void unlock(ServedRequest q) {
        if (q.lock != null) {
            for (int r = 0; r < cp; r++) {
                if (q.lock[r] != null) {
                    ctl[r].tree().unlock(q.lock[r]);
                }
            }
            q.lock = null;
        }
    }

    /**
     * Makes room for a decoding request's next token: a new page when its KV fills the last one, evicting
     * cached pages if the pool is empty and, failing that, preempting (SGLang's retract: the running request
     * with the fewest decoded tokens goes back to the head of the queue, its pages released; it is prefilled
     * again, prompt and decoded tokens, when readmitted).
     *
     * @return false when a request was preempted (the running list changed)
     */
    private boolean growForDecode(ServedRequest q) {
        if (q.noPages) {
            return true;
        }
        int need = ceilPages(q.simTokens + fleet.decodedSim(q.decoded)); // KV of every token emitted so far
        if (need <= q.pageCount) {
            return true;
        }
        if (q.pages.length < need) {
            q.pages = java.util.Arrays.copyOf(q.pages, Math.max(need, q.pages.length * 2));
        }
        if (need - q.pageCount == 1 && q.pageCount > 0 && pool.allocateAfter(q.pages[q.pageCount - 1], q.pages,
                q.pageCount)) {
            q.pageCount = need;
            return true;
        }
        if (allocate(need - q.pageCount, q.pages, q.pageCount, false)) {
            q.pageCount = need;
            return true;
        }
        preempt(victim());
        return false;
    }

    private ServedRequest victim() {
        ServedRequest v = null;
        for (int i = 0; i < running.size(); i++) {
            ServedRequest c = running.get(i);
            if (c.inPrefill() || c.noPages) {
                continue;
            }
            if (v == null || c.decoded < v.decoded
                    || (c.decoded == v.decoded && c.simTokens > v.simTokens)) {
                v = c;
            }
        }
        return v;
    }

    private void preempt(ServedRequest v) {
        running.remove(v);
        if (v.pageCount > v.ownedFrom) {
            pool.free(v.pages, v.ownedFrom, v.pageCount - v.ownedFrom);
        }
        unlock(v);
        v.pageCount = 0;
        v.ownedFrom = 0;
        v.insertedPages = 0;
        v.prefilledSim = 0;
        v.targetSim = v.simTokens + fleet.decodedSim(v.decoded); // prompt and every emitted token
        v.loadDone = false;
        v.loadWaits = 0;
        v.preemptions++;
        preemptions++;
        waiting.addFirst(v);
    }

    /** Simulated tokens of KV a request holds after its prefill and {@code decoded - 1} decode steps. */
    private int kvSim(ServedRequest q) {
        return q.simTokens + fleet.decodedSim(Math.max(0, q.decoded - 1));
    }

    private int ceilPages(int sim) {
        return (sim + pageSize - 1) / pageSize;
    }

    /** The running step ended at {@code now}: tokens come out, requests finish. */
    private void endStep(long now) {
        stepping = false;
        if (deviceStep && timeline != null) {
            timeline.computeDone();
        }
        for (int i = 0; i < stepPrefill.size(); i++) {
            ServedRequest q = stepPrefill.get(i);
            q.prefilledSim += q.chunkSim;
            prefilledSimTotal += q.chunkSim;
            if (q.preemptions > 0) {
                recomputedSimTotal += q.chunkSim;
            }
            q.chunkSim = 0;
            if (!q.inPrefill()) {
                emitToken(q, now); // the prefill's last chunk yields the next token
            }
        }
        for (int i = 0; i < stepDecode.size(); i++) {
            emitToken(stepDecode.get(i), now);
        }
        stepPrefill.clear();
        stepDecode.clear();
    }

    private void emitToken(ServedRequest q, long now) {
        q.decoded++;
        outputTokens++;
        if (q.firstTokenNs < 0) {
            q.firstTokenNs = now;
        }
        if (q.decoded >= Math.max(1, q.request.outputLength())) {
            finish(q, now);
        }
    }

    /**
     * A finished request's KV joins the tree, prompt and decoded tokens, its whole pages (SGLang's
     * {@code cache_finished_req}): the output's pages under the keys the trace gives the answer (the next turn
     * of a conversation repeats them), else under fresh keys; the write policy reserves their backups for the
     * next forward that runs the hooks.
     */
    private void finish(ServedRequest q, long now) {
        q.finishNs = now;
        running.remove(q);
        if (!q.noPages) {
            int kv = kvSim(q);
            int full = Math.min(kv / pageSize, q.pageCount);
            int[] keys = q.keys;
            if (full > q.keys.length) {
                keys = java.util.Arrays.copyOf(q.keys, full);
                for (int i = q.keys.length; i < full; i++) {
                    if (q.answerKeys != null && i < q.answerKeys.length) {
                        keys[i] = q.answerKeys[i];
                    } else {
                        keys[i] = nextOutputKey;
                        nextOutputKey -= outputKeyStride; // unique across the fleet
                    }
                }
            }
            if (full > q.insertedPages) {
                insertPages(q, keys, full);
                q.insertedPages = full;
            }
            if (q.pageCount > q.ownedFrom) {
                pool.free(q.pages, q.ownedFrom, q.pageCount - q.ownedFrom);
            }
            unlock(q);
            q.pageCount = 0;
            q.ownedFrom = 0;
        }
        q.pages = null;
        outcomes.add(q);
    }

    /** Enqueues a step as one forward on every rank: a kernel and the hooks per layer, carrying the waiting backups. */
    private void enqueueForward(long layerNs) {
        // the timeline prefers a forward whose layers wait for a load, so the load lane shows beside compute
        boolean capture = timeline != null && timeline.wants(deviceForwards)
                && (stepWaits || !sameForward || deviceForwards < ServingEngine.TIMELINE_FORWARD
                || deviceForwards > ServingEngine.TIMELINE_FORWARD + 500);
        if (capture) {
            timeline.begin(deviceForwards, stepOpsStart, rt[0].nowNs()); // the step's loads included
        }
        for (int r = 0; r < cp; r++) {
            handles[r] = ctl[r].beginForward(pendingBackups.get(r));
            pendingBackups.get(r).clear();
        }
        for (int l = 0; l < layers; l++) {
            for (int r = 0; r < cp; r++) {
                ctl[r].waitLayer(stepWait[r], l); // a no-op without a load in flight (-1)
                rt[r].simulateKernel(computeStreams[r], layerNs);
                handles[r].targetLayerStored(l);
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int r = 0; r < cp; r++) {
                ctl[r].waitDraftLayer(stepWait[r], d);
                rt[r].simulateKernel(computeStreams[r], layerNs);
                handles[r].draftLayerStored(d);
            }
        }
        for (int r = 0; r < cp; r++) {
            handles[r].endForward();
            handles[r] = null;
            rt[r].launchHostFunc(computeStreams[r], computeDoneFn);
        }
        deviceStep = true;
        dirty = true;
        computeDoneRanks = 0;
        deviceForwards++;
        if (capture) {
            settle(); // the submitter issues this forward's copies and seals it
            timeline.endWindow();
        }
    }

    /** Allocates {@code n} device pages into {@code out[offset..]}, evicting cached pages if needed. */
    private boolean allocate(int n, int[] out, int offset, boolean protectMatch) {
        if (n <= 0) {
            return true;
        }
        if (pool.allocate(n, out, offset)) {
            return true;
        }
        dirty = true; // eviction (under write-back it may also queue copies)
        if (protectMatch) {
            for (int r = 0; r < cp; r++) {
                anchors[r] = match[r].lastDeviceNode();
                ctl[r].tree().lock(anchors[r]);
            }
        }
        try {
            int need = n - pool.freePages();
            for (int r = 0; r < cp; r++) {
                ctl[r].evictDevice(need, r == 0 ? pool : NO_SINK);
            }
        } finally {
            if (protectMatch) {
                for (int r = 0; r < cp; r++) {
                    ctl[r].tree().unlock(anchors[r]);
                    anchors[r] = null;
                }
            }
        }
        return pool.allocate(n, out, offset);
    }

    private void pruneLoadSets() {
        for (int i = loadSets.size() - 1; i >= 0; i--) {
            List<LoadOp> set = loadSets.get(i);
            boolean done = true;
            for (int k = 0; k < set.size() && done; k++) {
                LoadOp.State s = set.get(k).state();
                done = s == LoadOp.State.LOADED || s == LoadOp.State.FAILED;
            }
            if (done) {
                loadSets.remove(i);
            }
        }
    }

    /** Whether nothing is queued, running or stepping here. */
    boolean idle() {
        return waiting.isEmpty() && running.isEmpty() && !stepping;
    }

    // ------------------------------------------------------------------ end of run

    /** Checks the end state: trees valid, nothing locked, every device page free or in the tree, host pages referenced. */
    void checkEndState() {
        if (!idle()) {
            throw new IllegalStateException("instance " + index + ": " + waiting.size() + " waiting and "
                    + running.size() + " running requests at the end");
        }
        for (int r = 0; r < cp; r++) {
            RadixTree tree = ctl[r].tree();
            tree.checkInvariants();
            if (tree.devicePagesLocked() != 0) {
                throw new IllegalStateException("instance " + index + " rank " + r + ": " + tree.devicePagesLocked()
                        + " device pages still locked after every request finished");
            }
            if (tree.devicePagesCached() + pool.freePages() != pool.capacityPages()) {
                throw new IllegalStateException("instance " + index + " rank " + r + ": device pages leaked: tree holds "
                        + tree.devicePagesCached() + ", pool has " + pool.freePages() + " free of "
                        + pool.capacityPages());
            }
            if (cp == 1 && ctl[r].allocator().allocatedPages() != tree.hostPagesCommitted()) {
                throw new IllegalStateException("instance " + index + ": host pages leaked: "
                        + ctl[r].allocator().allocatedPages() + " allocated, " + tree.hostPagesCommitted()
                        + " referenced by the tree");
            }
        }
    }

    /**
     * Checks that no device page is held twice: the free list and the requests' own pages are disjoint (the
     * pool itself refuses a page freed twice) and, with the tree's pages, account for the whole pool.
     */
    void checkPageOwnership() {
        boolean[] seen = new boolean[pool.capacityPages()];
        long owned = 0;
        for (int p : pool.freeList()) {
            mark(seen, p, "the free list");
        }
        for (ServedRequest q : running) {
            for (int i = q.ownedFrom; i < q.pageCount; i++) {
                mark(seen, q.pages[i], "request " + q.request.index());
                owned++;
            }
        }
        long tree = ctl[0].tree().devicePagesCached();
        if (tree + pool.freePages() + owned != pool.capacityPages()) {
            throw new IllegalStateException("instance " + index + ": device pages do not add up: tree " + tree
                    + " + free " + pool.freePages() + " + requests " + owned + " != " + pool.capacityPages());
        }
    }

    private void mark(boolean[] seen, int page, String holder) {
        if (seen[page]) {
            throw new IllegalStateException("instance " + index + ": device page " + page + " owned twice (again by "
                    + holder + ")");
        }
        seen[page] = true;
    }

    List<io.hicache.sim.report.TimelineSegment> timelineSegments() {
        return timeline == null ? List.of() : timeline.segments();
    }

    /** Closes controllers, frees the KV areas and closes the devices; adds each rank's leak report; returns device ops. */
    long close(List<SimulatedCudaRuntime.LeakReport> leaks) {
        long ops = 0;
        RuntimeException failure = null;
        if (storage != null) {
            try {
                storage.close();
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        for (int r = 0; r < cp; r++) {
            try {
                if (ctl[r] != null) {
                    ctl[r].close();
                }
                if (rt[r] != null) {
                    rt[r].setOpListener(null);
                    if (targetBase[r] != 0) {
                        rt[r].deviceFree(targetBase[r]);
                    }
                    if (draftBase[r] != 0) {
                        rt[r].deviceFree(draftBase[r]);
                    }
                    leaks.add(rt[r].leakReport());
                    ops += rt[r].opsCompleted();
                    rt[r].close();
                }
            } catch (RuntimeException e) {
                if (failure == null) {
                    failure = e;
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
        return ops;
    }
}
