package io.hicache.sim.engine;

import io.hicache.core.internal.Backup;
import io.hicache.core.DevicePageSink;
import io.hicache.core.internal.ForwardHandle;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.ThreadingMode;
import io.hicache.core.cp.InProcessRankAgreement;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.memory.AttentionKind;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaStream;
import io.hicache.cuda.SimulatedCudaConfig;
import io.hicache.cuda.SimulatedCudaRuntime;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.sim.BackupMode;
import io.hicache.sim.HitStats;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.SimConfig;
import io.hicache.core.WritePolicy;
import io.hicache.sim.model.ComputeModel;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.report.TimelineSegment;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * One run of the {@link ServingEngine}: builds the simulated devices and controllers, replays the trace,
 * checks the end state and releases everything. See {@link ServingEngine} for the model. Owned by the
 * calling thread; used once.
 */
final class Replay {
    private static final DevicePageSink NO_SINK = (pages, offset, count) -> { };
    /** Deferrals of a request whose host chain another request is loading before it recomputes instead. */
    private static final int MAX_LOAD_WAITS = 8;
    private static final int LOAD_RING = 3;

    private final SimConfig config;
    private final TraceSource trace;
    private final ProgressListener progress;
    private final int batchTokenBudget;
    private final ComputeModel compute;
    private final int pageSize;
    private final int layers;
    private final int draftLayers;
    private final int cp;
    /** Idle passes that end settling: 1 for a single rank; a group needs rounds to propagate (see settle). */
    private final int idlePasses;
    private final double promptTokensPerSimToken;
    private final double trueBytesPerSimByte;
    private final boolean backupsEnabled;
    private final boolean withDraft;
    private final HitStats hits;
    /** The L3 tier, or null without {@code --storage}. */
    private final StorageSim storage;
    private long nextStorageReadyNs = Long.MAX_VALUE;

    private final SimulatedCudaRuntime[] rt;
    private final HiCacheController[] ctl;
    private final CudaStream[] computeStreams;
    private final long[] targetBase;
    private final long[] draftBase;
    private final DevicePagePool pool;
    private final DevicePagePool.Recorder recorder;
    private final DevicePagePool.Mirror[] mirrors;
    private final MatchResult[] match;
    private final List<List<Backup>> backups = new ArrayList<>();
    private final ForwardHandle[] handles;
    private final long[] lastSealed;
    private final long hostCapacityPages;

    private final ArrayList<Pending> waiting = new ArrayList<>();
    private final PriorityQueue<Running> decoding = new PriorityQueue<>();
    private final ArrayList<Running> batch = new ArrayList<>();
    private final ArrayList<List<LoadOp>> loadSets = new ArrayList<>();
    private final ArrayList<LoadOp> queuedLoads = new ArrayList<>();
    private final TokenExpander expander;
    private int[] tokens = new int[8192];
    private int[] devicePages = new int[256];
    private final RadixNode[] anchors;

    private Request nextRequest;
    private long nextArrivalNs = Long.MAX_VALUE;
    private long admitted;
    private long scheduled;
    private long forwards;
    private long runningSeq;
    private boolean forwardActive;
    private int computeDoneRanks;
    private boolean wake;
    private double hostPeak;
    private final Runnable wakeFn = this::onWake;
    private final Runnable computeDoneFn = this::onComputeDone;

    // timeline capture (rank 0)
    private final Timeline timeline = new Timeline();

    Replay(SimConfig config, TraceSource trace, ProgressListener progress, int batchTokenBudget) {
        this(config, trace, progress, batchTokenBudget, null);
    }

    Replay(SimConfig config, TraceSource trace, ProgressListener progress, int batchTokenBudget,
           io.hicache.sim.StorageOptions storageOptions) {
        this.config = config;
        this.trace = trace;
        this.progress = progress;
        this.batchTokenBudget = batchTokenBudget;
        this.compute = config.computeModel();
        this.pageSize = config.pageSize();
        this.layers = config.model().layers();
        this.draftLayers = config.draftLayers();
        this.cp = config.cp();
        this.idlePasses = cp == 1 ? 1 : 4;
        int blockSize = trace.format().blockSize();
        this.promptTokensPerSimToken = (double) blockSize / config.blockTokens();
        this.trueBytesPerSimByte = config.model().kvBytesPerTokenPerLayer() * (double) pageSize * promptTokensPerSimToken;
        this.backupsEnabled = config.backupMode() != BackupMode.NONE && config.hasHostTier()
                && config.hostCapacityTokens() >= pageSize;
        this.withDraft = draftLayers > 0;
        this.hits = new HitStats(config.blockTokens());
        this.expander = new TokenExpander(config.blockTokens());

        long devicePagesWanted = config.deviceCapacityTokens() / pageSize;
        long hostPagesWanted = !backupsEnabled ? 1
                : config.hostUnlimited() ? Long.MAX_VALUE : config.hostCapacityTokens() / pageSize;
        if (devicePagesWanted > (1 << 22) || hostPagesWanted > (1 << 22)) {
            long bound = distinctPagesBound();
            devicePagesWanted = Math.min(devicePagesWanted, bound);
            hostPagesWanted = Math.min(hostPagesWanted, bound);
        }
        if (devicePagesWanted > Integer.MAX_VALUE / 2 || hostPagesWanted > Integer.MAX_VALUE / 2) {
            throw new IllegalArgumentException("capacities of " + devicePagesWanted + " device / " + hostPagesWanted
                    + " host pages exceed what the simulator can hold; use a smaller capacity or --limit");
        }
        int devicePagesCount = (int) Math.max(1, devicePagesWanted);
        this.hostCapacityPages = hostPagesWanted;
        int hostPagesPerRank = (int) Math.max(1, (hostPagesWanted + cp - 1) / cp);

        this.rt = new SimulatedCudaRuntime[cp];
        this.ctl = new HiCacheController[cp];
        this.computeStreams = new CudaStream[cp];
        this.targetBase = new long[cp];
        this.draftBase = new long[cp];
        this.match = new MatchResult[cp];
        this.handles = new ForwardHandle[cp];
        this.lastSealed = new long[cp];
        this.anchors = new RadixNode[cp];
        this.pool = new DevicePagePool(devicePagesCount);
        this.recorder = new DevicePagePool.Recorder(pool);
        this.mirrors = new DevicePagePool.Mirror[cp];
        long linkBytesPerSecond = Math.max(1, Math.round(config.gpu().hostLinkBytesPerSecond()
                * compute.linkEfficiency() / trueBytesPerSimByte));
        InProcessRankAgreement agreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        InProcessRankAgreement loadAgreement = cp > 1 ? new InProcessRankAgreement(cp) : null;
        if (storageOptions != null && !backupsEnabled) {
            throw new IllegalArgumentException("a storage tier needs a host tier (host capacity > 0, backups on)");
        }
        this.storage = storageOptions == null ? null
                : new StorageSim(storageOptions, cp, pageSize, layers, trueBytesPerSimByte);
        try {
            for (int r = 0; r < cp; r++) {
                rt[r] = new SimulatedCudaRuntime(SimulatedCudaConfig.builder().seed(config.seed() * 31 + r)
                        .copyLaunchLatencyNs(config.gpu().copyLaunchLatencyNs()).pcieBytesPerSecond(linkBytesPerSecond)
                        .sharedPcieLink(false).batchedCopySupported(true).deviceMemoryFill((byte) 0).build());
                DeviceKvLayout.Builder tb = DeviceKvLayout.builder(AttentionKind.MLA).layerCount(layers)
                        .pageSizeTokens(1).bytesPerTokenPerBuffer(1).pageCount(devicePagesCount);
                targetBase[r] = rt[r].deviceMalloc(tb.packedBytes());
                DeviceKvLayout target = tb.packedFrom(targetBase[r]).build();
                DeviceKvLayout draft = null;
                if (withDraft) {
                    DeviceKvLayout.Builder db = DeviceKvLayout.builder(AttentionKind.MLA).layerCount(draftLayers)
                            .pageSizeTokens(1).bytesPerTokenPerBuffer(1).pageCount(devicePagesCount);
                    draftBase[r] = rt[r].deviceMalloc(db.packedBytes());
                    draft = db.packedFrom(draftBase[r]).build();
                }
                SimulatedCudaRuntime runtime = rt[r];
                HiCacheController.Builder b = HiCacheController.builder().runtime(runtime).targetLayout(target)
                        .draftLayout(draft).hostPages(hostPagesPerRank).threadingMode(ThreadingMode.INVOKER)
                        .clock(runtime::nowNs).leaseNs(0).loadThresholdTokens(1).maxForwardsInFlight(64)
                        .writePolicy(backupsEnabled ? config.writePolicy()
                                : WritePolicy.WRITE_THROUGH)
                        .backupMode(config.backupMode() == BackupMode.NONE ? io.hicache.core.BackupMode.LAYERED
                                : config.backupMode().core())
                        .eviction(config.eviction().policy(), config.eviction().policy());
                if (cp > 1) {
                    b.cpGroup(cp, r, config.lanes(), agreement, loadAgreement);
                }
                if (storage != null) {
                    b.listener(storage.listener(r));
                }
                ctl[r] = b.build();
                computeStreams[r] = ctl[r].computeStream();
                match[r] = new MatchResult(256);
                backups.add(new ArrayList<>());
                mirrors[r] = new DevicePagePool.Mirror(recorder);
            }
            if (storage != null) {
                storage.attach(ctl, config.model().cliName());
            }
        } catch (RuntimeException e) {
            closeAll();
            throw e;
        }
    }

    // ------------------------------------------------------------------ the run

    SimResult execute() {
        long wallStart = System.nanoTime();
        progress.onStart(config.backupMode().cliName(), trace.estimateRecords());
        try (TraceReader reader = trace.open()) {
            nextRequest = reader.next();
            nextArrivalNs = arrival(nextRequest);
            while (true) {
                long now = rt[0].nowNs();
                admit(reader, now);
                releaseDecodes(now);
                settle();
                if (forwardActive && computeDoneRanks == cp) {
                    finishForward(now);
                }
                if (!forwardActive) {
                    startBatch(false);
                    settle();
                }
                timeline.maybeFinish();
                if (nextRequest == null && waiting.isEmpty() && !forwardActive && decoding.isEmpty()) {
                    break;
                }
                long external = Math.min(nextArrivalNs, decoding.isEmpty() ? Long.MAX_VALUE : decoding.peek().releaseNs);
                if (nextStorageReadyNs > now) {
                    external = Math.min(external, nextStorageReadyNs);
                }
                if (!advance(external) && !forwardActive && !waiting.isEmpty()) {
                    // Nothing can change any more: the head request cannot get device pages. Run it uncached.
                    if (!startBatch(true)) {
                        throw new IllegalStateException("simulation stalled with " + waiting.size()
                                + " requests waiting and nothing in flight");
                    }
                    settle();
                }
            }
            drain();
            timeline.maybeFinish();
            checkEndState();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + trace.path() + ": " + e.getMessage(), e);
        } finally {
            progress.onFinish();
        }
        double wallSeconds = (System.nanoTime() - wallStart) / 1e9;
        return result(wallSeconds);
    }

    private long arrival(Request r) {
        return r == null ? Long.MAX_VALUE : (long) (r.arrivalNs() / config.timeScale());
    }

    private void admit(TraceReader reader, long now) throws IOException {
        while (nextRequest != null && nextArrivalNs <= now) {
            Request r = nextRequest;
            tokens = TokenExpander.ensureCapacity(tokens, expander.tokenCount(r));
            int count = expander.expandInto(r, tokens);
            int pages = count / pageSize;
            int[] keys = new int[pages];
            for (int i = 0; i < pages; i++) {
                keys[i] = tokens[i * pageSize] / pageSize;
            }
            waiting.add(new Pending(r, keys, count));
            admitted++;
            nextRequest = reader.next();
            nextArrivalNs = arrival(nextRequest);
        }
    }

    private void releaseDecodes(long now) {
        while (!decoding.isEmpty() && decoding.peek().releaseNs <= now) {
            Running run = decoding.poll();
            if (run.nodes != null) {
                for (int r = 0; r < cp; r++) {
                    ctl[r].tree().unlock(run.nodes[r]);
                }
            }
        }
    }

    /** Steps every rank's agents and scheduler until nothing moves; then marks new seals for waking. */
    private void settle() {
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
        if (backupsEnabled && hostCapacityPages != Long.MAX_VALUE) {
            HiCacheController c = ctl[0];
            double u = (double) c.hostBudgetUsedPages() / c.hostBudgetCapacityPages();
            if (u > hostPeak) {
                hostPeak = u;
            }
        }
    }

    /**
     * Advances every device to the next completion that matters (a wake-up host function) or to
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

    // ------------------------------------------------------------------ batches

    /**
     * Forms a batch from the head of the queue and enqueues its forward.
     *
     * @param force run the head request even without device pages (uncached), when nothing else can move
     * @return whether a forward was enqueued
     */
    private boolean startBatch(boolean force) {
        nextStorageReadyNs = Long.MAX_VALUE;
        batch.clear();
        queuedLoads.clear();
        pruneLoadSets();
        long batchTokens = 0;
        long layerNs = 0;
        int taken = 0;
        int[] takenIdx = new int[Math.min(waiting.size(), ServingEngine.LOOKAHEAD_REQUESTS)];
        long windowStart = rt[0].opsIssued();
        for (int i = 0; i < waiting.size() && i < ServingEngine.LOOKAHEAD_REQUESTS; i++) {
            Pending p = waiting.get(i);
            if (p.load != null) {
                LoadOp.State s = p.load.state();
                if (s == LoadOp.State.QUEUED || s == LoadOp.State.ISSUED) {
                    continue;
                }
                p.loadedPages = s == LoadOp.State.LOADED ? p.load.pageCount() : 0;
                p.load = null;
                p.loadDone = true;
            }
            for (int r = 0; r < cp; r++) {
                ctl[r].match(p.keys, 0, p.keys.length, match[r]);
            }
            if (storage != null && !force) {
                long now = rt[0].nowNs();
                if (!p.storageTried) {
                    p.storageTried = true;
                    storage.onMatch(match);
                    long wait = storage.prefetch(p.keys, match, p.request.index());
                    if (wait >= 0) {
                        p.storagePages = storage.lastPublished();
                        p.prefetches = storage.lastPrefetches();
                        p.storageReadyNs = now + wait;
                        for (int r = 0; r < cp; r++) {
                            ctl[r].tree().match(p.keys, 0, p.keys.length, match[r]);
                        }
                    }
                }
                if (p.storageReadyNs > now) {
                    nextStorageReadyNs = Math.min(nextStorageReadyNs, p.storageReadyNs);
                    continue; // its prefetch is still landing (modelled time)
                }
            }
            int devicePrefix = match[0].devicePageCount();
            if (match[0].hostPageCount() > 0 && backupsEnabled && !p.loadDone && !force) {
                if (loadSets.size() >= LOAD_RING) {
                    continue; // every load event set is busy; try again at the next batch
                }
                long refused = ctl[0].metrics().get(Metric.LOADS_REFUSED);
                recorder.reset();
                LoadOp op = ctl[0].loadBack(match[0], p.request.index(), Integer.MAX_VALUE, recorder);
                for (int r = 1; r < cp; r++) {
                    mirrors[r].reset();
                    ctl[r].loadBack(match[r], p.request.index(), Integer.MAX_VALUE, mirrors[r]);
                }
                if (p.prefetches != null) {
                    storage.consume(p.prefetches); // the load protects its host pages from here on
                    p.prefetches = null;
                }
                if (op != null) {
                    p.load = op;
                    queuedLoads.add(op);
                } else if (ctl[0].metrics().get(Metric.LOADS_REFUSED) != refused || ++p.loadWaits > MAX_LOAD_WAITS) {
                    p.loadDone = true; // no device room for the load (or waited long enough): recompute
                }
                continue;
            }
            int pages = p.keys.length;
            int newPages = pages - devicePrefix;
            long contextPrompt = promptTokens((long) devicePrefix * pageSize, p.request);
            long newPrompt = Math.max(0, p.request.inputLength() - contextPrompt);
            if (taken > 0 && batchTokens + newPrompt > batchTokenBudget) {
                break;
            }
            RadixNode[] nodes = null;
            if (!allocate(newPages)) {
                if (!(force && taken == 0)) {
                    break; // FCFS: the head waits for device pages
                }
            } else {
                nodes = insert(p, devicePrefix);
            }
            int hostHit = Math.min(p.loadedPages, devicePrefix);
            if (p.prefetches != null) {
                storage.consume(p.prefetches);
                p.prefetches = null;
            }
            if (storage != null) {
                storage.recordHit(Math.min(p.storagePages, hostHit));
            }
            hits.record(p.request, p.simTokens, (devicePrefix - hostHit) * pageSize, hostHit * pageSize);
            if (nodes != null && backupsEnabled && config.writePolicy() != WritePolicy.WRITE_BACK) {
                for (int r = 0; r < cp; r++) {
                    ctl[r].reserveByPolicy(nodes[r], withDraft, backups.get(r));
                }
            }
            layerNs += compute.prefillLayerNs(newPrompt, contextPrompt);
            batchTokens += newPrompt;
            long decodeNs = (long) p.request.outputLength() * layers
                    * compute.decodeStepLayerNs(1, p.request.inputLength() + p.request.outputLength() / 2);
            batch.add(new Running(nodes, decodeNs, runningSeq++));
            takenIdx[taken++] = i;
            if (force) {
                break;
            }
        }
        for (int k = taken - 1; k >= 0; k--) {
            waiting.remove(takenIdx[k]);
        }
        if (!queuedLoads.isEmpty()) {
            for (int r = 0; r < cp; r++) {
                ctl[r].startLoading();
                rt[r].launchHostFunc(ctl[r].loadStream(), wakeFn);
            }
            loadSets.add(new ArrayList<>(queuedLoads));
        }
        if (taken == 0) {
            return false;
        }
        scheduled += taken;
        progress.onRequestsDone(scheduled);
        enqueueForward(layerNs, windowStart);
        return true;
    }

    private void enqueueForward(long batchLayerNs, long windowStart) {
        long layerNs = (batchLayerNs + cp - 1) / cp;
        boolean capture = timeline.wants(forwards, backups.get(0).size() > 0 || !backupsEnabled);
        if (capture) {
            timeline.begin(rt[0], forwards, windowStart, rt[0].nowNs());
        }
        for (int r = 0; r < cp; r++) {
            handles[r] = ctl[r].beginForward(backups.get(r));
            backups.get(r).clear();
        }
        for (int l = 0; l < layers; l++) {
            for (int r = 0; r < cp; r++) {
                rt[r].simulateKernel(computeStreams[r], layerNs);
                handles[r].targetLayerStored(l);
            }
        }
        for (int d = 0; d < draftLayers; d++) {
            for (int r = 0; r < cp; r++) {
                rt[r].simulateKernel(computeStreams[r], layerNs);
                handles[r].draftLayerStored(d);
            }
        }
        for (int r = 0; r < cp; r++) {
            handles[r].endForward();
            handles[r] = null;
            rt[r].launchHostFunc(computeStreams[r], computeDoneFn);
        }
        forwardActive = true;
        computeDoneRanks = 0;
        forwards++;
        if (capture) {
            settle(); // the submitter issues this forward's copies and seals it
            timeline.endWindow(ctl[0]);
        }
    }

    private void finishForward(long now) {
        forwardActive = false;
        timeline.computeDone();
        for (int i = 0; i < batch.size(); i++) {
            Running run = batch.get(i);
            run.releaseNs = now + run.decodeNs;
            decoding.add(run);
        }
        batch.clear();
    }

    /** Allocates {@code newPages} device pages into {@code devicePages[prefix..]}, evicting if needed. */
    private boolean allocate(int newPages) {
        int prefix = match[0].devicePageCount();
        int total = prefix + newPages;
        if (devicePages.length < total) {
            devicePages = new int[Math.max(total, devicePages.length * 2)];
        }
        if (pool.allocate(newPages, devicePages, prefix)) {
            return true;
        }
        for (int r = 0; r < cp; r++) {
            anchors[r] = match[r].lastDeviceNode();
            ctl[r].tree().lock(anchors[r]);
        }
        try {
            int need = newPages - pool.freePages();
            for (int r = 0; r < cp; r++) {
                ctl[r].evictDevice(need, r == 0 ? pool : NO_SINK);
            }
        } finally {
            for (int r = 0; r < cp; r++) {
                ctl[r].tree().unlock(anchors[r]);
                anchors[r] = null;
            }
        }
        return pool.allocate(newPages, devicePages, prefix);
    }

    /** Inserts the request's pages on every rank and locks its path; returns the last node per rank. */
    private RadixNode[] insert(Pending p, int devicePrefix) {
        RadixNode[] nodes = new RadixNode[cp];
        for (int r = 0; r < cp; r++) {
            RadixTree tree = ctl[r].tree();
            int present = tree.insert(p.keys, 0, p.keys.length, devicePages, 0);
            if (present != devicePrefix) {
                throw new IllegalStateException("rank " + r + ": request " + p.request.index() + " found "
                        + present + " pages on device at insert, " + devicePrefix + " at match");
            }
            nodes[r] = tree.lastInsertNode();
            if (nodes[r].isRoot()) {
                nodes[r] = null;
            } else {
                tree.lock(nodes[r]);
            }
        }
        return nodes[0] == null ? null : nodes;
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

    private long promptTokens(long simTokens, Request r) {
        return Math.min(r.inputLength(), (long) Math.ceil(simTokens * promptTokensPerSimToken));
    }

    // ------------------------------------------------------------------ end of run

    private void drain() {
        for (int i = 0; i < 1_000_000; i++) {
            settle();
            boolean busy = false;
            for (int r = 0; r < cp; r++) {
                busy |= ctl[r].backupsInFlight() > 0 || ctl[r].loadsInFlight() > 0;
            }
            if (!busy) {
                if (storage != null) {
                    storage.flush(); // what this run committed is in the store for the next one
                    settle();
                }
                return;
            }
            if (!advance(Long.MAX_VALUE)) {
                settle();
            }
        }
        throw new IllegalStateException("backups or loads did not drain at the end of the run");
    }

    private void checkEndState() {
        for (int r = 0; r < cp; r++) {
            RadixTree tree = ctl[r].tree();
            tree.checkInvariants();
            if (tree.devicePagesLocked() != 0) {
                throw new IllegalStateException("rank " + r + ": " + tree.devicePagesLocked()
                        + " device pages still locked after every request finished");
            }
            if (tree.devicePagesCached() + pool.freePages() != pool.capacityPages()) {
                throw new IllegalStateException("rank " + r + ": device pages leaked: tree holds "
                        + tree.devicePagesCached() + ", pool has " + pool.freePages() + " free of "
                        + pool.capacityPages());
            }
            if (cp == 1 && ctl[r].allocator().allocatedPages() != tree.hostPagesCommitted()) {
                throw new IllegalStateException("host pages leaked: " + ctl[r].allocator().allocatedPages()
                        + " allocated, " + tree.hostPagesCommitted() + " referenced by the tree");
            }
        }
    }

    private SimResult result(double wallSeconds) {
        long reserved = 0;
        long committed = 0;
        long aborted = 0;
        long noRoom = 0;
        long fallback = 0;
        long d2hSimBytes = 0;
        long exposed = 0;
        long simulatedNs = 0;
        for (int r = 0; r < cp; r++) {
            var m = ctl[r].metrics();
            reserved += m.get(Metric.BACKUPS_RESERVED);
            committed += m.get(Metric.BACKUPS_COMMITTED);
            aborted += m.get(Metric.BACKUPS_ABORTED);
            noRoom += m.get(Metric.RESERVE_NO_ROOM);
            fallback += m.get(Metric.FALLBACK_ENTRIES);
            d2hSimBytes += m.get(Metric.D2H_TARGET_BYTES) + m.get(Metric.D2H_DRAFT_BYTES);
            exposed = Math.max(exposed, m.get(Metric.EXPOSED_BACKUP_NS));
            simulatedNs = Math.max(simulatedNs, rt[r].nowNs());
        }
        var latency = ctl[0].metrics().commitLatencyNs();
        SimResult.CommitLatency commit = latency.count() == 0 ? SimResult.CommitLatency.NONE
                : new SimResult.CommitLatency(latency.quantile(0.50), latency.quantile(0.99), latency.max());
        SimResult base = SimResult.ofHits(config, trace.name(), hits, wallSeconds);
        return new SimResult(config, trace.name(), base.requests(), base.inputTokens(), base.simulatedTokens(),
                base.blocks(), base.blockHitRatio(), base.tokenHitRatio(), base.deviceHitTokens(), base.hostHitTokens(),
                base.prefillTokensComputed(), new SimResult.Backups(reserved, committed, aborted, noRoom, fallback),
                Math.round(d2hSimBytes * trueBytesPerSimByte), exposed, commit, hostPeak, simulatedNs / 1e9,
                wallSeconds, timeline.segments(), storage == null ? null : storage.result(pageSize));
    }

    /** Closes controllers, frees the KV areas and closes the devices; returns the run's device facts. */
    ServingEngine.RunStats closeAll() {
        List<SimulatedCudaRuntime.LeakReport> leaks = new ArrayList<>();
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
        return new ServingEngine.RunStats(ops, forwards, leaks);
    }

    /** Upper bound of distinct pages in the trace (one pass), to size "unlimited" tiers. */
    private long distinctPagesBound() {
        TokenExpander counter = new TokenExpander(config.blockTokens());
        int[] buf = new int[8192];
        try (TraceReader reader = trace.open()) {
            Request r;
            while ((r = reader.next()) != null) {
                buf = TokenExpander.ensureCapacity(buf, counter.tokenCount(r));
                counter.expandInto(r, buf);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + trace.path() + ": " + e.getMessage(), e);
        }
        return (long) counter.distinctBlocks() * (config.blockTokens() / pageSize) + 1;
    }



    // ------------------------------------------------------------------ state records

    /** A request waiting for its prefill. */
    private static final class Pending {
        final Request request;
        final int[] keys;
        final int simTokens;
        LoadOp load;
        boolean loadDone;
        boolean storageTried;
        io.hicache.storage.tier.StorageTier.Prefetch[] prefetches;
        int storagePages;
        long storageReadyNs;
        int loadedPages;
        int loadWaits;

        Pending(Request request, int[] keys, int simTokens) {
            this.request = request;
            this.keys = keys;
            this.simTokens = simTokens;
        }
    }

    /** A request whose prefill is enqueued or done, holding its pages until its decode ends. */
    private static final class Running implements Comparable<Running> {
        final RadixNode[] nodes;
        final long decodeNs;
        final long seq;
        long releaseNs;

        Running(RadixNode[] nodes, long decodeNs, long seq) {
            this.nodes = nodes;
            this.decodeNs = decodeNs;
            this.seq = seq;
        }

        @Override
        public int compareTo(Running o) {
            int c = Long.compare(releaseNs, o.releaseNs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /**
     * Captures the device operations of one forward on rank 0 (its loads, kernels and copies) for the
     * report's per-layer timeline: the first forward from {@link ServingEngine#TIMELINE_FORWARD} on that
     * carries backups (with no backups at all: any forward), or an earlier one when the run is shorter.
     */
    private final class Timeline implements SimulatedCudaRuntime.OpListener {
        private final Runnable markerFn = this::onMarker;
        private List<TimelineSegment> segments = List.of();
        private boolean finalCapture;
        private boolean capturing;
        private long forwardIndex;
        private long windowStart;
        private long windowEnd = Long.MAX_VALUE;
        private long originNs;
        private boolean markerDone;
        private boolean computeDone;
        private SimulatedCudaRuntime runtime;
        private long computeHandle;
        private long backupHandle;
        private long loadHandle;
        private final ArrayList<long[]> ops = new ArrayList<>();

        boolean wants(long index, boolean hasBackups) {
            return !finalCapture && !capturing && hasBackups
                    && (index >= ServingEngine.TIMELINE_FORWARD || segments.isEmpty());
        }

        void begin(SimulatedCudaRuntime rt0, long index, long seqStart, long nowNs) {
            capturing = true;
            forwardIndex = index;
            windowStart = seqStart;
            windowEnd = Long.MAX_VALUE;
            originNs = nowNs;
            markerDone = false;
            computeDone = false;
            runtime = rt0;
            ops.clear();
            computeHandle = ctl[0].computeStream().handle();
            backupHandle = ctl[0].backupStream().handle();
            loadHandle = ctl[0].loadStream().handle();
            rt0.setOpListener(this);
        }

        void endWindow(HiCacheController c0) {
            runtime.launchHostFunc(c0.backupStream(), markerFn);
            windowEnd = runtime.opsIssued();
        }

        void computeDone() {
            if (capturing) {
                computeDone = true;
            }
        }

        private void onMarker() {
            markerDone = true;
        }

        @Override
        public void onComplete(long opSeq, int opType, long streamHandle, long startNs, long endNs, int errorCode) {
            if (opSeq > windowStart && opSeq <= windowEnd
                    && (opType == SimulatedCudaRuntime.OP_KERNEL || opType == SimulatedCudaRuntime.OP_COPY)) {
                ops.add(new long[] {opSeq, opType, streamHandle, startNs, endNs});
            }
        }

        void maybeFinish() {
            if (!capturing || !markerDone || !computeDone) {
                return;
            }
            capturing = false;
            runtime.setOpListener(null);
            ops.sort((a, b) -> Long.compare(a[0], b[0]));
            int kernels = 0;
            int copies = 0;
            int loads = 0;
            int copyCount = 0;
            for (long[] op : ops) {
                if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == backupHandle) {
                    copyCount++;
                }
            }
            List<TimelineSegment> out = new ArrayList<>();
            for (long[] op : ops) {
                long start = Math.max(0, op[3] - originNs);
                long end = Math.max(start, op[4] - originNs);
                if (op[1] == SimulatedCudaRuntime.OP_KERNEL && op[2] == computeHandle) {
                    out.add(new TimelineSegment("compute", start, end, layerLabel(kernels++)));
                } else if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == backupHandle) {
                    String label = copyCount == layers + draftLayers ? layerLabel(copies) : "copy " + copies;
                    copies++;
                    out.add(new TimelineSegment("d2h backup", start, end, label));
                } else if (op[1] == SimulatedCudaRuntime.OP_COPY && op[2] == loadHandle) {
                    out.add(new TimelineSegment("h2d load", start, end, "load " + loads++));
                }
            }
            ops.clear();
            segments = out;
            if (forwardIndex >= ServingEngine.TIMELINE_FORWARD) {
                finalCapture = true;
            }
        }

        private String layerLabel(int i) {
            return i < layers ? "L" + i : "D" + (i - layers);
        }

        List<TimelineSegment> segments() {
            return segments;
        }
    }
}
