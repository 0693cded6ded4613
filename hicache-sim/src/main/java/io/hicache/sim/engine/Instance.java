package io.hicache.sim.engine;

import io.hicache.core.ForwardHooks;
import io.hicache.core.HiCache;
import io.hicache.core.HostPoolView;
import io.hicache.core.LoadHandle;
import io.hicache.core.ThreadingMode;
import io.hicache.core.TreeView;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.simulated.SimulatedCudaConfig;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.sim.BackupMode;
import io.hicache.sim.SimConfig;
import io.hicache.sim.report.TimelineSegment;

import java.util.ArrayList;
import java.util.List;

/**
 * One serving instance of a fleet: its CP ranks' caches on their simulated devices (each rank stands for its
 * tensor-parallel group, see {@link ServingEngine}), driven through the engine API ({@link HiCache}) only, its
 * device pages ({@link PageLedger}) and its continuous-batching scheduler ({@link StepScheduler}); this class runs
 * the event loop: it times the steps, runs their forwards on the devices layer by layer through the caches' hooks,
 * and settles the caches (steps their agents, polls them) until nothing moves. Instances share nothing but the
 * router and the simulated time axis: {@link Replay} advances each to the next arrival with {@link #runUntil}
 * before routing it.
 *
 * <p>Owned by the replay's thread that runs it; between its phases the router reads {@link #cachedPages} from the
 * replay's own thread, with the hand-off of {@link FleetStepper} ordering the two, so the caches are built without
 * the scheduler-thread check. Not thread-safe.
 */
final class Instance {
    /** Tests set this to check, before every step, that no device page is held twice. */
    static volatile boolean checkPagesEachStep;

    final int index;
    private final Replay fleet;
    private final int cp;
    private final int layers;
    private final int draftLayers;
    /** Idle passes that end settling: 1 for a single rank; a group needs rounds to propagate (see settle). */
    private final int idlePasses;
    private final long hostCapacityPages;

    final SimulatedCudaRuntime[] rt;
    /** The CP ranks' caches, rank 0 first. */
    final HiCache[] caches;
    private final CudaStream[] computeStreams;
    private final long[] targetBase;
    private final long[] draftBase;
    private final ForwardHooks[] hooks;
    private final long[] lastSealed;
    private final ForwardTimeline timeline;
    private final PageLedger ledger;
    /** The requests: queue, batch, admission, preemption. */
    final StepScheduler scheduler;

    private final boolean sameForward;
    /** Per rank, the largest load token this step's forward waits on per layer (-1: none). */
    private final long[] stepWait;
    /** Device ops issued before this step's loads: the timeline's window starts there. */
    private long stepOpsStart;
    /** Whether the forward being enqueued waits for a load. */
    private boolean stepWaits;

    /**
     * Whether the caches may have work: set by device events and by scheduler calls into them, cleared
     * by {@link #settle}. A decode-only step touches neither, so it needs no settling.
     */
    private boolean dirty = true;
    /** Whether rank 0's cache was attached to the run's KV-event publisher and router index. */
    private boolean eventsAttached;
    private boolean stepping;
    private boolean deviceStep;
    private long stepEndNs;
    private int computeDoneRanks;
    private boolean wake;
    private final Runnable wakeFn = this::onWake;
    private final Runnable computeDoneFn = this::onComputeDone;

    /** This instance's storage tier on the fleet's shared store, or null without {@code --storage}. */
    final StorageSim storage;

    // counters
    long steps;
    long deviceForwards;
    long busyNs;
    double hostPeak;
    /** The most host pages rank 0's pool held at once (unlimited pools included). */
    long hostPeakPages;

    /** The most device pages in use at once so far. */
    long devicePeakPages() {
        return ledger.peakUsedPages();
    }

    Instance(int index, Replay fleet, int devicePagesCount, int hostPagesPerRank, long hostCapacityPages,
             long linkBytesPerSecond) {
        this.index = index;
        this.fleet = fleet;
        SimConfig config = fleet.config;
        this.cp = config.cp();
        this.layers = fleet.layers;
        this.draftLayers = config.draftLayers();
        this.idlePasses = cp == 1 ? 1 : 4;
        this.hostCapacityPages = hostCapacityPages;
        this.rt = new SimulatedCudaRuntime[cp];
        this.caches = new HiCache[cp];
        this.computeStreams = new CudaStream[cp];
        this.targetBase = new long[cp];
        this.draftBase = new long[cp];
        this.hooks = new ForwardHooks[cp];
        this.stepWait = new long[cp];
        this.sameForward = config.loadOverlap() == io.hicache.core.LoadOverlap.SAME_FORWARD;
        this.lastSealed = new long[cp];
        InProcessRankAgreement agreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        InProcessRankAgreement loadAgreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        boolean backups = fleet.backupsEnabled;
        this.storage = fleet.storeBackend == null ? null : new StorageSim(fleet.storageOptions, fleet.storeBackend,
                this::nowNs, cp, config.pageSize(), layers, fleet.trueBytesPerSimByte);
        try {
            for (int r = 0; r < cp; r++) {
                SimulatedCudaConfig.Builder device = SimulatedCudaConfig.builder()
                        .seed(config.seed() * 31 + r + 1_000_003L * index)
                        .copyLaunchLatencyNs(config.gpu().copyLaunchLatencyNs()).pcieBytesPerSecond(linkBytesPerSecond)
                        .sharedPcieLink(fleet.serving.sharedCopyEngine()).batchedCopySupported(true).deviceMemoryFill((byte) 0)
                        .moveBytes(false); // one-byte stand-ins for pages nobody reads: only copy time matters
                if (fleet.profile != null) { // the engine's measured rates: loads and backups apart
                    device.copyLaunchLatencyNs(fleet.timing.copyLatencyNs())
                            .hostToDeviceBytesPerSecond(linkBytesPerSecond)
                            .deviceToHostBytesPerSecond(Math.max(1, Math.round(fleet.profile.backup().bytesPerS()
                                    / fleet.trueBytesPerSimByte)));
                }
                rt[r] = new SimulatedCudaRuntime(device.build());
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
                HiCache.Builder b = HiCache.builder().runtime(runtime).targetLayout(target)
                        .hostPages(hostPagesPerRank).threadingMode(ThreadingMode.INVOKER).checkThread(false)
                        .clock(runtime::nowNs).leaseNs(0).loadThresholdTokens(1).maxForwardsInFlight(64)
                        .writePolicy(backups ? config.writePolicy() : WritePolicy.WRITE_THROUGH)
                        .backupMode(config.backupMode() == BackupMode.NONE ? io.hicache.core.BackupMode.LAYERED
                                : config.backupMode().core())
                        .eviction(config.eviction(), config.eviction())
                        .loadBatchesInFlight(fleet.loadRing)
                        .loadOverlap(config.loadOverlap(), "simulated engine with --load-overlap previous-batch");
                if (draft != null) {
                    b.draftLayout(draft);
                }
                if (cp > 1) {
                    b.cpGroup(cp, r, config.lanes(), agreement, loadAgreement);
                }
                caches[r] = b.build();
                computeStreams[r] = caches[r].computeStream();
            }
            if (storage != null) {
                storage.attach(caches, config.model().cliName());
            }
        } catch (RuntimeException e) {
            close(new ArrayList<>());
            throw e;
        }
        this.ledger = new PageLedger(index, caches, devicePagesCount);
        this.scheduler = new StepScheduler(index, fleet, caches, ledger, storage, this::nowNs);
        this.timeline = index == 0 ? new ForwardTimeline(rt[0], caches[0], layers, draftLayers) : null;
    }

    // ------------------------------------------------------------------ router's view

    /** Requests queued or running here. */
    int outstandingRequests() {
        return scheduler.outstandingRequests();
    }

    /** Simulated prompt tokens still to prefill here (queued and in progress). */
    long pendingPrefillSim() {
        return scheduler.pendingPrefillSim();
    }

    /**
     * Leading pages of {@code keys} cached here, on the device or committed on the host (rank 0's cache; every rank
     * holds the same tree). Looks without touching: a router's look must not move one rank's access order (the CP
     * group's trees would part) nor the order of an instance the request does not go to.
     */
    int cachedPages(int[] keys) {
        return caches[0].cachedPrefixPages(keys, 0, keys.length);
    }

    /** Leading pages of {@code keys} on the device here: the device part of {@link #cachedPages}. */
    int devicePages(int[] keys) {
        return caches[0].devicePrefixPages(keys, 0, keys.length);
    }

    /** Queues an arrived request (the instance's clock is at its arrival). */
    void enqueue(ServedRequest q) {
        q.instance = index;
        scheduler.enqueue(q);
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
        if (!eventsAttached) {
            eventsAttached = true; // on this instance's scheduler thread, before its first step
            SimKvEvents.attach(index, caches[0], fleet.eventIndex(index)); // KV events: rank 0 speaks for the group
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
            if (storage != null) {
                if (storage.nextReadyNs > now) {
                    external = Math.min(external, storage.nextReadyNs); // a request's prefetch lands then
                }
                if (storage.nextIoDueNs() > now) {
                    external = Math.min(external, storage.nextIoDueNs()); // a write completes then
                }
            }
            if (!advance(Math.min(external, limitNs))) {
                // nothing queued on the devices and no time to wait for
                if (stepping || scheduler.noneWaiting()) {
                    return;
                }
                // Nothing can change any more: the head request cannot get device pages. Run it uncached.
                if (!startStep(now, true)) {
                    throw new IllegalStateException("instance " + index + ": simulation stalled with "
                            + scheduler.waitingCount() + " requests waiting and nothing in flight");
                }
                settle();
            }
        }
    }

    /** Steps every rank's agents and scheduler until nothing moves; then marks new seals for waking. */
    private void settle() {
        if (!(scheduler.takeDirty() | dirty) && (storage == null || !storage.ioDue(nowNs()))) {
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
                work += caches[r].doAgentWork();
            }
            if (storage != null) {
                work += storage.advanceIo(); // store operations due now become visible to the polls below
            }
            for (int r = 0; r < cp; r++) {
                work += caches[r].poll(); // also drives an attached storage tier
            }
            if (storage != null) {
                storage.sample();
            }
            idle = work == 0 ? idle + 1 : 0;
        }
        for (int r = 0; r < cp; r++) {
            long sealed = caches[r].metric(Metric.FORWARDS_SEALED);
            if (sealed != lastSealed[r]) {
                lastSealed[r] = sealed;
                // wakes the loop when the final event of what was just sealed has completed
                rt[r].launchHostFunc(caches[r].backupStream(), wakeFn);
            }
        }
        if (fleet.backupsEnabled) {
            HostPoolView pool = caches[0].hostPool();
            long used = pool.budgetUsedPages();
            hostPeakPages = Math.max(hostPeakPages, used);
            if (hostCapacityPages != Long.MAX_VALUE) {
                double u = (double) used / pool.budgetCapacityPages();
                if (u > hostPeak) {
                    hostPeak = u;
                }
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
            if (caches[r].backupsInFlight() > 0 || caches[r].loadsInFlight() > 0) {
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
     * Forms the next step at {@code now} ({@link StepScheduler#formBatch}) and starts it: issues the loads its
     * admissions queued, inserts its chunks' whole pages and takes its compute time. A step that carries backups or
     * waits for a load runs on the simulated devices layer by layer through the caches' hooks; any other step only
     * takes its time (nothing on the devices would differ).
     *
     * @param force run the head request even without device pages (uncached), when nothing else can move
     * @return whether a step started
     */
    private boolean startStep(long now, boolean force) {
        if (checkPagesEachStep) {
            checkPageOwnership();
        }
        boolean touched = scheduler.formBatch(now, force);
        stepOpsStart = rt[0].opsIssued();
        List<LoadHandle> loads = scheduler.queuedLoads();
        if (!loads.isEmpty()) {
            for (int r = 0; r < cp; r++) {
                caches[r].startLoading();
                rt[r].launchHostFunc(caches[r].loadStream(), wakeFn);
            }
            scheduler.loadsStarted();
        }
        if (touched || !loads.isEmpty()) {
            dirty = true; // matches, loads, inserts and reservations went to the caches
        }
        // same-forward: a step that prefills on pages still loading waits per layer for them on the device
        boolean waits = scheduler.loadWaits(stepWait);
        List<ServedRequest> prefill = scheduler.stepPrefill();
        int decodes = scheduler.stepDecodeCount();
        boolean backupsWaiting = !scheduler.pendingBackups(0).isEmpty();
        if (prefill.isEmpty() && decodes == 0 && !backupsWaiting) {
            return false;
        }
        if (fleet.timing != null) {
            return startProfiledStep(now, prefill, waits);
        }
        // the chunks' whole pages join the tree before the forward, so their backups join its hooks
        long prefillTokens = 0;
        double attnPairs = 0;
        for (int i = 0; i < prefill.size(); i++) {
            ServedRequest q = prefill.get(i);
            long context = fleet.promptTokens(q.prefilledSim);
            long fresh = fleet.promptTokens(q.prefilledSim + q.chunkSim) - context;
            prefillTokens += fresh;
            attnPairs += fresh * (context + (fresh + 1) / 2.0);
            scheduler.insertChunk(q);
        }
        long layerNs = fleet.compute.stepLayerNs(prefillTokens, attnPairs, decodes, scheduler.decodeContext(),
                fleet.serving.tp(), cp);
        long durationNs = layerNs * (layers + draftLayers);
        stepping = true;
        steps++;
        busyNs += durationNs;
        // Every forward runs the hooks of the backups reserved before it, as an engine calls them on every forward:
        // its own chunks' pages, and those finished requests inserted at the end of the previous step, so a
        // decode-only step carries them too (else they would keep their device pages locked until the next prefill).
        boolean carries = !scheduler.pendingBackups(0).isEmpty();
        if (waits || carries) {
            stepWaits = waits;
            enqueueForward(layerNs, 0);
        } else {
            deviceStep = false;
            stepEndNs = now + durationNs;
        }
        return true;
    }

    /**
     * Starts a step of the profiled engine ({@link ProfiledTiming}): the prefill chunk's forward (at most one), then
     * the decode forwards and the step's overhead. On the devices the chunk's forward is its layers, each waiting for
     * its load and then reporting its KV stored, as the engine's layer hooks do; the decodes follow as one kernel.
     */
    private boolean startProfiledStep(long now, List<ServedRequest> prefill, boolean waits) {
        ProfiledTiming t = fleet.timing;
        long prefillNs = 0;
        boolean busy = scheduler.decodesBeside(prefill); // another request's tokens stream during the chunk
        for (int i = 0; i < prefill.size(); i++) {
            ServedRequest q = prefill.get(i);
            long context = fleet.promptTokens(q.prefilledSim);
            long fresh = fleet.promptTokens(q.prefilledSim + q.chunkSim) - context;
            prefillNs += t.prefillNs(fresh, context, q.prefilledSim + q.chunkSim >= q.targetSim, busy);
            scheduler.insertChunk(q);
        }
        long layerNs = prefillNs / layers; // the rest of the division runs in the tail, before the decodes
        long decodesNs = scheduler.profiledDecodeNs(t);
        boolean computes = !prefill.isEmpty() || scheduler.stepDecodeCount() > 0;
        // a copy-only forward (backups of finished requests, nothing to compute) is no engine step: the engine
        // starts those copies when the request finishes
        long tailNs = prefillNs - layerNs * layers + decodesNs + (computes ? t.stepOverheadNs : 0);
        long durationNs = layerNs * layers + tailNs;
        stepping = true;
        steps++;
        busyNs += durationNs;
        if (waits || !scheduler.pendingBackups(0).isEmpty()) {
            stepWaits = waits;
            enqueueForward(layerNs, tailNs);
        } else {
            deviceStep = false;
            stepEndNs = now + durationNs;
        }
        return true;
    }

    /** The step that started ended at {@code now}: tokens come out, requests finish. */
    private void endStep(long now) {
        stepping = false;
        if (deviceStep && timeline != null) {
            timeline.computeDone();
        }
        scheduler.completeStep(now);
    }

    /**
     * Enqueues a step as one forward on every rank: a kernel and the hooks per layer, carrying the waiting backups,
     * then a kernel of {@code tailNs} (the profiled engine's decode forwards; 0 for none).
     */
    private void enqueueForward(long layerNs, long tailNs) {
        // the timeline prefers a forward whose layers wait for a load, so the load lane shows beside compute
        boolean capture = timeline != null && timeline.wants(deviceForwards)
                && (stepWaits || !sameForward || deviceForwards < ServingEngine.TIMELINE_FORWARD
                || deviceForwards > ServingEngine.TIMELINE_FORWARD + 500);
        if (capture) {
            timeline.begin(deviceForwards, stepOpsStart, rt[0].nowNs()); // the step's loads included
        }
        for (int r = 0; r < cp; r++) {
            hooks[r] = caches[r].beginForward(scheduler.pendingBackups(r));
            scheduler.pendingBackups(r).clear();
        }
        for (int l = 0; l < layers; l++) {
            for (int r = 0; r < cp; r++) {
                caches[r].waitLayer(stepWait[r], l); // a no-op without a load in flight (-1)
                rt[r].simulateKernel(computeStreams[r], layerNs);
                hooks[r].targetLayerStored(l);
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int r = 0; r < cp; r++) {
                caches[r].waitDraftLayer(stepWait[r], d);
                rt[r].simulateKernel(computeStreams[r], layerNs);
                hooks[r].draftLayerStored(d);
            }
        }
        for (int r = 0; r < cp; r++) {
            hooks[r].endForward();
            hooks[r] = null;
            if (tailNs > 0) {
                rt[r].simulateKernel(computeStreams[r], tailNs);
            }
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

    /** Whether nothing is queued, running or stepping here. */
    boolean idle() {
        return scheduler.noneWaiting() && scheduler.noneRunning() && !stepping;
    }

    // ------------------------------------------------------------------ end of run

    /** Checks the end state: trees valid, nothing locked, every device page free or in the tree, host pages referenced. */
    void checkEndState() {
        if (!idle()) {
            throw new IllegalStateException("instance " + index + ": " + scheduler.waitingCount() + " waiting and "
                    + scheduler.runningCount() + " running requests at the end");
        }
        for (int r = 0; r < cp; r++) {
            caches[r].tree().checkInvariants();
        }
        ledger.checkEndState();
        if (cp == 1) {
            TreeView tree = caches[0].tree();
            int allocated = caches[0].hostPool().allocatedPages();
            if (allocated != tree.hostPagesCommitted()) {
                throw new IllegalStateException("instance " + index + ": host pages leaked: " + allocated
                        + " allocated, " + tree.hostPagesCommitted() + " referenced by the tree");
            }
        }
    }

    /**
     * Checks that no device page is held twice: the free list and the requests' own pages are disjoint (the
     * pool itself refuses a page freed twice) and, with the tree's pages, account for the whole pool.
     */
    void checkPageOwnership() {
        scheduler.checkPageOwnership();
    }

    List<TimelineSegment> timelineSegments() {
        return timeline == null ? List.of() : timeline.segments();
    }

    /** Closes the caches, frees the KV areas and closes the devices; adds each rank's leak report; returns device ops. */
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
                if (caches[r] != null) {
                    caches[r].close();
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
