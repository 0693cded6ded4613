package io.hicache.sim.engine;

import io.hicache.core.WritePolicy;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.simulated.SimulatedCudaRuntime;
import io.hicache.sim.BackupMode;
import io.hicache.sim.HitStats;
import io.hicache.sim.ProgressListener;
import io.hicache.sim.Router;
import io.hicache.sim.ServingConfig;
import io.hicache.sim.SimConfig;
import io.hicache.sim.model.ComputeModel;
import io.hicache.sim.report.ServingStats;
import io.hicache.sim.report.SimResult;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * One run of the {@link ServingEngine}: builds the fleet's instances, routes the trace's requests to them in
 * arrival order (each instance is first run up to the arrival, so the router sees queues and caches as they
 * are then), runs every instance until its last request has finished, checks the end state and releases
 * everything. See {@link ServingEngine} for the model. Owned by the calling thread; used once.
 */
final class Replay {
    /** System property: threads that run a fleet's instances (default: available processors). */
    static final String THREADS_PROPERTY = "hicache.sim.threads";

    final SimConfig config;
    final ServingConfig serving;
    /** Per instance, what the kv-events router learned from its events (see {@link #eventIndex}). */
    private final EventIndex[] eventIndexes;
    final ComputeModel compute;
    final boolean backupsEnabled;
    final boolean withDraft;
    /** Largest prefill chunk of one request, in simulated tokens. */
    final int chunkSim;
    /** The engine profile the steps are timed with, or null for the roofline of the presets. */
    final io.hicache.sim.model.EngineProfile profile;
    /** The profiled engine's forward costs, or null (see {@link #profile}). */
    final ProfiledTiming timing;
    /** Target layers of the model on the simulated devices. */
    final int layers;
    /** Load batches in flight per rank; the caches are built with the same limit. */
    final int loadRing;
    /** Requests an instance runs at once with a profile ({@code max_running}); unlimited without. */
    final int maxRunning;

    private final TraceSource trace;
    private final ProgressListener progress;
    private final int pageSize;
    private final double promptTokensPerSimToken;
    /** True bytes one simulated byte stands for on one GPU's host link. */
    final double trueBytesPerSimByte;
    /** The storage tier's options and the store every instance shares (a fleet shares its L3), or null. */
    final io.hicache.sim.StorageOptions storageOptions;
    final io.hicache.storage.PageStore store;
    /** The store as the instances' {@link TimedStore}s share it, or null. */
    final TimedStore.Backend storeBackend;
    /** GPUs whose host links each carry one rank's copies (the TP group). */
    private final int gpusPerRank;
    private final long linkBytesPerSecond;
    private final Instance[] instances;
    private final TokenExpander expander;
    private FleetStepper stepper;
    private HitStats hits;
    private int roundRobin;

    private long inputTokens;
    private long firstArrivalNs = -1;
    /** The last arrival the trace gives (its time divided by the time scale), for the arrival span. */
    private long lastTraceArrivalNs;
    private long reportedDone;
    private long requestsRouted;
    /** Closed-loop turns, or null when every request arrives at its trace time. */
    private final FollowUps followUps;
    /** The time the fleet was last run to. */
    private long fleetNs = Long.MIN_VALUE;

    /**
     * While requests are held for the turn they follow, the fleet runs in steps of this much simulated time and a
     * held request arrives at the end of the step in which its predecessor finished (a client's reaction time).
     */
    static final long FOLLOW_UP_STEP_NS = 5_000_000;

    Replay(SimConfig config, ServingConfig serving, TraceSource trace, ProgressListener progress) {
        this(config, serving, trace, progress, null);
    }

    Replay(SimConfig config, ServingConfig serving, TraceSource trace, ProgressListener progress,
           io.hicache.sim.StorageOptions storageOptions) {
        this(config, serving, trace, progress, storageOptions, null);
    }

    Replay(SimConfig config, ServingConfig serving, TraceSource trace, ProgressListener progress,
           io.hicache.sim.StorageOptions storageOptions, io.hicache.sim.model.EngineProfile profile) {
        serving.checkModel(config.model());
        this.profile = profile;
        this.timing = profile == null ? null : new ProfiledTiming(profile);
        if (profile != null && (config.cp() != 1 || config.draftLayers() != 0 || serving.tp() != 1
                || storageOptions != null || profile.pageSize() != config.pageSize())) {
            throw new IllegalArgumentException("an engine profile runs one process without CP, draft layers, TP or an "
                    + "L3 tier, at the profile's page size " + profile.pageSize());
        }
        this.layers = profile == null ? config.model().layers() : profile.model().layers();
        this.loadRing = profile == null ? StepScheduler.LOAD_RING : ProfiledTiming.LOAD_RING;
        this.maxRunning = profile == null ? Integer.MAX_VALUE : profile.maxRunning();
        this.config = config;
        this.serving = serving;
        this.followUps = serving.closedLoop() ? new FollowUps() : null;
        this.trace = trace;
        this.progress = progress;
        this.compute = config.computeModel();
        this.pageSize = config.pageSize();
        int blockSize = trace.blockSize();
        // The profiled engine computes the expansion's tokens themselves (the client sends them as input_ids), so a
        // simulated token is one of its tokens whatever --block-tokens is; the preset models scale to the trace's.
        this.promptTokensPerSimToken = profile != null ? 1.0 : (double) blockSize / config.blockTokens();
        this.gpusPerRank = serving.tp();
        double kvShare = config.model().kvShardedByTp() ? 1.0 / serving.tp() : 1.0;
        double bytesPerTokenPerLayer = profile == null ? config.model().kvBytesPerTokenPerLayer() * kvShare
                : (double) profile.kvBytesPerToken() / layers;
        this.trueBytesPerSimByte = bytesPerTokenPerLayer * pageSize * promptTokensPerSimToken;
        this.backupsEnabled = config.backupMode() != BackupMode.NONE && config.hasHostTier()
                && config.hostCapacityTokens() >= pageSize;
        this.withDraft = config.draftLayers() > 0;
        this.expander = new TokenExpander(config.blockTokens());
        this.chunkSim = simTokens(serving.chunkTokens());

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
        int cp = config.cp();
        int hostPagesPerRank = (int) Math.max(1, (hostPagesWanted + cp - 1) / cp);
        this.linkBytesPerSecond = profile != null ? Math.max(1, Math.round(profile.load().bytesPerS()
                / trueBytesPerSimByte)) : Math.max(1, Math.round(serving.hostLinkBytesPerSecond(
                config.gpu().hostLinkBytesPerSecond() * compute.linkEfficiency(), serving.tp() * config.cp())
                / trueBytesPerSimByte));
        this.instances = new Instance[serving.instances()];
        this.eventIndexes = new EventIndex[serving.instances()];
        if (storageOptions != null && !backupsEnabled) {
            throw new IllegalArgumentException("a storage tier needs a host tier (host capacity > 0, backups on)");
        }
        this.storageOptions = storageOptions;
        this.store = storageOptions == null ? null
                : StorageSim.openStore(storageOptions, pageSize, config.model().layers());
        this.storeBackend = store == null ? null : new TimedStore.Backend(store);
        try {
            for (int i = 0; i < instances.length; i++) {
                instances[i] = new Instance(i, this, devicePagesCount, hostPagesPerRank, hostPagesWanted,
                        linkBytesPerSecond);
            }
        } catch (RuntimeException e) {
            closeAll();
            throw e;
        }
    }

    // ------------------------------------------------------------------ units

    /** Simulated tokens of a budget of {@code promptTokens} true tokens (at least 1 when positive). */
    int simTokens(long promptTokens) {
        if (promptTokens <= 0) {
            return 0;
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (long) (promptTokens / promptTokensPerSimToken)));
    }

    /** True tokens that {@code simTokens} simulated tokens stand for. */
    long promptTokens(long simTokens) {
        return (long) Math.ceil(simTokens * promptTokensPerSimToken);
    }

    /** Simulated tokens of KV that {@code decoded} generated tokens occupy. */
    int decodedSim(int decoded) {
        return (int) (decoded / promptTokensPerSimToken);
    }

    // ------------------------------------------------------------------ the run

    SimResult execute() {
        long wallStart = System.nanoTime();
        stepper = new FleetStepper(instances, threads());
        progress.onStart(config.backupMode().cliName(), trace.estimateRecords());
        try (TraceReader reader = trace.open()) {
            Request r;
            while ((r = reader.next()) != null) {
                long t = (long) (r.arrivalNs() / config.timeScale());
                if (firstArrivalNs < 0) {
                    firstArrivalNs = t;
                }
                lastTraceArrivalNs = Math.max(lastTraceArrivalNs, t);
                runUntil(t);
                reportProgress();
                if (followUps != null && followUps.mustWait(r)) {
                    followUps.hold(r);
                } else {
                    arrive(r, t);
                }
            }
            while (followUps != null && followUps.waiting()) {
                long before = requestsRouted;
                runUntil(fleetNs + FOLLOW_UP_STEP_NS);
                if (requestsRouted == before && fleetIdle()) {
                    throw new IllegalStateException(followUps.heldNow() + " requests wait for turns that never finish");
                }
            }
            stepper.run(FleetStepper.FINISH, Long.MAX_VALUE);
            reportProgress();
            hits = new HitStats(config.blockTokens());
            for (Instance in : instances) {
                hits.add(in.scheduler.hits);
            }
            checkConservation();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + trace.path() + ": " + e.getMessage(), e);
        } finally {
            progress.onFinish();
        }
        double wallSeconds = (System.nanoTime() - wallStart) / 1e9;
        return result(wallSeconds);
    }

    /** Routes {@code r}, arrived at {@code t}. */
    private void arrive(Request r, long t) {
        int[] keys = expander.pageKeys(r, pageSize);
        ServedRequest q = new ServedRequest(r, keys, expander.tokenCount(r), t);
        if (r.coversAnswer() && profile == null) { // an engine answers with its own tokens, not the trace's
            q.answerKeys = expander.conversationPageKeys(r, pageSize);
        }
        inputTokens += r.inputLength();
        requestsRouted++;
        instances[route(q)].enqueue(q);
        if (followUps != null) {
            followUps.served(r, q);
        }
    }

    /**
     * Runs the fleet to {@code t}. While requests are held for the turn they follow, in steps of
     * {@link #FOLLOW_UP_STEP_NS}, after each of which the held requests whose predecessor finished arrive.
     */
    private void runUntil(long t) {
        while (followUps != null && followUps.waiting() && fleetNs < t) {
            long next = Math.min(t, fleetNs + FOLLOW_UP_STEP_NS);
            stepper.run(FleetStepper.RUN, next);
            fleetNs = next;
            for (Request r : followUps.releasable()) {
                arrive(r, next);
            }
        }
        if (fleetNs < t || followUps == null || !followUps.waiting()) { // else the steps above reached t
            stepper.run(FleetStepper.RUN, t);
            fleetNs = Math.max(fleetNs, t);
        }
    }

    /** True when no instance has a request queued or running. */
    private boolean fleetIdle() {
        for (Instance in : instances) {
            if (in.outstandingRequests() > 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Instance {@code i}'s index for the {@code kv-events} router, or null with another router. Created on first
     * use (the instance's own thread, when it starts running), read by the router between phases.
     */
    EventIndex eventIndex(int i) {
        if (serving.router() != io.hicache.sim.Router.KV_EVENTS || instances.length < 2) {
            return null;
        }
        EventIndex x = new EventIndex(instances[i].rt[0]::nowNs, SimKvEvents.routerLagNs());
        eventIndexes[i] = x;
        return x;
    }

    /** The instance the router picks for {@code q} (see {@link Router}); ties go to the lower index. */
    private int route(ServedRequest q) {
        int n = instances.length;
        if (n == 1) {
            return 0;
        }
        switch (serving.router()) {
            case ROUND_ROBIN -> {
                int i = roundRobin;
                roundRobin = (roundRobin + 1) % n;
                return i;
            }
            case LEAST_LOADED -> {
                int best = 0;
                long bestRequests = Long.MAX_VALUE;
                long bestTokens = Long.MAX_VALUE;
                for (int i = 0; i < n; i++) {
                    long req = instances[i].outstandingRequests();
                    long tok = req > bestRequests ? 0 : instances[i].pendingPrefillSim();
                    if (req < bestRequests || (req == bestRequests && tok < bestTokens)) {
                        best = i;
                        bestRequests = req;
                        bestTokens = tok;
                    }
                }
                return best;
            }
            case KV_EVENTS -> {
                io.hicache.sim.TierWeights w = serving.tierWeights();
                int best = 0;
                double bestCost = Double.MAX_VALUE;
                for (int i = 0; i < n; i++) {
                    EventIndex index = eventIndexes[i];
                    double overlap = 0;
                    if (index != null) { // null until the instance first ran: it has published nothing
                        index.deliverUntil(q.arrivalNs);
                        overlap = w.isUnit() ? index.overlapPages(q.keys) : index.weightedOverlapPages(q.keys, w);
                    }
                    double cost = cost(q, overlap, instances[i]);
                    if (cost < bestCost) {
                        best = i;
                        bestCost = cost;
                    }
                }
                return best;
            }
            case CACHE_AWARE -> {
                io.hicache.sim.TierWeights w = serving.tierWeights();
                int best = 0;
                double bestCost = Double.MAX_VALUE;
                for (int i = 0; i < n; i++) {
                    int cached = instances[i].cachedPages(q.keys);
                    double overlap = cached;
                    if (!w.isUnit()) { // device pages lead: the rest of the cached prefix is on the host only
                        int device = Math.min(cached, instances[i].devicePages(q.keys));
                        overlap = device * w.device() + (cached - device) * w.host();
                    }
                    double cost = cost(q, overlap, instances[i]);
                    if (cost < bestCost) {
                        best = i;
                        bestCost = cost;
                    }
                }
                return best;
            }
            default -> throw new IllegalStateException("unknown router " + serving.router());
        }
    }

    /**
     * The routers' cost of sending {@code q} to {@code in} (Dynamo's KV router): prompt tokens not cached there, the
     * cached ones counted at their tier weight ({@code overlapPages} weighted pages), plus the prompt tokens the
     * instance still has to prefill.
     */
    private double cost(ServedRequest q, double overlapPages, Instance in) {
        double cached = Math.min(overlapPages * pageSize, (double) q.simTokens);
        return (q.simTokens - cached) + in.pendingPrefillSim();
    }

    private void reportProgress() {
        long done = 0;
        for (Instance in : instances) {
            done += in.scheduler.outcomes.count;
        }
        if (done != reportedDone) {
            reportedDone = done;
            progress.onRequestsDone(done);
        }
    }

    /**
     * Threads that run the instances: {@code hicache.sim.threads} if set, else one per available processor, at
     * most one per instance; one with a storage tier, whose instances share the store: run one after another, their
     * operations on it come in the same order every run (see {@link TimedStore}). Results do not depend on it.
     */
    private int threads() {
        if (store != null) {
            return 1;
        }
        int n = Integer.getInteger(THREADS_PROPERTY, Runtime.getRuntime().availableProcessors());
        return Math.max(1, Math.min(n, instances.length));
    }

    /** Every request finished exactly once; prefilled + hit tokens = prompt tokens; GPU time within the clock. */
    private void checkConservation() {
        long finished = 0;
        for (Instance in : instances) {
            finished += in.scheduler.outcomes.count;
        }
        if (finished != hits.requests() || finished != requestsRouted) {
            throw new IllegalStateException(finished + " requests finished, " + hits.requests() + " admitted, "
                    + requestsRouted + " arrived");
        }
        long prefilled = 0;
        long recomputed = 0;
        long lastToken = 0;
        for (Instance in : instances) {
            prefilled += in.scheduler.prefilledSimTotal;
            recomputed += in.scheduler.recomputedSimTotal;
            lastToken += in.scheduler.lastTokenRecomputeSim;
            if (in.busyNs > in.nowNs()) {
                throw new IllegalStateException("instance " + in.index + ": GPU busy " + in.busyNs
                        + " ns exceeds the simulated clock " + in.nowNs() + " ns");
            }
        }
        if (prefilled - recomputed - lastToken != hits.missTokens()) {
            throw new IllegalStateException("tokens do not add up: prefilled " + prefilled + " - recomputed "
                    + recomputed + " - last-token " + lastToken + " != missed " + hits.missTokens());
        }
    }

    // ------------------------------------------------------------------ results

    private SimResult result(double wallSeconds) {
        long reserved = 0;
        long committed = 0;
        long aborted = 0;
        long noRoom = 0;
        long fallback = 0;
        long[] skipped = new long[WritePolicy.SkipReason.count()];
        long d2hSimBytes = 0;
        long exposed = 0;
        long simulatedNs = 0;
        long commitP50 = 0;
        long commitP99 = 0;
        long commitMax = 0;
        double hostPeak = 0;
        long busy = 0;
        long preemptions = 0;
        long admissionPageWaits = 0;
        long steps = 0;
        long forwards = 0;
        long outputTokens = 0;
        long copySimBytesRank0 = 0;
        for (Instance in : instances) {
            long instExposed = 0;
            for (int r = 0; r < config.cp(); r++) {
                var m = in.caches[r].metrics();
                reserved += m.get(Metric.BACKUPS_RESERVED);
                committed += m.get(Metric.BACKUPS_COMMITTED);
                aborted += m.get(Metric.BACKUPS_ABORTED);
                noRoom += m.get(Metric.RESERVE_NO_ROOM);
                fallback += m.get(Metric.FALLBACK_ENTRIES);
                for (WritePolicy.SkipReason reason : WritePolicy.SkipReason.values()) {
                    skipped[reason.ordinal()] += m.skippedBy(reason);
                }
                d2hSimBytes += m.get(Metric.D2H_TARGET_BYTES) + m.get(Metric.D2H_DRAFT_BYTES);
                instExposed = Math.max(instExposed, m.get(Metric.EXPOSED_BACKUP_NS));
                simulatedNs = Math.max(simulatedNs, in.rt[r].nowNs());
            }
            var m0 = in.caches[0].metrics();
            copySimBytesRank0 += m0.get(Metric.D2H_TARGET_BYTES) + m0.get(Metric.D2H_DRAFT_BYTES);
            exposed += instExposed;
            if (m0.commitCount() > 0) {
                commitP50 = Math.max(commitP50, m0.commitP50Ns());
                commitP99 = Math.max(commitP99, m0.commitP99Ns());
                commitMax = Math.max(commitMax, m0.commitMaxNs());
            }
            hostPeak = Math.max(hostPeak, in.hostPeak);
            busy += in.busyNs;
            preemptions += in.scheduler.preemptions;
            admissionPageWaits += in.scheduler.admissionPageWaits;
            steps += in.steps;
            forwards += in.deviceForwards;
            outputTokens += in.scheduler.outputTokens;
        }
        SimResult.CommitLatency commit = committed == 0 ? SimResult.CommitLatency.NONE
                : new SimResult.CommitLatency(commitP50, commitP99, commitMax);
        int finished = 0;
        long lastFinishNs = 0;
        for (Instance in : instances) {
            finished += in.scheduler.outcomes.count;
            lastFinishNs = Math.max(lastFinishNs, in.scheduler.outcomes.lastFinishNs);
        }
        long[] ttftNs = new long[finished];
        long[] tpotNs = new long[finished];
        long[] e2eNs = new long[finished];
        long[] queueNs = new long[finished];
        long[] arrivalNs = new long[finished];
        boolean[] tpotValid = new boolean[finished];
        int k = 0;
        for (Instance in : instances) {
            Outcomes o = in.scheduler.outcomes;
            System.arraycopy(o.ttftNs, 0, ttftNs, k, o.count);
            System.arraycopy(o.tpotNs, 0, tpotNs, k, o.count);
            System.arraycopy(o.e2eNs, 0, e2eNs, k, o.count);
            System.arraycopy(o.queueNs, 0, queueNs, k, o.count);
            System.arraycopy(o.arrivalNs, 0, arrivalNs, k, o.count);
            System.arraycopy(o.tpotValid, 0, tpotValid, k, o.count);
            k += o.count;
        }
        long makespanNs = Math.max(1, lastFinishNs - Math.max(0, firstArrivalNs));
        double makespanS = makespanNs / 1e9;
        long copyNs = (long) (copySimBytesRank0 * 1e9 / linkBytesPerSecond);
        double hidden = copyNs == 0 ? 0 : Math.max(0, 1 - (double) exposed / copyNs);
        int good = 0;
        long[] tpots = new long[finished];
        int tpotCount = 0;
        for (int i = 0; i < finished; i++) {
            boolean ok = ttftNs[i] <= serving.sloTtftMs() * 1e6
                    && (!tpotValid[i] || tpotNs[i] <= serving.sloTpotMs() * 1e6);
            if (ok) {
                good++;
            }
            if (tpotValid[i]) {
                tpots[tpotCount++] = tpotNs[i];
            }
        }
        int hostHits = 0;
        for (Instance in : instances) {
            hostHits += in.scheduler.outcomes.hostHitCount;
        }
        long[] hostHitPrefillNs = new long[hostHits];
        int h = 0;
        for (Instance in : instances) {
            System.arraycopy(in.scheduler.outcomes.hostHitPrefillNs, 0, hostHitPrefillNs, h, in.scheduler.outcomes.hostHitCount);
            h += in.scheduler.outcomes.hostHitCount;
        }
        long[] ttftSorted = ttftNs.clone();
        Arrays.sort(ttftSorted);
        double goodput = finished == 0 ? 0 : (double) good / finished;
        io.hicache.sim.report.Overload overload = io.hicache.sim.report.Overload.of(arrivalNs, queueNs, finished,
                goodput, serving.sloTtftMs(), Math.max(0, lastTraceArrivalNs - Math.max(0, firstArrivalNs)), busy,
                instances.length);
        ServingStats stats = new ServingStats(serving.instances(), serving.router().cliName(), serving.tp(),
                serving.maxBatchTokens(), serving.chunkTokens(), serving.sloTtftMs(), serving.sloTpotMs(),
                ServingStats.Latency.ofNs(ttftSorted, finished, true),
                ServingStats.Latency.ofNs(tpots, tpotCount, false),
                ServingStats.Latency.ofNs(e2eNs, finished, false),
                ServingStats.Latency.ofNs(queueNs, finished, false),
                inputTokens / makespanS, outputTokens / makespanS, finished / makespanS,
                goodput, good / makespanS,
                simulatedNs == 0 ? 0 : (double) busy / ((double) simulatedNs * instances.length),
                preemptions, admissionPageWaits, serving.closedLoop(),
                followUps == null ? 0 : followUps.heldTotal(), steps, forwards, copyNs, hidden,
                io.hicache.sim.OptionSpellings.of(config.loadOverlap()),
                hostHits, ServingStats.Latency.ofNs(hostHitPrefillNs, hostHits, false),
                ServingStats.cdf(ttftSorted, finished), overload, serving.tierWeights().asMap());
        long devicePeakPages = 0;
        long hostPeakPages = 0;
        for (Instance in : instances) {
            devicePeakPages = Math.max(devicePeakPages, in.devicePeakPages());
            hostPeakPages = Math.max(hostPeakPages, in.hostPeakPages * config.cp()); // rank 0 holds 1/cp of them
        }
        SimResult.Occupancy occupancy = new SimResult.Occupancy(devicePeakPages * pageSize,
                hostPeakPages * pageSize);
        SimResult base = SimResult.ofHits(config, trace.name(), hits, wallSeconds);
        return new SimResult(config, trace.name(), base.requests(), base.inputTokens(), base.simulatedTokens(),
                base.blocks(), base.blockHitRatio(), base.tokenHitRatio(), base.deviceHitTokens(), base.hostHitTokens(),
                base.prefillTokensComputed(), new SimResult.Backups(reserved, committed, aborted, noRoom, fallback,
                skippedByName(skipped)), Math.round(d2hSimBytes * trueBytesPerSimByte * gpusPerRank), exposed, commit, hostPeak,
                simulatedNs / 1e9, wallSeconds, instances[0].timelineSegments()).withServing(stats)
                .withStorage(storageResult()).withOccupancy(occupancy);
    }

    /** Skipped-node counts keyed by the reason's snake_case name, every reason present. */
    static java.util.Map<String, Long> skippedByName(long[] skipped) {
        java.util.Map<String, Long> out = new java.util.LinkedHashMap<>();
        for (WritePolicy.SkipReason reason : WritePolicy.SkipReason.values()) {
            out.put(reason.name().toLowerCase(java.util.Locale.ROOT), skipped[reason.ordinal()]);
        }
        return out;
    }

    private io.hicache.sim.report.StorageResult storageResult() {
        if (store == null) {
            return null;
        }
        List<io.hicache.sim.report.StorageResult> parts = new ArrayList<>();
        for (Instance in : instances) {
            parts.add(in.storage.result(pageSize));
        }
        return io.hicache.sim.report.StorageResult.sum(parts);
    }

    /** Closes every instance; returns the run's device facts. */
    ServingEngine.RunStats closeAll() {
        List<SimulatedCudaRuntime.LeakReport> leaks = new ArrayList<>();
        long ops = 0;
        long forwards = 0;
        RuntimeException failure = null;
        if (stepper != null) {
            try {
                ops += stepper.close(leaks);
            } catch (RuntimeException e) {
                failure = e;
            } finally {
                stepper.close();
            }
            for (Instance in : instances) {
                forwards += in.deviceForwards;
            }
        } else {
            for (Instance in : instances) {
                if (in == null) {
                    continue;
                }
                try {
                    ops += in.close(leaks);
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    }
                }
            }
        }
        if (store != null) {
            store.close(); // after every tier closed
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
            long outputPages = 0;
            while ((r = reader.next()) != null) {
                buf = TokenExpander.ensureCapacity(buf, counter.tokenCount(r));
                counter.expandInto(r, buf);
                outputPages += decodedSim(r.outputLength()) / pageSize + 1;
            }
            return (long) counter.distinctBlocks() * (config.blockTokens() / pageSize) + outputPages + 1;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read trace " + trace.path() + ": " + e.getMessage(), e);
        }
    }
}
