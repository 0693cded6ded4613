package io.hicache.core.internal;

import io.hicache.core.DevicePageAllocator;
import io.hicache.core.LoadListener;
import io.hicache.core.internal.copy.CopyDirection;
import io.hicache.core.internal.copy.CopyPlan;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import org.jctools.queues.SpscArrayQueue;

import java.util.function.LongSupplier;

/**
 * Load-back (host → device) of one controller: collects host-only chains, allocates device pages, issues the
 * per-layer H2D copies on the load stream with one event per layer, and settles the chain once the group agreed
 * whether the load completed.
 *
 * <p>{@link io.hicache.core.LoadOverlap#SAME_FORWARD}: the chain enters the tree's LOADING state at
 * {@link #loadBack}, so the requesting forward computes on it, waiting per layer on the device; agreement either
 * finishes the load (the tree takes the pages) or fails it (the subtree is invalidated, the load's pages go back).
 * {@link io.hicache.core.LoadOverlap#PREVIOUS_BATCH}: the chain stays host-only and gets its pages at agreement.
 *
 * <p>Owned by the scheduler thread, except {@link #waitLayer}, which the forward thread calls. Event sets live in
 * a ring of {@code loadBatchesInFlight} (a builder setting) so the next batch's load can be issued before the previous
 * one is consumed; a consumer token carries its set's index in its low {@value #INDEX_BITS} bits.
 */
final class Loader implements AgreedFifo.Retirer<LoadOp> {
    static final int INDEX_BITS = 8;

    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final CudaStream loadStream;
    private final RadixTree tree;
    private final CopyPlanner targetPlanner;
    private final CopyPlanner draftPlanner;
    private final CopyPlan plan = new CopyPlan(256);
    private final boolean batched;
    private final int rank;
    private final LongSupplier clock;
    private final HiCacheMetrics metrics;
    private final AgentErrors errors;
    private final LoadListener listener;
    private final int thresholdTokens;
    private final int pageSize;
    private final boolean sameForward;
    private final LoadSet[] sets;
    private final SpscArrayQueue<LoadSet> issued;
    private final SpscArrayQueue<LoadSet> acks;
    private int nextSet;
    /** The first sticky CUDA error a load's ack reported (the controller stops on it), or 0. */
    private int stickyStatus;
    private long generation;

    private LoadOp[] queued = new LoadOp[8];
    private int queuedCount;
    private final AgreedFifo<LoadOp> fifo;
    private final GroupHealth health;
    private final boolean fingerprints;
    private final java.util.IdentityHashMap<RadixNode, LoadOp> loading = new java.util.IdentityHashMap<>();
    private final PagePairs pairs = new PagePairs(64);
    private final PagePairs drafts = new PagePairs(64);
    private int[] scratchOffsets = new int[64];
    /** The tree pages a failed load invalidated go to the engine's allocator, or wait for a backup copying them. */
    private final HeldPagesSink invalidated = new HeldPagesSink();

    Loader(CudaRuntime runtime, CudaStream computeStream, RadixTree tree, CopyPlanner targetPlanner,
           CopyPlanner draftPlanner, boolean batched, GroupHealth health, int cpSize, int rank, LongSupplier clock,
           HiCacheMetrics metrics, AgentErrors errors, LoadListener listener, int thresholdTokens, int targetLayers, int draftLayers,
           SpscArrayQueue<LoadSet> issued, SpscArrayQueue<LoadSet> acks, java.util.List<CudaEvent> created,
           boolean sameForward, int batches) {
        this.runtime = runtime;
        this.sets = new LoadSet[batches];
        this.sameForward = sameForward;
        this.computeStream = computeStream;
        this.tree = tree;
        this.targetPlanner = targetPlanner;
        this.draftPlanner = draftPlanner;
        this.batched = batched;
        this.rank = rank;
        this.clock = clock;
        this.metrics = metrics;
        this.errors = errors;
        this.listener = listener;
        this.thresholdTokens = thresholdTokens;
        this.pageSize = tree.pageSize();
        this.issued = issued;
        this.acks = acks;
        this.health = health;
        this.fingerprints = cpSize > 1;
        this.fifo = new AgreedFifo<>(this, health);
        this.loadStream = runtime.createStream(0);
        try {
            createSets(created, targetLayers, draftLayers);
        } catch (RuntimeException | Error e) {
            // the caller destroys the events in created; the stream is this constructor's to give back
            try {
                runtime.destroyStream(loadStream);
            } catch (RuntimeException ignored) {
                // poisoned context: nothing to free
            }
            throw e;
        }
    }

    private void createSets(java.util.List<CudaEvent> created, int targetLayers, int draftLayers) {
        for (int i = 0; i < sets.length; i++) {
            CudaEvent start = ev(created);
            CudaEvent[] t = new CudaEvent[targetLayers];
            for (int l = 0; l < targetLayers; l++) {
                t[l] = ev(created);
            }
            CudaEvent[] d = new CudaEvent[draftLayers];
            for (int l = 0; l < draftLayers; l++) {
                d[l] = ev(created);
            }
            sets[i] = new LoadSet(i, start, t, d, ev(created));
        }
    }

    private CudaEvent ev(java.util.List<CudaEvent> created) {
        CudaEvent e = runtime.createEvent(true);
        created.add(e);
        return e;
    }

    CudaStream loadStream() {
        return loadStream;
    }

    LoadSet[] sets() {
        return sets;
    }

    /** The first sticky CUDA error a load met, or 0. Scheduler thread. */
    int stickyStatus() {
        return stickyStatus;
    }

    int inFlight() {
        return fifo.size() + queuedCount;
    }

    /** The loads' section of the agreement rounds. */
    AgreedFifo<LoadOp> fifo() {
        return fifo;
    }

    @Override
    public String itemName() {
        return "load";
    }

    /** See {@link HiCacheController#loadBack}. */
    LoadOp loadBack(MatchResult match, long requestId, int memoryQuotaTokens, DevicePageAllocator allocator,
                    HiCacheController evict) {
        int hostTokens = match.hostTokenCount();
        if (hostTokens == 0 || hostTokens < thresholdTokens || hostTokens > memoryQuotaTokens || health.degraded()) {
            return null; // (a degraded group completes no load: its match reports no host hit)
        }
        RadixNode anchor = match.lastDeviceNode();
        // host-only chain from the node after the device prefix down to lastHostNode
        int count = 0;
        for (RadixNode n = match.lastHostNode(); n != anchor && n != null; n = n.parent()) {
            count++;
        }
        RadixNode[] chain = new RadixNode[count];
        int i = count;
        for (RadixNode n = match.lastHostNode(); n != anchor && n != null; n = n.parent()) {
            chain[--i] = n;
        }
        int first = 0;
        if (sameForward) {
            // the match may predate another load of the chain's head: that part is now a (loading) device prefix
            while (first < count && chain[first].hasDeviceValue()) {
                anchor = chain[first++];
            }
        }
        // stop before a node another load is already bringing back, or one no longer host-only
        int usable = first;
        int pages = 0;
        while (usable < count && !loading.containsKey(chain[usable]) && chain[usable].isDeviceEvicted()
            && chain[usable].isHostResident()) {
            pages += chain[usable].pageCount();
            usable++;
        }
        usable -= first;
        if (usable == 0 || pages * pageSize < thresholdTokens) {
            return null;
        }
        if (first > 0 || usable < count) {
            chain = java.util.Arrays.copyOfRange(chain, first, first + usable);
        }
        int[] devicePages = new int[pages];
        tree.lock(anchor);
        tree.protectHost(chain[usable - 1]);
        boolean ok = allocator.allocate(pages, devicePages, 0);
        if (!ok) {
            evict.evictDevice(pages, allocator);
            ok = allocator.allocate(pages, devicePages, 0);
        }
        if (!ok) {
            tree.releaseHost(chain[usable - 1]);
            tree.unlock(anchor);
            metrics.increment(Metric.LOADS_REFUSED);
            return null;
        }
        int[] starts = new int[usable];
        int p = 0;
        int storagePages = 0;
        for (int k = 0; k < usable; k++) {
            starts[k] = p;
            p += chain[k].pageCount();
            if (chain[k].hostValue() instanceof HostPages hp && hp.prefetched()) {
                storagePages += chain[k].pageCount(); // the L3 tier counted these as served when it published them
                hp.clearPrefetched();
            }
        }
        int firstPage = 0;
        for (RadixNode a = anchor; a != null && !a.isRoot(); a = a.parent()) {
            firstPage += a.pageCount();
        }
        long seq = fifo.nextSeq();
        LoadOp op = new LoadOp(seq, requestId, anchor, chain, starts, pages, devicePages, firstPage, storagePages,
            fingerprints ? Fingerprints.load(seq, chain[usable - 1], pages) : 0);
        op.allocator = allocator;
        for (int k = 0; k < usable; k++) {
            if (sameForward) {
                tree.beginLoad(chain[k], devicePages, starts[k], op);
            } else {
                loading.put(chain[k], op);
            }
        }
        if (queuedCount == queued.length) {
            queued = java.util.Arrays.copyOf(queued, queuedCount * 2);
        }
        queued[queuedCount++] = op;
        fifo.add(op);
        return op;
    }

    /**
     * See {@link HiCacheController#joinLoad}: the load filling the deepest loading node of the match, or null; a
     * join is counted unless the load is request {@code requestId}'s own ({@code countAll}: every join is counted).
     */
    LoadOp joinLoad(MatchResult match, long requestId, boolean countAll) {
        RadixNode n = match.loadingNode();
        if (n == null || !(n.pendingLoad() instanceof LoadOp op)) {
            return null;
        }
        if (countAll || op.requestId != requestId) {
            metrics.increment(Metric.LOAD_JOINS);
        }
        return op;
    }

    /** See {@link HiCacheController#startLoading}. */
    long startLoading() {
        if (queuedCount == 0) {
            return -1;
        }
        LoadSet set = sets[nextSet];
        if (set.inUse) {
            throw new IllegalStateException("load event set " + set.index + " is still in use by an earlier batch "
                + "(loadBatchesInFlight " + sets.length + "): poll() until its load completed before starting another, "
                + "or raise loadBatchesInFlight");
        }
        nextSet = (nextSet + 1) % sets.length;
        set.inUse = true;
        set.opCount = 0;
        set.submitError = 0;
        set.submitErrorCall = null;
        set.agentError = false;
        set.finalRecorded = false;
        set.status = 0;
        set.generation = ++generation;
        set.issuedNs = clock.getAsLong();
        set.bytes = 0;
        pairs.count = 0;
        drafts.count = 0;
        for (int q = 0; q < queuedCount; q++) {
            LoadOp op = queued[q];
            queued[q] = null;
            refreshChain(op);
            op.set = set;
            op.consumer = (set.generation << INDEX_BITS) | set.index;
            op.state = LoadOp.State.ISSUED;
            op.issuedNs = set.issuedNs;
            set.add(op);
            for (int k = 0; k < op.nodes.length; k++) {
                HostPages hp = (HostPages) op.nodes[k].hostValue();
                int owned = hp.lanes().ownedOffsets(scratch(op.nodes[k].pageCount()));
                pairs.ensure(pairs.count + owned);
                for (int j = 0; j < owned; j++) {
                    pairs.add(op.devicePages[op.nodePageStart[k] + scratchOffsets[j]], hp.hostPage(j));
                }
                if (draftPlanner != null && hp.hasDraft()) {
                    drafts.addFrom(pairs, pairs.count - owned, owned);
                }
            }
            metrics.add(Metric.LOAD_TOKENS, (long) op.pageCount * pageSize);
            metrics.add(Metric.HOST_HIT_TOKENS, (long) (op.pageCount - op.storagePages) * pageSize);
            metrics.increment(Metric.LOADS_STARTED);
        }
        queuedCount = 0;
        try {
            runtime.recordEvent(set.startEvent, computeStream);
            runtime.streamWaitEvent(loadStream, set.startEvent);
            int layers = set.targetEvents.length;
            int draftLayers = set.draftEvents.length;
            int maxLayers = Math.max(layers, draftLayers);
            for (int l = 0; l < maxLayers; l++) {
                if (l < layers) {
                    set.bytes += issue(targetPlanner, l, pairs);
                    runtime.recordEvent(set.targetEvents[l], loadStream);
                }
                if (l < draftLayers) {
                    if (drafts.count > 0) {
                        set.bytes += issue(draftPlanner, l, drafts);
                    }
                    runtime.recordEvent(set.draftEvents[l], loadStream);
                }
            }
            runtime.recordEvent(set.finalEvent, loadStream);
            set.finalRecorded = true;
        } catch (CudaException e) {
            set.submitError = e.code();
            set.submitErrorCall = e.call();
            // wait for the copies already queued before the load's pages go back to the engine
            try {
                runtime.recordEvent(set.finalEvent, loadStream);
                set.finalRecorded = true;
            } catch (CudaException dead) {
                // the context is dead: nothing queued will run
            }
        } catch (RuntimeException e) {
            // not a CUDA error: the load fails (agreed like any failure); its final event still orders the release
            // of its pages after the copies already queued, or, if even that cannot be recorded, the load stream
            // is drained here first
            errors.record("scheduler", "issuing a load", e);
            set.agentError = true;
            try {
                runtime.recordEvent(set.finalEvent, loadStream);
                set.finalRecorded = true;
            } catch (RuntimeException again) {
                try {
                    runtime.synchronizeStream(loadStream);
                } catch (RuntimeException ignored) {
                    // nothing more can be done; the failure is reported below
                }
                set.finalRecorded = false;
                set.submitError = io.hicache.cuda.CudaError.UNKNOWN.code();
                set.submitErrorCall = "recordEvent";
            }
        }
        if (!issued.offer(set)) {
            throw new IllegalStateException("load queue full");
        }
        return (set.generation << INDEX_BITS) | set.index;
    }

    /** Queues one layer's copies of {@code p} on the load stream; returns their bytes. */
    private long issue(CopyPlanner planner, int layer, PagePairs p) {
        if (p.count == 0) {
            return 0;
        }
        planner.plan(layer, p.device, p.host, 0, p.count, CopyDirection.HOST_TO_DEVICE, plan);
        plan.issue(runtime, loadStream, batched);
        metrics.add(Metric.H2D_BYTES, plan.totalBytes());
        metrics.add(Metric.H2D_COPIES, batched && runtime.supportsBatchedCopy() ? 1 : plan.runCount());
        return plan.totalBytes();
    }

    /** Forward thread: see {@link HiCacheController#waitLayer}. */
    void waitLayer(long consumer, int layer, boolean draft) {
        if (consumer < 0) {
            return;
        }
        LoadSet set = sets[(int) (consumer & ((1 << INDEX_BITS) - 1))];
        CudaEvent[] events = draft ? set.draftEvents : set.targetEvents;
        if (layer < 0 || layer >= events.length) {
            throw new IllegalArgumentException((draft ? "draft" : "target") + " layer " + layer + " outside [0, "
                + events.length + ")");
        }
        if (set.generation != (consumer >>> INDEX_BITS)) {
            return; // the set was reused, which needs the earlier load to have completed: nothing to wait for
        }
        runtime.streamWaitEvent(computeStream, events[layer]);
    }

    /** Scheduler: drains the loads' acknowledgements (their rounds run on the controller's agreement channel). */
    void poll() {
        LoadSet s;
        while ((s = acks.poll()) != null) {
            for (int i = 0; i < s.opCount; i++) {
                LoadOp op = s.ops[i];
                s.ops[i] = null;
                boolean ok = s.status == 0 && !s.agentError;
                if (s.status != 0 && stickyStatus == 0 && io.hicache.cuda.CudaError.of(s.status).sticky()) {
                    stickyStatus = s.status;
                }
                op.local = ok ? LoadOp.Local.OK : LoadOp.Local.FAILED;
                if (ok) {
                    metrics.add(Metric.LOAD_DURATION_NS, s.completedNs - op.issuedNs);
                    metrics.loadLatencyNs().record(s.completedNs - op.issuedNs);
                }
            }
            if (s.status == 0 && !s.agentError) {
                metrics.loadBandwidth().record(s.bytes, s.completedNs - s.issuedNs);
            }
            s.opCount = 0;
            s.inUse = false;
        }
    }

    /**
     * Complete on every rank. With {@link io.hicache.core.LoadOverlap#SAME_FORWARD} a load whose chain a failed load
     * above it invalidated meanwhile (its anchor was that load's chain) fails instead: its pages are no device hit,
     * and the requests that joined it computed over the failed load's pages. Every rank retires the failed load
     * first (lower sequence number), so every rank decides this alike.
     */
    @Override
    public boolean retireComplete(LoadOp op) {
        if (sameForward && invalidatedAbove(op)) {
            rollBack(op);
            return false;
        }
        attach(op);
        return true;
    }

    /** True when a node of the (re-read) chain no longer loads with {@code op}: a failed load above dropped it. */
    private boolean invalidatedAbove(LoadOp op) {
        refreshChain(op);
        for (RadixNode n : op.nodes) {
            if (n.pendingLoad() != op) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void retireFailed(LoadOp op) {
        rollBack(op);
    }

    /**
     * The group is degraded (a rank failed, the ranks diverged): no load completes everywhere; each rolls back once its
     * own copies are done.
     */
    @Override
    public int retireDegraded(io.hicache.core.AbortReason reason) {
        int retired = 0;
        while (fifo.size() > 0 && !fifo.at(0).unresolved()) {
            rollBack(fifo.pop());
            retired++;
        }
        return retired;
    }

    /**
     * Re-reads the chain from its last node up to the anchor. A match or insert may have split a chain node since
     * loadBack: the split keeps the node as the tail and puts a new node, with the head's host pages, above it, so
     * the walk up from the (unchanged) last node still covers exactly the loaded pages, now in more nodes.
     */
    private void refreshChain(LoadOp op) {
        RadixNode last = op.nodes[op.nodes.length - 1];
        int count = 0;
        for (RadixNode n = last; n != op.anchor; n = n.parent()) {
            count++;
        }
        if (count == op.nodes.length) {
            return; // splits only add nodes
        }
        RadixNode[] nodes = new RadixNode[count];
        int[] starts = new int[count];
        int start = op.pageCount;
        int i = count;
        for (RadixNode n = last; n != op.anchor; n = n.parent()) {
            nodes[--i] = n;
            start -= n.pageCount();
            starts[i] = start;
            if (!sameForward) {
                loading.put(n, op);
            }
        }
        op.nodes = nodes;
        op.nodePageStart = starts;
    }

    private void attach(LoadOp op) {
        refreshChain(op);
        for (int k = 0; k < op.nodes.length; k++) {
            RadixNode n = op.nodes[k];
            if (sameForward) {
                tree.finishLoad(n, op); // every node still loads with op (retireComplete checked)
                continue;
            }
            loading.remove(n);
            if (n.hasDeviceValue()) {
                // an insert adopted the node while the load ran (or another load of a split piece attached it):
                // the tree keeps its pages, this load's are duplicates
                freeDuplicates(op, n, op.nodePageStart[k]);
            } else {
                tree.attachDevice(n, op.devicePages, op.nodePageStart[k]);
            }
        }
        tree.releaseHost(op.nodes[op.nodes.length - 1]);
        tree.unlock(op.anchor);
        op.state = LoadOp.State.LOADED;
        metrics.increment(Metric.LOADS_COMPLETED);
        HiCacheEvents.loadCompleted(op.requestId(), op.pageCount, (long) op.pageCount * pageSize,
            clock.getAsLong() - op.issuedNs, rank);
        if (listener != null) {
            listener.onLoaded(op);
        }
    }

    private void rollBack(LoadOp op) {
        refreshChain(op);
        if (sameForward) {
            // the tree never took this load's pages: invalidate what still holds them, then give them all back once
            for (int k = 0; k < op.nodes.length; k++) {
                RadixNode n = op.nodes[k];
                if (n.pendingLoad() == op) {
                    invalidated.sink = op.allocator;
                    int dropped = tree.failLoad(n, op, invalidated);
                    invalidated.sink = null;
                    metrics.add(Metric.LOAD_INVALIDATED_PAGES, dropped);
                }
            }
            op.allocator.free(op.devicePages, 0, op.pageCount);
        } else {
            for (int k = 0; k < op.nodes.length; k++) {
                RadixNode n = op.nodes[k];
                loading.remove(n);
                if (n.hasDeviceValue()) {
                    freeDuplicates(op, n, op.nodePageStart[k]);
                } else {
                    op.allocator.free(op.devicePages, op.nodePageStart[k], n.pageCount());
                }
            }
        }
        tree.releaseHost(op.nodes[op.nodes.length - 1]);
        tree.unlock(op.anchor);
        op.state = LoadOp.State.FAILED;
        metrics.increment(Metric.LOADS_FAILED);
        HiCacheEvents.loadFailed(op.requestId(), op.pageCount, rank);
        if (listener != null) {
            listener.onLoadFailed(op);
        }
    }

    /** Returns the load's pages for {@code n} that the tree does not hold (an engine may have inserted them). */
    private static void freeDuplicates(LoadOp op, RadixNode n, int start) {
        for (int i = 0; i < n.pageCount(); i++) {
            if (n.devicePage(i) != op.devicePages[start + i]) {
                op.allocator.free(op.devicePages, start + i, 1);
            }
        }
    }

    /** Close: loads still in flight are rolled back (their copies were synchronised by the caller). */
    void abandonAll() {
        for (int q = 0; q < queuedCount; q++) {
            queued[q] = null;
        }
        queuedCount = 0;
        while (fifo.size() > 0) {
            rollBack(fifo.pop());
        }
    }

    private int[] scratch(int n) {
        if (scratchOffsets.length < n) {
            scratchOffsets = new int[Math.max(n, scratchOffsets.length * 2)];
        }
        return scratchOffsets;
    }

    void destroy() {
        // events are destroyed by the controller, which created the list they were recorded in
        try {
            runtime.destroyStream(loadStream);
        } catch (RuntimeException ignored) {
            // poisoned context: nothing to free
        }
    }
}
