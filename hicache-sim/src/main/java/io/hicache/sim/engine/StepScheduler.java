package io.hicache.sim.engine;

import io.hicache.core.BackupHandle;
import io.hicache.core.HiCache;
import io.hicache.core.LoadHandle;
import io.hicache.core.WritePolicy;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.sim.HitStats;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The continuous-batching scheduler of one {@link Instance}, driving its CP ranks' caches through the engine API
 * ({@link HiCache}) as a serving engine's scheduler does: the queue and the running batch; admission (match, storage
 * prefetch, load-back of a host hit, device pages); each step's decode tokens and prefill chunks; inserting computed
 * pages into the trees and reserving their backups by the write policy; decode growth and preemption; finishing.
 * Device pages come from the instance's {@link PageLedger}. The instance's event loop times the steps and runs their
 * forwards. Owned by the instance's scheduler thread; not thread-safe.
 */
final class StepScheduler {
    /** Deferrals of a request whose host chain another request is loading before it recomputes instead. */
    private static final int MAX_LOAD_WAITS = 8;
    /** Load batches in flight per rank (SGLang keeps 3 event sets); the caches are built with the same limit. */
    static final int LOAD_RING = 3;

    private final int cp;
    /** Simulated tokens per page (the caches' trees hold one key per page). */
    private final int pageSize;
    private final LongSupplier clockNs;
    private final Replay fleet;
    private final HiCache[] caches;
    private final PageLedger ledger;
    private final StorageSim storage;
    private final boolean sameForward;
    private final MatchResult[] match;
    private final List<List<BackupHandle>> pendingBackups = new ArrayList<>();

    private final ArrayList<ServedRequest> waiting = new ArrayList<>();
    private final ArrayList<ServedRequest> running = new ArrayList<>();
    private final ArrayList<ServedRequest> stepPrefill = new ArrayList<>();
    private final ArrayList<ServedRequest> stepDecode = new ArrayList<>();
    private final ArrayList<List<LoadHandle>> loadSets = new ArrayList<>();
    private final ArrayList<LoadHandle> queuedLoads = new ArrayList<>();
    /** Previous-batch: waiting requests whose load has not been seen ended yet (see {@link #holdLoaded}). */
    private final ArrayList<ServedRequest> awaitingLoad = new ArrayList<>();
    /** Simulated time of the step being formed. */
    private long stepNowNs;
    /** Prompt and decode context of this step's decoding requests, in tokens. */
    private long decodeContext;
    /** Whether the caches may have work since the last {@link #takeDirty}. */
    private boolean dirty;
    private int nextOutputKey;
    private final int outputKeyStride;
    /** What the client sees beyond the engine's clock per request (the profiled engine's HTTP layer), ns. */
    private final long requestOverheadNs;
    /** With a profile: each decode forward's time in this step, in {@link #stepDecode}'s order, and their sum. */
    private long[] decodeNs = new long[16];
    private long stepDecodeTotalNs;

    /** Hit counts of the requests admitted here. */
    final HitStats hits;
    /** Outcomes of the requests finished here. */
    final Outcomes outcomes = new Outcomes();
    long preemptions;
    /** Steps formed while the head of the queue waited for device pages (none free or evictable). */
    long admissionPageWaits;
    long prefilledSimTotal;
    long recomputedSimTotal;
    /** Simulated tokens computed again only because a full hit still computes its last token. */
    long lastTokenRecomputeSim;
    long outputTokens;

    StepScheduler(int index, Replay fleet, HiCache[] caches, PageLedger ledger, StorageSim storage,
                  LongSupplier clockNs) {
        this.cp = caches.length;
        this.clockNs = clockNs;
        this.pageSize = fleet.config.pageSize();
        this.fleet = fleet;
        this.caches = caches;
        this.ledger = ledger;
        this.storage = storage;
        this.sameForward = fleet.config.loadOverlap() == io.hicache.core.LoadOverlap.SAME_FORWARD;
        this.match = new MatchResult[cp];
        for (int r = 0; r < cp; r++) {
            match[r] = new MatchResult(256);
            pendingBackups.add(new ArrayList<>());
        }
        this.hits = new HitStats(fleet.config.blockTokens());
        this.nextOutputKey = Integer.MAX_VALUE - index;
        this.outputKeyStride = fleet.serving.instances();
        this.requestOverheadNs = fleet.timing == null ? 0 : fleet.timing.requestOverheadNs;
    }

    // ------------------------------------------------------------------ queues

    /** Queues an arrived request. */
    void enqueue(ServedRequest q) {
        waiting.add(q);
    }

    /** Requests queued or running. */
    int outstandingRequests() {
        return waiting.size() + running.size();
    }

    /** Simulated prompt tokens still to prefill (queued and in progress). */
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

    boolean noneWaiting() {
        return waiting.isEmpty();
    }

    boolean noneRunning() {
        return running.isEmpty();
    }

    int waitingCount() {
        return waiting.size();
    }

    int runningCount() {
        return running.size();
    }

    /** True (once) if the caches may have work since the last call: the event loop settles them then. */
    boolean takeDirty() {
        boolean d = dirty;
        dirty = false;
        return d;
    }

    /** Rank {@code r}'s backups reserved since the last forward, waiting for one to run their hooks. */
    List<BackupHandle> pendingBackups(int r) {
        return pendingBackups.get(r);
    }

    /** The requests prefilling a chunk in the step being formed (or running). */
    List<ServedRequest> stepPrefill() {
        return stepPrefill;
    }

    /** The requests decoding one token in the step being formed (or running). */
    int stepDecodeCount() {
        return stepDecode.size();
    }

    /** Whether a request other than those in {@code prefill} decodes a token in the step being formed. */
    boolean decodesBeside(List<ServedRequest> prefill) {
        for (int i = 0; i < stepDecode.size(); i++) {
            if (!prefill.contains(stepDecode.get(i))) {
                return true;
            }
        }
        return false;
    }

    /** Prompt and decode context of the step's decoding requests, in tokens. */
    long decodeContext() {
        return decodeContext;
    }

    /** The loads the step's admissions queued; the instance starts them ({@link HiCache#startLoading()}). */
    List<LoadHandle> queuedLoads() {
        return queuedLoads;
    }

    /** The queued loads were started: they occupy one of the caches' load event sets until they end. */
    void loadsStarted() {
        loadSets.add(new ArrayList<>(queuedLoads));
    }

    // ------------------------------------------------------------------ forming a step

    /**
     * Forms the next step's batch at {@code now}: one token for every decoding request, the next chunk of every
     * request in prefill, then new requests from the head of the queue while the token budget lasts.
     *
     * @param force admit the head request even without device pages (uncached), when nothing else can move
     * @return whether a request was preempted or admitted, or a chunk is to prefill (the caches were called)
     */
    boolean formBatch(long now, boolean force) {
        stepNowNs = now;
        stepPrefill.clear();
        stepDecode.clear();
        queuedLoads.clear();
        pruneLoadSets();
        holdLoaded();
        if (fleet.profile != null) {
            return formProfiledBatch(now, force);
        }
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
        decodeContext = 0;
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
                    admissionPageWaits++;
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
        return preempted || taken > 0 || !stepPrefill.isEmpty();
    }

    /**
     * The profiled engine's step (hicache-serve's {@code Engine.step()}): admissions from the head of the queue while
     * fewer than {@code max_running} run (a request whose host hit is loading is passed over; one without device pages
     * stops the queue), then one chunk of the oldest running request still prefilling, and one decode token of every
     * decoding request. Pages for prompt and output are reserved at admission, as the engine does, so decoding never
     * preempts. A request's queue time ends at its first admission attempt, as the engine's {@code queue_ms} does.
     */
    private boolean formProfiledBatch(long now, boolean force) {
        int maxRunning = fleet.maxRunning;
        int taken = 0;
        for (int i = 0; i < waiting.size() && running.size() < maxRunning;) {
            ServedRequest q = waiting.get(i);
            if (q.firstScheduledNs < 0) {
                // the engine's queue time ends at its first admission attempt (Engine.admitWithCache stamps it before
                // the page check); waiting at the head for pages counts in its TTFT, not its queue_ms
                q.firstScheduledNs = now;
            }
            int admitted = admit(q, force);
            if (admitted < 0) {
                admissionPageWaits++;
                break;
            }
            if (admitted == 0) {
                i++;
                continue;
            }
            waiting.remove(i);
            running.add(q);
            taken++;
            if (force) {
                break;
            }
        }
        decodeContext = 0;
        boolean chunk = false;
        for (int i = 0; i < running.size(); i++) {
            ServedRequest q = running.get(i);
            if (q.inPrefill()) {
                if (!chunk) {
                    chunk = true;
                    q.chunkSim = Math.min(q.targetSim - q.prefilledSim, fleet.chunkSim);
                    stepPrefill.add(q);
                    if (q.prefilledSim + q.chunkSim >= q.targetSim && q.request.outputLength() > 1) {
                        stepDecode.add(q); // as the engine: its first decode in the step its prefill ends
                    }
                }
            } else {
                growForDecode(q); // pages were reserved at admission: never preempts
                stepDecode.add(q);
                decodeContext += q.simTokens + q.decoded;
            }
        }
        return taken > 0 || chunk;
    }

    /**
     * The profiled engine's decode forwards of this step, in the engine's order: one per decoding request, over its
     * KV so far (the prompt and every token but the last sampled); each one's time is kept for {@link #completeStep}.
     */
    long profiledDecodeNs(ProfiledTiming t) {
        if (decodeNs.length < stepDecode.size()) {
            decodeNs = new long[Math.max(stepDecode.size(), decodeNs.length * 2)];
        }
        long ns = 0;
        for (int i = 0; i < stepDecode.size(); i++) {
            ServedRequest q = stepDecode.get(i);
            decodeNs[i] = t.decodeNs(q.simTokens + Math.max(1, q.decoded) - 1L);
            ns += decodeNs[i];
        }
        stepDecodeTotalNs = ns;
        return ns;
    }

    /** Pages admission reserves: the prompt's; with a profile, prompt and output together, as the engine does. */
    private int admissionPages(ServedRequest q) {
        int sim = fleet.profile == null ? q.targetSim
                : q.targetSim + fleet.decodedSim(Math.max(1, q.request.outputLength()));
        return ceilPages(sim);
    }

    /**
     * Same-forward loads: the largest load token per rank that the step's forward must wait on before each layer
     * (-1: none) into {@code stepWait}; forgets loads that already ended.
     *
     * @return whether the forward waits for a load
     */
    boolean loadWaits(long[] stepWait) {
        boolean waits = false;
        java.util.Arrays.fill(stepWait, -1);
        for (int i = 0; i < stepPrefill.size(); i++) {
            ServedRequest q = stepPrefill.get(i);
            if (q.waitFor == null) {
                continue;
            }
            LoadHandle.State s = q.waitFor[0].state();
            if (s == LoadHandle.State.LOADED || s == LoadHandle.State.FAILED) {
                q.waitFor = null;
                continue;
            }
            for (int r = 0; r < cp; r++) {
                stepWait[r] = Math.max(stepWait[r], q.waitFor[r].consumer());
            }
            waits = true;
        }
        return waits;
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
            LoadHandle.State s = q.load.state();
            if (s == LoadHandle.State.QUEUED || s == LoadHandle.State.ISSUED) {
                return 0;
            }
            q.loadedPages = s == LoadHandle.State.LOADED ? q.load.pageCount() : 0;
            q.load = null;
            q.loadDone = true;
        }
        q.waitFor = null; // found again below: the loads this admission's prefix still waits for
        releaseHold(q); // its own allocation below protects the matched prefix; held again if it must wait
        matchAll(q);
        if (storage != null && !force) {
            long now = clockNs.getAsLong();
            if (!q.storageTried) {
                q.storageTried = true;
                long wait = storage.prefetch(q.keys, match, q.request.index());
                if (wait >= 0) {
                    q.storagePages = storage.lastPublished();
                    q.prefetches = storage.lastPrefetches();
                    q.storageReadyNs = now + wait;
                    matchAll(q);
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
            if (!ledger.hasRoom(admissionPages(q) - devicePrefix, match)) {
                return -1; // no room for the loaded and the computed pages together: wait (SGLang's check first)
            }
            int loading = loadBack(q);
            if (loading <= 0) {
                return loading;
            }
            devicePrefix = match[0].devicePageCount();
        }
        if (sameForward && q.waitFor == null && match[0].loadingNode() != null) {
            // the prefix reaches a load in flight (this request's or another's): the forward waits for it
            q.waitFor = new LoadHandle[cp];
            for (int r = 0; r < cp; r++) {
                q.waitFor[r] = inStep(caches[r].joinLoad(match[r]), r, q);
            }
        }
        int totalPages = admissionPages(q);
        int newPages = totalPages - devicePrefix;
        if (q.pages.length < totalPages + 1) {
            q.pages = new int[Math.max(totalPages + 1, q.pages.length * 2)];
        }
        System.arraycopy(match[0].devicePages(), 0, q.pages, 0, devicePrefix);
        if (allocate(newPages, q.pages, devicePrefix, true)) {
            if (fleet.profile == null) {
                // leave room after the prompt for the answer's pages, so they follow it and copy as one range
                ledger.skip(ceilPages(fleet.decodedSim(q.request.outputLength())));
            }
            q.noPages = false;
            q.pageCount = totalPages;
            q.ownedFrom = devicePrefix;
            q.insertedPages = devicePrefix;
            q.lock = lockMatched(new RadixNode[cp]);
        } else if (force) {
            q.noPages = true;
            q.pageCount = 0;
            q.ownedFrom = 0;
            q.lock = null;
        } else {
            if (q.loadedPages > 0) {
                hold(q); // keep what its load brought back while it waits for the pages of the rest
            }
            return -1;
        }
        // a full hit still computes its last token (the logits of the next one), as SGLang matches len - 1; the
        // serving engine restores whole pages only, so it computes the prompt's last page again
        int prefixSim = devicePrefix * pageSize;
        if (prefixSim >= q.targetSim) {
            int restored = fleet.profile == null ? q.targetSim - 1 : (q.targetSim - 1) / pageSize * pageSize;
            if (!q.admittedOnce) {
                lastTokenRecomputeSim += q.targetSim - restored; // a readmission's chunks count as recomputed already
            }
            prefixSim = restored;
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

    /**
     * Locks the device prefix just matched for a queued request whose own load brought it back: until the request is
     * admitted nothing else holds those pages, and a request waiting for device pages would otherwise watch them
     * evicted (then recompute them: the load done for nothing).
     */
    private void hold(ServedRequest q) {
        q.hold = lockMatched(q.hold == null ? new RadixNode[cp] : q.hold);
    }

    /** Locks each rank's last matched device node into {@code into} (its slot left as is where there is none). */
    private RadixNode[] lockMatched(RadixNode[] into) {
        for (int r = 0; r < cp; r++) {
            RadixNode n = match[r].lastDeviceNode();
            if (n != null && !n.isRoot()) {
                caches[r].lock(n);
                into[r] = n;
            }
        }
        return into;
    }

    private void releaseHold(ServedRequest q) {
        if (q.hold != null) {
            unlockAll(q.hold);
        }
    }

    /** Unlocks every node {@link #lockMatched} put in {@code locked} and empties its slots. */
    private void unlockAll(RadixNode[] locked) {
        for (int r = 0; r < cp; r++) {
            if (locked[r] != null) {
                caches[r].unlock(locked[r]);
                locked[r] = null;
            }
        }
    }

    private void matchAll(ServedRequest q) {
        for (int r = 0; r < cp; r++) {
            caches[r].match(q.keys, 0, q.keys.length, match[r]);
        }
    }

    /**
     * Loads back the host-only part of the request's match on every rank. Same-forward: the chain becomes a
     * loading device prefix the request's forward computes on, and the ranks' matches are made again.
     *
     * @return 1 admission goes on (same-forward load queued), 0 it waits (loading, ring busy), -1 no device room for
     *     the load (the head of the queue waits for pages)
     */
    private int loadBack(ServedRequest q) {
        if (loadSets.size() >= fleet.loadRing) {
            return 0; // every load event set is busy; try again at the next step
        }
        long refused = caches[0].metric(Metric.LOADS_REFUSED);
        LoadHandle op = caches[0].loadBack(match[0], q.request.index(), Integer.MAX_VALUE, ledger.loadAllocator(0));
        LoadHandle[] ops = sameForward && op != null ? new LoadHandle[cp] : null;
        if (ops != null) {
            ops[0] = op;
        }
        for (int r = 1; r < cp; r++) {
            LoadHandle mine = caches[r].loadBack(match[r], q.request.index(), Integer.MAX_VALUE,
                    ledger.loadAllocator(r));
            if (ops != null) {
                ops[r] = inStep(mine, r, q);
            }
        }
        if (q.prefetches != null) {
            storage.consume(q.prefetches); // the load protects its host pages from here on
            q.prefetches = null;
        }
        if (op == null) {
            if (caches[0].metric(Metric.LOADS_REFUSED) != refused) {
                // No device room for the load: recomputing the prefix would need more pages still, so the request
                // waits for pages like any head of the queue and tries the load again (SGLang re-matches it each
                // round); giving up its host hit here made it wait all the same and then recompute the hit.
                return -1;
            }
            if (++q.loadWaits > MAX_LOAD_WAITS) {
                q.loadDone = true; // another request's load of the chain took too long: recompute
            }
            return 0;
        }
        queuedLoads.add(op);
        q.hostHitStartNs = stepNowNs;
        if (!sameForward) {
            // Admitted at a later step, once the load is agreed. Until then it holds its device prefix, and from the
            // step the load ends the pages the load brought back (see holdLoaded).
            q.load = op;
            hold(q);
            awaitingLoad.add(q);
            return 0;
        }
        // same-forward: the chain is now a loading device prefix this step's forward computes on
        q.loadDone = true;
        q.loadedPages = op.pageCount();
        q.waitFor = ops; // the latest load issued: waiting for it covers any load above it
        matchAll(q);
        return 1;
    }

    /** {@code load}, rank {@code r}'s part of a load rank 0 has; a CP group's ranks hold one tree, so never null. */
    private static LoadHandle inStep(LoadHandle load, int r, ServedRequest q) {
        if (load == null) {
            throw new IllegalStateException("CP rank " + r + " has no part in the load rank 0 has for request "
                    + q.request.index() + ": the group's trees differ");
        }
        return load;
    }

    // ------------------------------------------------------------------ pages into the trees

    /** Inserts the whole prompt pages this step's chunk completes, moves the lock, reserves their backups. */
    void insertChunk(ServedRequest q) {
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
            HiCache cache = caches[r];
            int p = cache.insert(keys, 0, n, q.pages, 0); // the trees hold one key per page: tokens are pages
            if (present < 0) {
                present = p;
            } else if (p != present) {
                throw new IllegalStateException("CP ranks diverged: rank " + r + " found " + p + " pages present, rank 0 "
                        + present);
            }
            RadixNode node = cache.lastInsertNode();
            if (!node.isRoot()) {
                cache.lock(node);
                locks[r] = node;
            }
        }
        if (present < q.insertedPages) {
            throw new IllegalStateException("request " + q.request.index() + ": its locked pages left the tree");
        }
        if (present > q.ownedFrom) {
            // another request inserted these pages first: ours are duplicates (as SGLang frees them)
            ledger.free(q.pages, q.ownedFrom, present - q.ownedFrom);
        }
        q.ownedFrom = Math.max(q.ownedFrom, n);
        unlock(q);
        q.lock = locks;
        if (fleet.backupsEnabled && fleet.config.writePolicy() != WritePolicy.WRITE_BACK && locks[0] != null) {
            for (int r = 0; r < cp; r++) {
                caches[r].reserveByPolicy(locks[r], fleet.withDraft, pendingBackups.get(r));
            }
        }
    }

    private void unlock(ServedRequest q) {
        if (q.lock != null) {
            unlockAll(q.lock);
            q.lock = null;
        }
    }

    // ------------------------------------------------------------------ decode growth and preemption

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
        if (need - q.pageCount == 1 && q.pageCount > 0 && ledger.allocateAfter(q.pages[q.pageCount - 1], q.pages,
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
            ledger.free(v.pages, v.ownedFrom, v.pageCount - v.ownedFrom);
        }
        unlock(v);
        v.pageCount = 0;
        v.ownedFrom = 0;
        v.insertedPages = 0;
        v.prefilledSim = 0;
        v.targetSim = v.simTokens + fleet.decodedSim(v.decoded); // prompt and every emitted token
        v.loadDone = false;
        v.loadWaits = 0;
        v.loadedPages = 0; // a readmission loads again what it finds on the host
        v.preemptions++;
        preemptions++;
        waiting.addFirst(v);
    }

    /** Allocates {@code n} device pages into {@code out[offset..]}, evicting cached pages if needed. */
    private boolean allocate(int n, int[] out, int offset, boolean protectMatch) {
        if (n <= 0) {
            return true;
        }
        if (ledger.allocateFree(n, out, offset)) {
            return true;
        }
        dirty = true; // eviction (under write-back it may also queue copies)
        return ledger.evictAndAllocate(n, out, offset, protectMatch ? match : null);
    }

    /**
     * Previous-batch: a load that ended brought its pages back unlocked and no more recently used than the request's
     * match a step or more ago; an allocation for another request (a decode page, an admission ahead of it) could
     * evict them, and the request would compute again what it loaded. Its request holds them from now on, until it
     * is admitted.
     */
    private void holdLoaded() {
        for (int i = awaitingLoad.size() - 1; i >= 0; i--) {
            ServedRequest q = awaitingLoad.get(i);
            LoadHandle.State s = q.load == null ? null : q.load.state();
            if (s == LoadHandle.State.QUEUED || s == LoadHandle.State.ISSUED) {
                continue;
            }
            awaitingLoad.remove(i);
            if (s == LoadHandle.State.LOADED) {
                releaseHold(q);
                matchAll(q);
                hold(q);
            }
        }
    }

    private void pruneLoadSets() {
        for (int i = loadSets.size() - 1; i >= 0; i--) {
            List<LoadHandle> set = loadSets.get(i);
            boolean done = true;
            for (int k = 0; k < set.size() && done; k++) {
                LoadHandle.State s = set.get(k).state();
                done = s == LoadHandle.State.LOADED || s == LoadHandle.State.FAILED;
            }
            if (done) {
                loadSets.remove(i);
            }
        }
    }

    // ------------------------------------------------------------------ the end of a step

    /**
     * The step ended at {@code now}: chunks count as prefilled, tokens come out, requests finish. With a profile each
     * token comes out when its forward ends within the step (the chunk's first, then the decodes in order, then the
     * step's overhead), as the engine streams it; without, every token at the step's end.
     */
    void completeStep(long now) {
        long t = now;
        if (fleet.timing != null && (!stepPrefill.isEmpty() || !stepDecode.isEmpty())) {
            t = now - fleet.timing.stepOverheadNs - stepDecodeTotalNs; // the chunk's forward ended here
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
                emitToken(q, t); // the prefill's last chunk yields the next token
            }
        }
        for (int i = 0; i < stepDecode.size(); i++) {
            if (fleet.timing != null) {
                t += decodeNs[i];
            }
            emitToken(stepDecode.get(i), t);
        }
        stepDecodeTotalNs = 0;
        stepPrefill.clear();
        stepDecode.clear();
    }

    private void emitToken(ServedRequest q, long now) {
        q.decoded++;
        outputTokens++;
        if (q.firstTokenNs < 0) {
            q.firstTokenNs = now + requestOverheadNs;
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
        q.finishNs = now + requestOverheadNs;
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
                ledger.free(q.pages, q.ownedFrom, q.pageCount - q.ownedFrom);
            }
            unlock(q);
            q.pageCount = 0;
            q.ownedFrom = 0;
        }
        q.pages = null;
        outcomes.add(q);
    }

    /** Simulated tokens of KV a request holds after its prefill and {@code decoded - 1} decode steps. */
    private int kvSim(ServedRequest q) {
        return q.simTokens + fleet.decodedSim(Math.max(0, q.decoded - 1));
    }

    private int ceilPages(int sim) {
        return (sim + pageSize - 1) / pageSize;
    }

    /** Checks that no device page is held twice (see {@link PageLedger#checkOwnership}). */
    void checkPageOwnership() {
        ledger.checkOwnership(running);
    }
}
