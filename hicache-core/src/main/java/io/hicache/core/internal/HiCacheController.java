package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupMode;
import io.hicache.core.BackupState;
import io.hicache.core.DevicePageAllocator;
import io.hicache.core.DevicePageSink;
import io.hicache.core.LoadListener;
import io.hicache.core.ThreadingMode;
import io.hicache.core.WritePolicy;
import io.hicache.core.internal.copy.CopyPlanner;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.core.internal.jfr.AgreementRoundEvent;
import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import org.agrona.ErrorHandler;
import org.agrona.concurrent.AgentRunner;
import org.jctools.queues.SpscArrayQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.function.LongSupplier;

/**
 * The hierarchical cache controller of one CP rank: the radix tree, the host KV pool and its allocator,
 * and the layered backup state machine (reserve → per-layer copies → seal → ack-driven, group-agreed
 * commit, or abort → drain → release).
 *
 * <p><b>Threads.</b> The scheduler thread (the engine's) owns the tree, the allocator and every backup: it
 * calls {@link #reserve}, {@link #beginForward}, {@link #poll}, {@link #abort}, {@link #evictDevice},
 * {@link #tree()} and {@link #close()}; calls from another thread throw {@link IllegalStateException} (the
 * owner is the first thread that calls). The forward thread only uses the {@link ForwardHandle} it was given.
 * The submitter and completion agents run on their own threads ({@link ThreadingMode#DEDICATED}) or are
 * stepped by the caller ({@link ThreadingMode#INVOKER}). Metrics are readable from any thread.
 *
 * <p><b>Visibility.</b> Unlike upstream SGLang, which marks a node backed up when its copy is issued, a
 * node's host value is published only in {@link #poll()}, after the final event of its forward completed
 * on this rank and every rank of the CP group agreed; reserved or partly copied host pages are never a host
 * hit and never host-evictable.
 *
 * <p><b>CP groups.</b> Every rank runs its own controller with identical scheduling: the same scheduler calls in
 * the same order on every rank. Backups and loads retire only through agreed rounds, so the ranks' trees stay
 * identical as long as each rank applies a round's result at the same engine step — which a blocking collective
 * inside {@link RankAgreement#contribute} guarantees. With the non-blocking {@link
 * io.hicache.core.cp.InProcessRankAgreement} stepped from one thread, poll every rank until all of them have
 * applied the round before the next engine step (the simulator does this).
 *
 * <p><b>Failures.</b> Bad arguments throw {@link IllegalArgumentException}, calls in the wrong state
 * {@link IllegalStateException}; neither changes anything. A CUDA error on a copy or event aborts the
 * affected backups (counted, reported to the {@link BackupListener}); a sticky (context-poisoning) error
 * stops the controller: every backup in flight is aborted and later reservations throw. An unexpected exception
 * in an agent aborts the forward or load it was handling ({@link AbortReason#AGENT_ERROR}, counted, logged once
 * per distinct error by {@link AgentErrors}) and the agent goes on. {@link ControllerBuilder#build()} either returns a
 * working controller or releases everything it allocated; after {@link #close()} every call that acts (hooks
 * and {@link #waitLayer} included) throws {@link IllegalStateException} naming "closed" without a CUDA call.
 *
 * <p><b>Slot leases and hand-offs.</b> A forward's {@link ForwardSlot} belongs to its {@link ForwardHandle} from
 * {@link #beginForward} until the handle ended or was invalidated <i>and</i> the forward was acknowledged
 * ({@link SlotPool}). A lease expiry revokes the handle (a volatile generation number on the slot): its next hook
 * throws and lets go. Scheduler → forward thread: the engine's hand-off of the handle; forward thread →
 * submitter: the hook ring (release/acquire); submitter → completion → scheduler: SPSC queues; the few flags
 * written and read concurrently are volatile generation numbers ({@link ForwardSlot}).
 */
public final class HiCacheController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HiCacheController.class);
    /** ALL_LAYERS is a configuration choice, not an event: said once per process however many controllers make it. */
    private static final java.util.concurrent.atomic.AtomicBoolean ALL_LAYERS_LOGGED =
        new java.util.concurrent.atomic.AtomicBoolean();
    /** Reasons for {@link io.hicache.core.LoadOverlap#PREVIOUS_BATCH} already logged: each is logged once. */
    private static final java.util.Set<String> OVERLAP_REASONS_LOGGED =
        java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final CudaRuntime runtime;
    private final CudaStream computeStream;
    private final CudaStream backupStream;
    private final boolean ownsComputeStream;
    private final DeviceKvLayout targetLayout;
    private final DeviceKvLayout draftLayout;
    private final HostKvPool hostPool;
    private final HostKvPool draftPool;
    private final HostPageAllocator allocator;
    private final RadixTree tree;
    private final int pageSize;
    private final int cpSize;
    private final int rank;
    private final OwnerLanes lanes;
    private final RankAgreement agreement;
    private final RankAgreement loadAgreement;
    private final WritePolicy writePolicy;
    private final int hitThreshold;
    private final BackupMode configuredMode;
    private final LongSupplier clock;
    private final long leaseNs;
    private final boolean checkThread;
    private final BackupListener listener;
    private final HiCacheMetrics metrics = new HiCacheMetrics();
    private final int targetLayers;
    private final int draftLayers;

    private final SlotPool slotPool;
    private final HookRing ring;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final SpscArrayQueue<ForwardSlot> acks;
    private final Loader loader;
    private final io.hicache.core.LoadOverlap loadOverlap;
    private final java.util.List<CudaEvent> loaderEvents = new java.util.ArrayList<>();
    private final AgentErrors agentErrors = new AgentErrors(metrics);
    /** Write-back reservations waiting for a forward slot (scheduler-owned). */
    private final java.util.ArrayList<Backup> writeBacksWaiting = new java.util.ArrayList<>();
    private final SubmitterAgent submitter;
    private final CompletionAgent completion;
    private final AgentRunner submitterRunner;
    private final AgentRunner completionRunner;

    // scheduler-owned state
    private Thread owner;
    private long nextSeq;
    private final AgreedFifo<Backup> fifo;
    private final AgreedFifo.Retirer<Backup> backupRetirer = new AgreedFifo.Retirer<>() {
        @Override
        public void retireComplete(Backup b) {
            if (b.invalidated && !b.state.terminal()) {
                release(b, AbortReason.LOAD_FAILED); // never reported complete once its load failed; defensive
            } else if (!b.state.terminal()) {
                // complete everywhere; an abort asked for after this rank reported it complete lost the race, and
                // the bytes are whole, so it commits like on every other rank
                commit(b);
            }
        }

        @Override
        public void retireFailed(Backup b) {
            if (!b.state.terminal()) {
                release(b, b.local == Backup.Local.FAILED && b.abortReason != null ? b.abortReason
                    : AbortReason.RANK_FAILED);
            }
        }

        @Override
        public int retireDegraded() {
            return abortForRankFailure();
        }

        @Override
        public void roundOpened(long round) {
            roundEvent = HiCacheEvents.beginRound();
        }

        @Override
        public void roundClosed(long round, int retired) {
            HiCacheEvents.endRound(roundEvent, cpSize, round, retired, rank);
            roundEvent = null;
        }
    };
    private final HostBudget budget;
    /** The open round's JFR event, or null when none is open or the event is disabled. */
    private AgreementRoundEvent roundEvent;
    private final long targetPageBytes;
    private final long draftPageBytes;
    private int changes;
    private int[] scratchPages = new int[64];
    private RadixNode[] pathScratch = new RadixNode[64];
    private final HostEvictionListener hostEvictionListener = this::onHostEvicted;
    private final WriteBackEvictionListener deviceEvictionListener = new WriteBackEvictionListener();
    private volatile boolean hooksUnavailable;
    private volatile String hooksUnavailableReason;
    private final long[] lastFallbackWarnNs = new long[FallbackReason.values().length];
    private CudaException stickyError;
    private boolean closed;
    private HostTierObserver hostTierObserver;
    /** The lower tier driven by this controller's calls (see {@link #attachTier}), or null. */
    private TierAttachment tier;
    private final java.util.ArrayList<HostLease> openLeases = new java.util.ArrayList<>();
    /** Allocator holder ids of prefetch leases: far above any backup sequence number. */
    private static final long LEASE_HOLDER_BASE = 1L << 62;
    private long leaseSeq;

    HiCacheController(ControllerBuilder b) {
        this.runtime = b.runtime;
        this.targetLayout = b.targetLayout;
        this.draftLayout = b.draftLayout;
        this.pageSize = targetLayout.pageSizeTokens();
        this.cpSize = b.cpSize;
        this.rank = b.cpRank;
        this.lanes = b.lanes;
        this.agreement = b.agreement;
        this.loadAgreement = b.loadAgreement;
        this.writePolicy = b.writePolicy;
        this.hitThreshold = b.hitThreshold > 0 ? b.hitThreshold : (b.writePolicy == WritePolicy.WRITE_THROUGH_SELECTIVE ? 2 : 1);
        this.configuredMode = b.backupMode;
        this.clock = b.clock;
        this.leaseNs = b.leaseNs;
        this.checkThread = b.checkThread;
        this.listener = b.listener;
        this.targetLayers = targetLayout.layerCount();
        this.draftLayers = draftLayout == null ? 0 : draftLayout.layerCount();

        this.fifo = new AgreedFifo<>(agreement, rank);
        this.tree = RadixTree.builder().pageSize(pageSize).devicePolicy(b.deviceEviction).hostPolicy(b.hostEviction).build();

        // Native resources and threads, released in reverse order if any step fails: build() either returns a
        // working controller or leaves nothing behind.
        CudaStream createdCompute = null;
        CudaStream createdBackup = null;
        HostKvPool pool = null;
        HostKvPool dpool = null;
        Loader createdLoader = null;
        AgentRunner startedSubmitter = null;
        AgentRunner startedCompletion = null;
        java.util.ArrayList<CudaEvent> events = new java.util.ArrayList<>();
        try {
            pool = b.hostPoolBuilder(runtime, targetLayout).allocate();
            dpool = draftLayout == null ? null : pool.allocateDraft(draftLayout.shape());
            createdBackup = runtime.createStream(0);
            if (b.computeStream == null) {
                createdCompute = runtime.createStream(0);
            }
            CudaStream compute = createdCompute != null ? createdCompute : b.computeStream;
            int slotCount = b.maxForwardsInFlight;
            ForwardSlot[] slots = new ForwardSlot[slotCount];
            for (int i = 0; i < slotCount; i++) {
                CudaEvent[] te = new CudaEvent[targetLayers];
                for (int l = 0; l < targetLayers; l++) {
                    te[l] = event(events);
                }
                CudaEvent[] de = new CudaEvent[draftLayers];
                for (int l = 0; l < draftLayers; l++) {
                    de[l] = event(events);
                }
                CudaEvent end = event(events);
                CudaEvent fin = event(events);
                CudaEvent[] copied = new CudaEvent[targetLayers + draftLayers];
                for (int l = 0; l < copied.length; l++) {
                    copied[l] = event(events);
                }
                slots[i] = new ForwardSlot(i, te, de, end, fin, copied);
            }
            HookRing hookRing = new HookRing(b.hookRingCapacity > 0 ? b.hookRingCapacity
                : HookRing.capacityFor(slotCount, targetLayers + draftLayers + 1));
            int tl = targetLayers;
            int dl = draftLayers;
            SlotPool pool0 = new SlotPool(slots, s -> new ForwardHandle(s, runtime, compute, hookRing, tl, dl));
            int qcap = Math.max(4, slotCount * 2);
            SpscArrayQueue<ForwardSlot> cmds = new SpscArrayQueue<>(qcap);
            SpscArrayQueue<ForwardSlot> sealed = new SpscArrayQueue<>(qcap);
            SpscArrayQueue<ForwardSlot> ackQueue = new SpscArrayQueue<>(qcap);
            CopyPlanner tp = new CopyPlanner(targetLayout, pool, b.coalesce);
            CopyPlanner dp = draftLayout == null ? null : new CopyPlanner(draftLayout, dpool, b.coalesce);
            SubmitterAgent sub = new SubmitterAgent(runtime, createdBackup, tp, dp, b.batchedCopies, targetLayers,
                draftLayers, hookRing, slots, cmds, sealed, metrics, agentErrors);
            SpscArrayQueue<LoadSet> loadsIssued = new SpscArrayQueue<>(8);
            SpscArrayQueue<LoadSet> loadAcks = new SpscArrayQueue<>(8);
            CompletionAgent comp = new CompletionAgent(runtime, sealed, ackQueue, loadsIssued, loadAcks, metrics,
                agentErrors, clock, qcap);
            createdLoader = new Loader(runtime, compute, tree, new CopyPlanner(targetLayout, pool, b.coalesce),
                draftLayout == null ? null : new CopyPlanner(draftLayout, dpool, b.coalesce), b.batchedCopies,
                b.loadAgreement, rank, clock, metrics, agentErrors, b.loadListener, b.loadThresholdTokens, targetLayers,
                draftLayers, loadsIssued, loadAcks, loaderEvents, b.loadOverlap == io.hicache.core.LoadOverlap.SAME_FORWARD);
            if (b.threadingMode == ThreadingMode.DEDICATED) {
                ErrorHandler errors = t -> agentErrors.record("agent runner", "a duty cycle", t);
                startedSubmitter = new AgentRunner(b.idleStrategySupplier.get(), errors, null, sub);
                AgentRunner.startOnThread(startedSubmitter);
                startedCompletion = new AgentRunner(b.idleStrategySupplier.get(), errors, null, comp);
                AgentRunner.startOnThread(startedCompletion);
            }
            this.slotPool = pool0;
            this.ring = hookRing;
            this.commands = cmds;
            this.acks = ackQueue;
            this.submitter = sub;
            this.completion = comp;
        } catch (RuntimeException | Error e) {
            AgentRunner sr = startedSubmitter;
            AgentRunner cr = startedCompletion;
            if (sr != null) {
                quietly(sr::close);
            }
            if (cr != null) {
                quietly(cr::close);
            }
            CudaStream cc = createdCompute;
            CudaStream cb = createdBackup;
            Loader ld = createdLoader;
            if (cb != null) {
                quietly(() -> runtime.synchronizeStream(cb));
            }
            if (ld != null) {
                quietly(() -> runtime.synchronizeStream(ld.loadStream()));
            }
            for (CudaEvent ev : events) {
                quietly(() -> runtime.destroyEvent(ev));
            }
            for (CudaEvent ev : loaderEvents) {
                quietly(() -> runtime.destroyEvent(ev));
            }
            if (ld != null) {
                ld.destroy();
            }
            if (cc != null) {
                quietly(() -> runtime.destroyStream(cc));
            }
            if (cb != null) {
                quietly(() -> runtime.destroyStream(cb));
            }
            HostKvPool dp0 = dpool;
            HostKvPool p0 = pool;
            if (dp0 != null) {
                quietly(dp0::close);
            }
            if (p0 != null) {
                quietly(p0::close);
            }
            throw e;
        }
        this.hostPool = pool;
        this.draftPool = dpool;
        this.backupStream = createdBackup;
        this.ownsComputeStream = createdCompute != null;
        this.computeStream = createdCompute != null ? createdCompute : b.computeStream;
        this.allocator = new HostPageAllocator(hostPool.pageCount());
        this.budget = new HostBudget(lanes, cpSize, hostPool.pageCount(), metrics);
        this.targetPageBytes = hostPool.bytesPerPageAllLayers();
        this.draftPageBytes = draftPool == null ? 0 : draftPool.bytesPerPageAllLayers();
        this.loader = createdLoader;
        this.submitterRunner = startedSubmitter;
        this.completionRunner = startedCompletion;
        this.loadOverlap = b.loadOverlap;
        if (b.loadOverlap == io.hicache.core.LoadOverlap.PREVIOUS_BATCH && OVERLAP_REASONS_LOGGED.add(b.loadOverlapReason)) {
            LOG.warn("HiCache loads overlap with the previous batch, not the forward that uses them ({}): a host hit"
                + " waits for the whole load and its agreement before its request runs", b.loadOverlapReason);
        }
        if (configuredMode == BackupMode.ALL_LAYERS && ALL_LAYERS_LOGGED.compareAndSet(false, true)) {
            LOG.warn("HiCache backup mode ALL_LAYERS configured: every layer is copied after the forward, "
                + "so copies no longer overlap with compute (said once per process)");
        }
    }

    private CudaEvent event(java.util.List<CudaEvent> created) {
        CudaEvent e = runtime.createEvent(true);
        created.add(e);
        return e;
    }

    /** A builder; see {@link ControllerBuilder} for the required parts. */
    public static ControllerBuilder builder() {
        return new ControllerBuilder();
    }

    // ------------------------------------------------------------------ accessors

    /** The radix tree (scheduler thread only). Use it to {@code match} and {@code insert}. */
    public RadixTree tree() {
        checkOwner();
        return tree;
    }

    /**
     * Matches {@code tokens[from, from + len)} against the tree like {@code tree().match} and counts the device hit in
     * {@link Metric#DEVICE_HIT_TOKENS}. Scheduler thread; allocation-free.
     *
     * @return {@code out}, filled with the device hit and the host-only extension
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out) {
        checkOwner();
        tree.match(tokens, from, len, out);
        metrics.add(Metric.DEVICE_HIT_TOKENS, out.deviceTokenCount());
        if (tier != null) {
            tier.onMatch(out);
        }
        return out;
    }

    /** Counters; any thread. */
    public HiCacheMetrics metrics() {
        return metrics;
    }

    /** The target host pool (scheduler thread; for reading host KV in tests and storage tiers). */
    public HostKvPool hostPool() {
        checkOpen("hostPool");
        return hostPool;
    }

    /** The draft host pool, or null. */
    public HostKvPool draftHostPool() {
        checkOpen("draftHostPool");
        return draftPool;
    }

    /** The host page allocator (scheduler thread). */
    public HostPageAllocator allocator() {
        return allocator;
    }

    /** The backup stream copies are queued on. */
    public CudaStream backupStream() {
        return backupStream;
    }

    /** The compute stream hooks record their events on. */
    public CudaStream computeStream() {
        return computeStream;
    }

    /** This rank in its CP group. */
    public int rank() {
        return rank;
    }

    /** Tokens per page. Any thread. */
    public int pageSize() {
        return pageSize;
    }

    /** Target layers per forward. */
    public int targetLayers() {
        return targetLayers;
    }

    /** Draft layers per forward (0 without a draft layout). */
    public int draftLayers() {
        return draftLayers;
    }

    /** Host pages reserved or committed in group budget units (see {@link #reserve}). Scheduler thread. */
    public long hostBudgetUsedPages() {
        return budget.usedPages();
    }

    /** Host pages the group budget allows. */
    public long hostBudgetCapacityPages() {
        return budget.capacityPages();
    }

    /** Backups not yet agreed and retired (reserved, copying, sealed, or aborted awaiting agreement). */
    public int backupsInFlight() {
        return fifo.size();
    }

    /** The sticky CUDA error that stopped the controller, or null. */
    public CudaException stickyError() {
        return stickyError;
    }

    /** The submitter agent, for callers that step agents themselves ({@link ThreadingMode#INVOKER}). */
    public SubmitterAgent submitterAgent() {
        return submitter;
    }

    /** The completion agent, for callers that step agents themselves ({@link ThreadingMode#INVOKER}). */
    public CompletionAgent completionAgent() {
        return completion;
    }

    /**
     * Runs one duty cycle of the submitter, then of the completion agent ({@link ThreadingMode#INVOKER} only).
     *
     * @return work done
     */
    public int doAgentWork() {
        if (submitterRunner != null) {
            throw new IllegalStateException("doAgentWork in DEDICATED threading mode: the agents run on their own threads");
        }
        if (closed) {
            throw new IllegalStateException("doAgentWork on a closed controller");
        }
        try {
            return submitter.doWork() + completion.doWork();
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------ reserve

    /**
     * Reserves a backup of {@code node}'s pages: allocates host pages for the positions this rank owns,
     * marks the node pending (a device hit only: not a host hit, not evictable) and locks its device pages.
     *
     * <p>Host room is accounted in group budget units: a node costs, on every rank, the largest number of its
     * positions any rank owns, so every rank of the group makes the same decision and evicts the same nodes
     * without a collective. With no room, one host eviction pass frees least-recently-used host-only leaves;
     * if there is still no room the call returns null and counts {@link Metric#RESERVE_NO_ROOM}.
     *
     * @param withDraft whether the backup also carries the draft/MTP KV (needs a draft layout)
     * @return the backup, or null when the host pool has no room
     * @throws IllegalStateException if the node is the root, detached, device-evicted, already backed up or
     *     pending, or its parent is neither the root nor backed up (contiguity); or the controller is closed or stopped
     * @throws IllegalArgumentException if {@code node} is null, or {@code withDraft} without a draft layout
     */
    public Backup reserve(RadixNode node, boolean withDraft) {
        checkUsable();
        if (node == null) {
            throw new IllegalArgumentException("node must not be null");
        }
        if (withDraft && draftLayout == null) {
            throw new IllegalArgumentException("reserve(withDraft=true) but no draft KV layout is configured");
        }
        if (node.isRoot() || !node.isAttached()) {
            throw new IllegalStateException("cannot back up " + node + ": it is the root or no longer in the tree");
        }
        if (node.pending() != null) {
            throw new IllegalStateException("cannot reserve " + node + ": it already has a pending backup");
        }
        if (node.isHostResident()) {
            throw new IllegalStateException("cannot reserve " + node + ": it is already backed up");
        }
        if (!tree.canBackUp(node)) {
            throw new IllegalStateException("cannot reserve " + node + ": it holds no device pages or its parent is "
                + "neither the root nor backed up (write-through contiguity)");
        }
        int pages = node.pageCount();
        int startPage = 0;
        for (RadixNode p = node.parent(); p != null && !p.isRoot(); p = p.parent()) {
            startPage += p.pageCount();
        }
        int totalPages = startPage + pages;
        int cost = budget.costOf(startPage, pages, totalPages);
        if (!makeRoom(cost)) {
            metrics.increment(Metric.RESERVE_NO_ROOM);
            return null;
        }
        int[] offsets = new int[pages];
        int owned = lanes.ownedOffsets(rank, startPage, pages, totalPages, cpSize, offsets);
        int[] ownedIdx = owned == pages ? offsets : java.util.Arrays.copyOf(offsets, owned);
        int[] hostPages = new int[owned];
        long seq = nextSeq;
        allocateBudgeted(owned, hostPages, seq);
        int[] devicePages = new int[pages];
        node.copyDevicePages(devicePages, 0);
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        HostPages value = new HostPages(hostPages, lane, withDraft, cpSize == 1 ? null : this);
        long now = clock.getAsLong();
        Backup b = new Backup(this, seq, node, startPage, devicePages, ownedIdx, owned, hostPages, cost, value, withDraft,
            leaseNs > 0 ? now + leaseNs : Long.MAX_VALUE);
        tree.markPending(node, b);
        tree.lock(node);
        nextSeq++;
        budget.take(cost);
        fifo.add(b);
        metrics.increment(Metric.BACKUPS_RESERVED);
        return b;
    }

    /**
     * Applies the write policy to the path ending at {@code node} (normally the node {@code insert} ended on):
     * from the top, every node that is not backed up, whose hit count reached the policy's threshold and
     * whose parent is backed up or the root, is reserved. Stops at the first node that does not qualify or
     * when the host pool has no room. Does nothing under {@link WritePolicy#WRITE_BACK}.
     *
     * @param out receives the backups reserved, in path order (top first)
     * @return how many were reserved
     */
    public int reserveByPolicy(RadixNode node, boolean withDraft, List<Backup> out) {
        checkUsable();
        if (node == null || out == null) {
            throw new IllegalArgumentException("node and out must not be null");
        }
        if (node.isRoot()) {
            return 0;
        }
        int depth = 0;
        for (RadixNode p = node; p != null && !p.isRoot(); p = p.parent()) {
            if (depth == pathScratch.length) {
                pathScratch = java.util.Arrays.copyOf(pathScratch, depth * 2);
            }
            pathScratch[depth++] = p;
        }
        if (writePolicy == WritePolicy.WRITE_BACK) {
            skipPath(depth - 1, WritePolicy.SkipReason.WRITE_BACK);
            return 0;
        }
        int reserved = 0;
        for (int i = depth - 1; i >= 0; i--) {
            RadixNode n = pathScratch[i];
            pathScratch[i] = null;
            if (n.isBackedUp()) {
                continue;
            }
            WritePolicy.SkipReason skip = null;
            if (!n.hasDeviceValue()) {
                skip = WritePolicy.SkipReason.NOT_ON_DEVICE;
            } else if (n.hitCount() < hitThreshold) {
                skip = WritePolicy.SkipReason.BELOW_HIT_THRESHOLD;
            } else if (!tree.canBackUp(n)) {
                skip = WritePolicy.SkipReason.ANCESTOR_SKIPPED; // its parent is neither the root nor backed up
            } else {
                Backup b = reserve(n, withDraft);
                if (b == null) {
                    skip = WritePolicy.SkipReason.NO_ROOM;
                } else {
                    out.add(b);
                    reserved++;
                }
            }
            if (skip != null) {
                metrics.countSkipped(skip, 1);
                skipPath(i - 1, WritePolicy.SkipReason.ANCESTOR_SKIPPED);
                break;
            }
        }
        return reserved;
    }

    /** Counts the nodes {@code pathScratch[0..upTo]} not backed up under {@code reason} and clears the scratch. */
    private void skipPath(int upTo, WritePolicy.SkipReason reason) {
        int skipped = 0;
        for (int j = upTo; j >= 0; j--) {
            if (!pathScratch[j].isBackedUp()) {
                skipped++;
            }
            pathScratch[j] = null;
        }
        if (skipped > 0) {
            metrics.countSkipped(reason, skipped);
        }
    }

    // ------------------------------------------------------------------ forward

    /**
     * Starts the backups' copies for one forward and returns the hooks for the forward thread. Each backup
     * must be {@link BackupState#RESERVED}; it becomes {@link BackupState#COPYING}. An empty list gives a
     * handle whose hooks only validate.
     *
     * @throws IllegalStateException if a backup is not RESERVED or belongs to another controller, or more than
     *     the configured number of forwards are in flight
     */
    public ForwardHandle beginForward(List<Backup> backups) {
        checkUsable();
        int n = backups.size();
        for (int i = 0; i < n; i++) {
            Backup b = backups.get(i);
            if (b == null || b.state != BackupState.RESERVED || !owns(b)) {
                throw new IllegalStateException("beginForward: " + b + " is not a RESERVED backup of this controller");
            }
            for (int j = 0; j < i; j++) {
                if (backups.get(j) == b) {
                    throw new IllegalStateException("beginForward: " + b + " is listed twice");
                }
            }
        }
        if (n == 0) {
            return slotPool.emptyHandle(0);
        }
        ForwardSlot slot = takeSlot();
        boolean allLayers = configuredMode == BackupMode.ALL_LAYERS || hooksUnavailable;
        slot.allLayers = allLayers;
        for (int i = 0; i < n; i++) {
            Backup b = backups.get(i);
            b.slot = slot;
            b.state = BackupState.COPYING;
            slot.add(b);
        }
        if (allLayers) {
            countFallback(configuredMode == BackupMode.ALL_LAYERS ? FallbackReason.CONFIGURED
                : FallbackReason.HOOKS_UNAVAILABLE);
        }
        ForwardHandle handle = slot.handle;
        handle.begin(slot.generation);
        return handle;
    }

    /**
     * Declares that the engine cannot call per-layer hooks from now on (e.g. it runs the forward as a CUDA
     * graph): later forwards copy every layer after the forward. Logs a rate-limited WARN naming the reason
     * and counts a fallback entry for every such forward. Any thread.
     */
    public void declareHooksUnavailable(String reason) {
        if (reason == null || reason.isBlank()) {
            throw new IllegalArgumentException("declareHooksUnavailable needs a reason");
        }
        hooksUnavailableReason = reason;
        hooksUnavailable = true;
        LOG.warn("HiCache falls back to all-layer backup: per-layer hooks unavailable ({})", reason);
    }

    private void countFallback(FallbackReason reason) {
        metrics.countFallback(reason);
        HiCacheEvents.fallback(reason, reason == FallbackReason.HOOKS_UNAVAILABLE ? hooksUnavailableReason : null, rank);
        if (reason == FallbackReason.CONFIGURED) {
            return; // a configuration, said once per process when the controller was built; counted above
        }
        long now = System.nanoTime();
        int i = reason.ordinal();
        if (lastFallbackWarnNs[i] == 0 || now - lastFallbackWarnNs[i] > 10_000_000_000L) {
            lastFallbackWarnNs[i] = now;
            LOG.warn("HiCache all-layer backup for a forward: {}{} ({} such forwards so far)", reason,
                reason == FallbackReason.HOOKS_UNAVAILABLE ? " - " + hooksUnavailableReason : "",
                metrics.fallbacksBy(reason));
        }
    }

    private ForwardSlot takeSlot() {
        ForwardSlot slot = slotPool.take();
        if (slot == null) {
            throw new IllegalStateException("more than " + slotPool.capacity() + " forwards with backups in flight ("
                + slotPool.retiring() + " acknowledged but still held by a handle that has not ended): call poll() "
                + "to retire finished ones, end their forwards, or raise maxForwardsInFlight");
        }
        return slot;
    }

    // ------------------------------------------------------------------ poll

    /**
     * Scheduler duty cycle: drains completed forwards, aborts backups whose lease expired, runs one round of
     * rank agreement and commits (publishes host value and lane description on the node, releases the device
     * lock) or aborts what the group agreed on. Allocation-free in steady state.
     *
     * @return number of backups committed or aborted by this call
     */
    public int poll() {
        checkOwner();
        if (closed) {
            throw new IllegalStateException("poll on a closed controller");
        }
        changes = 0;
        ForwardSlot s;
        while ((s = acks.poll()) != null) {
            onAck(s);
        }
        expireLeases();
        issueWriteBacks();
        agree();
        int loads = loader.poll();
        if (tier != null && stickyError == null) {
            tier.poll();
        }
        return changes + loads;
    }

    private void onAck(ForwardSlot slot) {
        int status = slot.status;
        if (slot.agentError) {
            LOG.warn("HiCache backup of a forward aborted after an agent error (counted in AGENT_ERRORS)");
        } else if (status != 0) {
            LOG.warn("HiCache backup copies failed: {} ({}) in {}", runtime.errorName(status), status,
                slot.submitErrorCall != null ? slot.submitErrorCall : "cudaEventQuery");
            if (CudaError.of(status).sticky() && stickyError == null) {
                stickyError = new CudaException(status, runtime.errorName(status), runtime.errorString(status),
                    slot.submitErrorCall != null ? slot.submitErrorCall : "cudaEventQuery");
            }
        }
        if (slot.endNs > 0 && slot.completedNs > slot.endNs) {
            metrics.add(Metric.EXPOSED_BACKUP_NS, slot.completedNs - slot.endNs);
        }
        for (int i = 0; i < slot.backupCount; i++) {
            Backup b = slot.backups[i];
            b.forwardEndNs = slot.endNs;
            b.slot = null;
            if (b.state.terminal()) {
                continue; // already released when an earlier ack of this poll stopped the controller (sticky error)
            } else if (b.state == BackupState.DRAINING) {
                fail(b, b.abortReason);
            } else if (slot.agentError) {
                fail(b, AbortReason.AGENT_ERROR);
            } else if (status != 0) {
                fail(b, AbortReason.CUDA_ERROR);
            } else if (slot.cancelled) {
                fail(b, AbortReason.LEASE_EXPIRED);
            } else if (slot.missingTarget) {
                fail(b, AbortReason.TARGET_LAYER_MISSING);
            } else if (slot.missingDraft && b.withDraft) {
                fail(b, AbortReason.DRAFT_LAYER_MISSING);
            } else {
                b.state = BackupState.SEALED;
                b.local = Backup.Local.OK;
            }
        }
        slotPool.onAcked(slot);
        if (stickyError != null) {
            stopAfterStickyError();
        }
    }

    private void expireLeases() {
        if (leaseNs <= 0 || fifo.size() == 0) {
            return;
        }
        long now = clock.getAsLong();
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (b.leaseDeadlineNs > now) {
                break;
            }
            if (b.state == BackupState.RESERVED) {
                fail(b, AbortReason.LEASE_EXPIRED);
            } else if ((b.state == BackupState.COPYING || b.state == BackupState.DRAINING) && b.slot != null
                && !b.cancelSent) {
                // the forward was not sealed in time: revoke its lease (its handle throws at its next hook) and
                // have the submitter seal it after the copies already queued
                ForwardSlot slot = b.slot;
                for (int j = 0; j < slot.backupCount; j++) {
                    Backup sb = slot.backups[j];
                    sb.cancelSent = true;
                    if (!sb.state.terminal()) {
                        sb.state = BackupState.DRAINING;
                        if (sb.abortReason == null) {
                            sb.abortReason = AbortReason.LEASE_EXPIRED;
                        }
                    }
                }
                slot.command = ForwardSlot.CMD_CANCEL;
                slotPool.revoke(slot);
                if (!commands.offer(slot)) {
                    throw new IllegalStateException("submitter command queue full");
                }
            }
        }
    }

    /**
     * Runs agreement rounds while their results are available at once (always for a group of one; with a blocking
     * collective every round) and they retire something. Retiring depends only on agreed values, so every rank
     * commits and releases the same backups in the same round: a backup aborted on a rank keeps its pending mark,
     * device lock and host pages until then, and the ranks' trees never diverge.
     */
    private void agree() {
        for (int rounds = 0; rounds < 64 && fifo.size() > 0; rounds++) {
            if (fifo.runRound(nextSeq, backupRetirer) <= 0) {
                return;
            }
        }
    }

    /**
     * A degraded round (a rank of the group was declared failed, see {@link RankAgreement#tryResult}): no backup in
     * flight can be whole on every rank, so each aborts with {@link AbortReason#RANK_FAILED} and is released once its
     * own copies have drained. Every later round is degraded too, so nothing commits until the group restarts.
     */
    private int abortForRankFailure() {
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (b.state == BackupState.RESERVED || b.state == BackupState.SEALED && b.slot == null) {
                fail(b, AbortReason.RANK_FAILED);
            } else if (b.state == BackupState.COPYING || b.state == BackupState.SEALED) {
                b.state = BackupState.DRAINING; // released when its forward is acknowledged
                if (b.abortReason == null) {
                    b.abortReason = AbortReason.RANK_FAILED;
                }
            }
        }
        int retired = 0;
        while (fifo.size() > 0 && fifo.at(0).local != Backup.Local.UNRESOLVED) {
            Backup b = fifo.pop();
            retired++;
            if (!b.state.terminal()) {
                release(b, b.abortReason != null ? b.abortReason : AbortReason.RANK_FAILED);
            }
        }
        return retired;
    }

    /** Marks a backup failed on this rank; it is released when the group agrees (see {@link #agree()}). */
    private void fail(Backup b, AbortReason reason) {
        b.state = BackupState.DRAINING;
        if (b.abortReason == null) {
            b.abortReason = reason;
        }
        b.local = Backup.Local.FAILED;
    }

    private void commit(Backup b) {
        if (b.fragmentCount == 1) {
            tree.commitHost(b.node, b, b.hostValue);
        } else {
            HostValue rest = b.hostValue;
            for (int i = 0; i < b.fragmentCount - 1; i++) {
                RadixNode frag = b.fragments[i];
                tree.commitHost(frag, b, rest.head(frag.pageCount()));
                rest = rest.tail(frag.pageCount());
            }
            tree.commitHost(b.fragments[b.fragmentCount - 1], b, rest);
        }
        tree.unlock(b.node);
        b.state = BackupState.COMMITTED;
        metrics.increment(Metric.BACKUPS_COMMITTED);
        long latencyNs = clock.getAsLong() - b.forwardEndNs;
        metrics.commitLatencyNs().record(latencyNs);
        HiCacheEvents.backupCommitted(b.pageCount, b.ownedCount * (targetPageBytes + (b.withDraft ? draftPageBytes : 0)),
            targetLayers, b.withDraft ? draftLayers : 0, latencyNs, rank);
        changes++;
        if (listener != null) {
            listener.onCommitted(b);
        }
        if (tier != null) {
            tier.onCommitted(b);
        }
    }

    /** Releases an aborted backup whose copies have drained: pending cleared, lock released, pages freed. */
    private void release(Backup b, AbortReason reason) {
        for (int i = 0; i < b.fragmentCount; i++) {
            if (!b.fragments[i].isInvalidated()) {
                tree.abortPending(b.fragments[i], b);
            }
        }
        tree.unlock(b.node);
        if (b.heldCount > 0) {
            // device pages of fragments a failed load removed: their copies have drained, the engine gets them now
            b.heldSink.free(b.heldPages, 0, b.heldCount);
            b.heldCount = 0;
        }
        if (b.ownedCount > 0) {
            allocator.free(b.hostPages, 0, b.ownedCount);
            retireHostPages(b.hostPages, 0, b.ownedCount);
        }
        budget.give(b.budgetPages);
        b.abortReason = reason;
        b.state = BackupState.ABORTED;
        b.local = Backup.Local.FAILED;
        metrics.countAbort(reason);
        HiCacheEvents.backupAborted(reason, b.pageCount, rank);
        changes++;
        if (listener != null) {
            listener.onAborted(b, reason);
        }
    }

    // ------------------------------------------------------------------ abort

    /**
     * Aborts a backup from any non-terminal state; it is never published. Its pages and device lock are held
     * until its copies have drained and the group agreed on the abort (a later {@link #poll()} releases them).
     * In a CP group there is one race: if this rank already reported the backup complete in an agreement round
     * that is still open, that round may commit it on every rank (its bytes are whole); the listener then sees
     * {@code onCommitted}. A single rank never has a round open between polls, so there an abort always wins.
     *
     * @return true if the abort was recorded by this call; false if the backup had already committed or aborted
     * @throws IllegalArgumentException if the backup or reason is null, or the backup is not this controller's
     */
    public boolean abort(Backup backup, AbortReason reason) {
        checkOwner();
        if (closed) {
            throw new IllegalStateException("abort on a closed controller");
        }
        if (backup == null || reason == null) {
            throw new IllegalArgumentException("backup and reason must not be null");
        }
        if (!owns(backup)) {
            throw new IllegalArgumentException(backup + " does not belong to this controller");
        }
        return markAborted(backup, reason);
    }

    /**
     * A failed load invalidated the node of {@code b} (it was computed in the forward that loaded its prefix): the
     * backup aborts with {@link AbortReason#LOAD_FAILED} like an engine's abort, and is released once its copies
     * drained and the group agreed. Called by the tree from {@code failLoad} through {@link Backup#onInvalidated}.
     */
    void dependencyFailed(Backup b) {
        markAborted(b, AbortReason.LOAD_FAILED);
    }

    private boolean markAborted(Backup backup, AbortReason reason) {
        switch (backup.state) {
            case COMMITTED, ABORTED, DRAINING -> {
                return false;
            }
            case RESERVED -> fail(backup, reason);
            case COPYING -> {
                backup.state = BackupState.DRAINING;
                backup.abortReason = reason;
            }
            case SEALED -> {
                if (backup.slot == null) {
                    fail(backup, reason); // copies done: released when the group agrees
                } else {
                    backup.state = BackupState.DRAINING;
                    backup.abortReason = reason;
                }
            }
            default -> throw new IllegalStateException("unknown state " + backup.state);
        }
        return true;
    }

    private boolean owns(Backup b) {
        return b != null && b.owner == this;
    }

    // ------------------------------------------------------------------ load-back

    /**
     * Queues the load of the host-only chain of {@code match} (the pages after its device prefix) back to the
     * device. Skipped (null) when the host hit is below the load threshold or above {@code memoryQuotaTokens};
     * refused (null, counted) when {@code allocator} has no pages even after one device eviction. Otherwise the
     * device pages are allocated now (all or nothing), the host pages are protected from host eviction and the
     * device prefix is locked, and the load is issued by the next {@link #startLoading()}. With
     * {@link io.hicache.core.LoadOverlap#SAME_FORWARD} the chain's nodes are LOADING device nodes from now on
     * (see {@link io.hicache.radix.RadixTree#beginLoad}): the request computes on them in its forward, waiting per
     * layer, and inserts go below them; when the load is agreed the tree takes the pages, and if it fails the
     * chain is host-only again, whatever was inserted below it is dropped and every page returns to
     * {@code allocator} once. With {@link io.hicache.core.LoadOverlap#PREVIOUS_BATCH} the chain's nodes stay
     * host-only until the load is acknowledged on every rank; a chain node another load is bringing back ends the
     * chain, and a chain node that an {@code insert} adopts meanwhile keeps the inserted pages.
     *
     * @param requestId the engine's id of the request, reported back through the {@link LoadListener}
     * @return the load, or null when nothing is loaded
     */
    public LoadOp loadBack(MatchResult match, long requestId, int memoryQuotaTokens, DevicePageAllocator allocator) {
        checkUsable();
        if (match == null || allocator == null) {
            throw new IllegalArgumentException("match and allocator must not be null");
        }
        if (memoryQuotaTokens < 0) {
            throw new IllegalArgumentException("memoryQuotaTokens " + memoryQuotaTokens + " must be >= 0");
        }
        return loader.loadBack(match, requestId, memoryQuotaTokens, allocator, this);
    }

    /**
     * Issues every queued load: records a start event on the compute stream, makes the load stream wait for it,
     * then per layer queues the coalesced host-to-device copies (target and, where backed up, draft) and records
     * that layer's event. Uses the next of three event sets; reusing one whose earlier load has not been
     * acknowledged throws {@link IllegalStateException} rather than waiting.
     *
     * @return the consumer token for {@link #waitLayer}, or -1 when nothing was queued
     */
    public long startLoading() {
        checkUsable();
        return loader.startLoading();
    }

    /**
     * Forward thread, before attention of target layer {@code layer}: makes the compute stream wait (on the GPU,
     * never the CPU) for that layer's loads. A no-op for token -1 or a load long finished.
     */
    public void waitLayer(long consumer, int layer) {
        checkHooksOpen("waitLayer");
        loader.waitLayer(consumer, layer, false);
    }

    /** Forward thread: as {@link #waitLayer} for draft layer {@code layer}. */
    public void waitDraftLayer(long consumer, int layer) {
        checkHooksOpen("waitDraftLayer");
        loader.waitLayer(consumer, layer, true);
    }

    /**
     * The load a request that matched {@code match} must wait for to use its device prefix beyond
     * {@link MatchResult#readyPageCount()}: the one filling {@link MatchResult#loadingNode()}; counted in
     * {@link Metric#LOAD_JOINS}. Null when the match reaches no loading node.
     */
    public LoadOp joinLoad(MatchResult match) {
        checkUsable();
        if (match == null) {
            throw new IllegalArgumentException("match must not be null");
        }
        return loader.joinLoad(match);
    }

    /** When loads may be used: in the forward that needs them, or a batch later. */
    public io.hicache.core.LoadOverlap loadOverlap() {
        return loadOverlap;
    }

    /** The stream loads are copied on. */
    public CudaStream loadStream() {
        return loader.loadStream();
    }

    /** Loads queued, issued or awaiting agreement. */
    public int loadsInFlight() {
        return loader.inFlight();
    }

    // ------------------------------------------------------------------ eviction

    /**
     * Evicts at least {@code pages} device pages if the tree can (policy order, leaves only, never locked or
     * pending nodes); evicted pages go to {@code sink}. Under {@link WritePolicy#WRITE_BACK}, a leaf without a
     * host copy is not evicted: it is reserved and copied (all layers, the forward being over) and becomes
     * evictable once committed.
     *
     * @return device pages evicted
     */
    public int evictDevice(int pages, DevicePageSink sink) {
        checkUsable();
        if (pages < 0 || sink == null) {
            throw new IllegalArgumentException("evictDevice(" + pages + ", " + sink + "): pages must be >= 0 and sink non-null");
        }
        deviceEvictionListener.sink = sink;
        int evicted = tree.evictDevice(pages, deviceEvictionListener);
        deviceEvictionListener.sink = null;
        issueWriteBacks();
        return evicted;
    }

    /**
     * Starts the copies of the write-back reservations waiting for a forward slot, all in one slot. Whether a slot is
     * free depends on this rank's acks, so the reservations themselves never do (that would let the ranks' trees
     * diverge): they wait, RESERVED, and a later {@link #poll()} issues them.
     */
    private void issueWriteBacks() {
        if (writeBacksWaiting.isEmpty()) {
            return;
        }
        ForwardSlot slot = slotPool.take();
        if (slot == null) {
            return;
        }
        slot.allLayers = true;
        slot.writeBack = true;
        slot.releasedGeneration = slot.generation; // no handle: the scheduler ends it
        for (int i = 0; i < writeBacksWaiting.size(); i++) {
            Backup b = writeBacksWaiting.get(i);
            if (b.state == BackupState.RESERVED) {
                b.slot = slot;
                b.state = BackupState.COPYING;
                slot.add(b);
            }
        }
        writeBacksWaiting.clear();
        runtime.recordEvent(slot.endEvent, computeStream);
        slot.command = ForwardSlot.CMD_COPY_ALL_NOW;
        countFallback(FallbackReason.WRITE_BACK);
        if (!commands.offer(slot)) {
            throw new IllegalStateException("submitter command queue full");
        }
    }

    /**
     * Evicts at least {@code pages} host pages if the tree can (host-only leaves in policy order, never protected
     * ones), freeing them and their budget; the {@link HostTierObserver} sees each first.
     *
     * @return host pages evicted
     */
    public int evictHost(int pages) {
        checkUsable();
        if (pages < 0) {
            throw new IllegalArgumentException("evictHost(" + pages + "): pages must be >= 0");
        }
        int evicted = 0;
        int step;
        while (evicted < pages && (step = tree.evictHost(pages - evicted, hostEvictionListener)) > 0) {
            evicted += step; // removing a leaf may expose its parent
        }
        return evicted;
    }

    private final class WriteBackEvictionListener implements DeviceEvictionListener {
        RadixNode[] writeBackPath = new RadixNode[16];
        DevicePageSink sink;

        @Override
        public boolean mayEvict(RadixNode node) {
            if (writePolicy != WritePolicy.WRITE_BACK || node.isBackedUp()) {
                return true;
            }
            // Contiguity: a leaf whose ancestors are not backed up yet is written back together with them,
            // top-down (each reservation makes the next node's parent pending, i.e. backed up).
            int depth = 0;
            for (RadixNode p = node; p != null && !p.isRoot() && !p.isBackedUp(); p = p.parent()) {
                if (depth == writeBackPath.length) {
                    writeBackPath = java.util.Arrays.copyOf(writeBackPath, depth * 2);
                }
                writeBackPath[depth++] = p;
            }
            boolean ok = true;
            for (int i = depth - 1; i >= 0; i--) {
                RadixNode n = writeBackPath[i];
                writeBackPath[i] = null;
                ok = ok && n.pending() == null && tree.canBackUp(n) && writeBack(n);
            }
            return false;
        }

        private boolean writeBack(RadixNode node) {
            Backup b = reserve(node, draftLayout != null);
            if (b == null) {
                metrics.countSkipped(WritePolicy.SkipReason.NO_ROOM, 1);
                return false;
            }
            writeBacksWaiting.add(b);
            return true;
        }

        @Override
        public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
            sink.free(pages, offset, count);
        }
    }

    /** True when the host budget has room for {@code cost}, after one host eviction pass if it had none. */
    private boolean makeRoom(int cost) {
        if (budget.overBy(cost) > 0) {
            evictHostBudget(budget.overBy(cost));
        }
        return budget.overBy(cost) <= 0;
    }

    /**
     * Allocates {@code owned} host pages for {@code holder} after {@link #makeRoom} said they fit. The budget bounds
     * every rank's physical use, so a refusal means the accounting is broken.
     */
    private void allocateBudgeted(int owned, int[] hostPages, long holder) {
        if (owned > 0 && allocator.allocate(owned, hostPages, 0, holder) < 0) {
            throw new IllegalStateException("host allocator refused " + owned + " pages with budget "
                + budget.usedPages() + "/" + budget.capacityPages() + " used: accounting bug");
        }
    }

    /** A checking runtime learns the pages are free now (the draft pool shares the page ids). */
    private void retireHostPages(int[] pages, int off, int n) {
        hostPool.retirePages(pages, off, n);
        if (draftPool != null) {
            draftPool.retirePages(pages, off, n);
        }
    }

    private void onHostEvicted(RadixNode node, HostValue value) {
        HostPages hp = (HostPages) value;
        if (hostTierObserver != null) {
            hostTierObserver.onHostEvicting(node, hp);
        }
        int n = hp.ownedPageCount();
        if (n > scratchPages.length) {
            scratchPages = new int[Math.max(n, scratchPages.length * 2)];
        }
        hp.copyHostPages(scratchPages, 0);
        if (n > 0) {
            allocator.free(scratchPages, 0, n);
            retireHostPages(scratchPages, 0, n);
        }
        LaneDescription l = hp.lanes();
        budget.give(budget.costOf(l));
        metrics.add(Metric.HOST_PAGES_EVICTED, n);
    }

    private void evictHostBudget(long needed) {
        long target = budget.usedPages() - needed;
        if (cpSize == 1) {
            tree.evictHost((int) Math.min(Integer.MAX_VALUE, needed), hostEvictionListener);
            return;
        }
        while (budget.usedPages() > target) {
            if (tree.evictHost(1, hostEvictionListener) == 0) {
                return;
            }
        }
    }

    /** A committed host value split by the tree (see {@link HostBudget#onSplit}). */
    void onHostValueSplit(LaneDescription whole, LaneDescription head, LaneDescription tail) {
        budget.onSplit(whole, head, tail);
    }

    // ------------------------------------------------------------------ storage tier hooks

    /**
     * Attaches a lower tier that this controller's own calls drive from now on (see {@link TierAttachment}): at most
     * one. Scheduler thread.
     *
     * @throws IllegalArgumentException if {@code attachment} is null
     * @throws IllegalStateException if a tier is already attached, or the controller is closed or stopped
     */
    public void attachTier(TierAttachment attachment) {
        checkUsable();
        if (attachment == null) {
            throw new IllegalArgumentException("attachment must not be null");
        }
        if (tier != null) {
            throw new IllegalStateException("this cache already has a storage tier attached; close it first");
        }
        tier = attachment;
    }

    /** Detaches {@code attachment} if it is the attached tier (it closed itself). Scheduler thread. */
    public void detachTier(TierAttachment attachment) {
        checkOwner();
        if (tier == attachment) {
            tier = null;
        }
    }

    /**
     * Checks that the caller is the scheduler thread (the first scheduler call binds it), as every scheduler call
     * does; a no-op with thread checking off.
     *
     * @throws IllegalStateException naming both threads when it is not
     */
    public void checkSchedulerThread() {
        checkOwner();
    }

    /** True while a tier is attached. Scheduler thread. */
    public boolean hasTier() {
        return tier != null;
    }

    /** CP group size (1 without a group). Any thread. */
    public int cpSize() {
        return cpSize;
    }

    /** The clock of leases and latencies, in nanoseconds. Any thread. */
    public LongSupplier clock() {
        return clock;
    }

    /**
     * Sets the observer of host evictions (a storage tier's write-back; null for none). Scheduler thread.
     */
    public void hostTierObserver(HostTierObserver observer) {
        checkOwner();
        this.hostTierObserver = observer;
    }

    /**
     * Storage prefetch: reserves host pages for positions {@code [startPage, startPage + pages)} of a sequence of
     * {@code totalPages} (the positions this rank owns), charged to the host budget in group units like
     * {@link #reserve}; with no room, one host eviction pass runs first. The caller ends the lease with
     * {@link #publishHost} or {@link #releaseHost}; {@link #close()} releases leases still open.
     *
     * @return the lease, or null when the host pool has no room
     * @throws IllegalArgumentException on a range outside {@code [0, totalPages)} or {@code pages < 1}
     */
    public HostLease reserveHost(int startPage, int pages, int totalPages) {
        checkUsable();
        if (pages < 1 || startPage < 0 || totalPages < startPage + pages) {
            throw new IllegalArgumentException("reserveHost(startPage=" + startPage + ", pages=" + pages
                + ", totalPages=" + totalPages + "): need pages >= 1 and startPage + pages <= totalPages");
        }
        int cost = budget.costOf(startPage, pages, totalPages);
        if (!makeRoom(cost)) {
            return null;
        }
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        int owned = lane.ownedCount();
        int[] hostPages = new int[owned];
        allocateBudgeted(owned, hostPages, LEASE_HOLDER_BASE + leaseSeq++);
        budget.take(cost);
        HostLease lease = new HostLease(this, hostPages, lane, cost);
        openLeases.add(lease);
        return lease;
    }

    /**
     * Storage prefetch: publishes the first {@code pages} positions of {@code lease} as a host-only node of the
     * sequence {@code tokens[from, from + (startPage + pages) * pageSize)} (see {@link RadixTree#insertHost}),
     * with the page hashes {@code hashes[hashOff, ...)} if not null, and frees the lease's other pages. When the
     * tree no longer fits (the path changed meanwhile), nothing is published and every page is freed. Ends the
     * lease either way. In a CP group every rank must make the same call (the same agreed page count).
     *
     * @return the new node, or null when nothing was published
     * @throws IllegalStateException if the lease already ended or belongs to another controller
     */
    public RadixNode publishHost(HostLease lease, int[] tokens, int from, int pages, byte[] hashes, int hashOff) {
        return publishHost(lease, tokens, from, pages, hashes, hashOff, false);
    }

    /**
     * As {@link #publishHost(HostLease, int[], int, int, byte[], int)}; with {@code withDraft} the lease's pages also
     * hold the draft/MTP KV in the draft host pool (same page ids), so the node's load-backs copy it to the device
     * like a backup's that carried it.
     *
     * @throws IllegalArgumentException if {@code withDraft} without a draft layout
     */
    public RadixNode publishHost(HostLease lease, int[] tokens, int from, int pages, byte[] hashes, int hashOff,
                                 boolean withDraft) {
        checkUsable();
        checkLease(lease);
        if (withDraft && draftPool == null) {
            throw new IllegalArgumentException("publishHost(withDraft=true) but no draft KV layout is configured");
        }
        if (pages < 0 || pages > lease.pageCount()) {
            throw new IllegalArgumentException("publishHost of " + pages + " pages outside [0, " + lease.pageCount()
                + "]");
        }
        if (pages == 0) {
            endLease(lease, 0);
            return null;
        }
        LaneDescription l = lease.lanes;
        LaneDescription head = pages == l.pageCount() ? l : l.slice(0, pages);
        int owned = l.ownedCountBefore(pages);
        HostPages value = new HostPages(java.util.Arrays.copyOf(lease.hostPages, owned), head, withDraft,
            cpSize == 1 ? null : this);
        int startPage = l.startPage();
        RadixNode node = tree.insertHost(tokens, from, (startPage + pages) * pageSize, startPage, value, hashes,
            hashOff);
        endLease(lease, node == null ? 0 : pages);
        return node;
    }

    /**
     * Ends {@code lease} without publishing: frees its pages and budget.
     *
     * @return false if it had already ended
     */
    public boolean releaseHost(HostLease lease) {
        checkOwner();
        if (lease == null || lease.owner != this) {
            throw new IllegalArgumentException(lease + " does not belong to this controller");
        }
        if (lease.ended || closed) {
            return false;
        }
        endLease(lease, 0);
        return true;
    }

    /** Prefetch leases not yet ended. Scheduler thread. */
    public int hostLeasesOpen() {
        return openLeases.size();
    }

    private void checkLease(HostLease lease) {
        if (lease == null || lease.owner != this) {
            throw new IllegalArgumentException(lease + " does not belong to this controller");
        }
        if (lease.ended) {
            throw new IllegalStateException(lease + " already ended");
        }
    }

    /** Ends a lease whose first {@code keptPositions} positions were published: frees the rest. */
    private void endLease(HostLease lease, int keptPositions) {
        lease.ended = true;
        openLeases.remove(lease);
        LaneDescription l = lease.lanes;
        int keptOwned = keptPositions == 0 ? 0 : l.ownedCountBefore(keptPositions);
        int freeCount = lease.hostPages.length - keptOwned;
        if (freeCount > 0) {
            allocator.free(lease.hostPages, keptOwned, freeCount);
        }
        int keptBudget = keptPositions == 0 ? 0 : budget.costOf(l.startPage(), keptPositions, l.totalPages());
        budget.give(lease.budgetPages - keptBudget);
    }

    // ------------------------------------------------------------------ failure and close

    private void stopAfterStickyError() {
        LOG.error("HiCache stops: sticky CUDA error {} poisoned the context; aborting {} backups in flight",
            stickyError.errorName(), fifo.size());
        int aborted = 0;
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (!b.state.terminal()) {
                b.state = BackupState.DRAINING;
                release(b, AbortReason.CUDA_ERROR);
                aborted++;
            }
        }
        HiCacheEvents.stickyError(stickyError.errorName(), stickyError.code(), stickyError.call(), aborted, rank);
        // the entries stay, failed, so the other ranks learn of them through the agreement rounds; an agreement
        // across processes is told this rank is gone, so the group degrades without waiting for its timeout
        agreement.leave(rank);
        loadAgreement.leave(rank);
    }

    /**
     * Stops the agents, aborts every backup in flight (waiting for copies already issued to finish), frees all
     * host memory and destroys the controller's streams and events. Idempotent; later calls other than
     * {@code close} and {@link #metrics()} throw {@link IllegalStateException}.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (checkThread && owner != null && owner != Thread.currentThread()) {
            throw new IllegalStateException("close must be called by the scheduler thread " + owner.getName());
        }
        TierAttachment attached = tier;
        if (attached != null) {
            attached.close(); // first, while the host memory its I/O uses is live; if it throws, nothing is closed
            tier = null;
        }
        closed = true;
        ring.close(); // hooks and waitLayer throw from now on, touching nothing
        if (submitterRunner != null) {
            submitterRunner.close();
            completionRunner.close();
        }
        quietly(() -> runtime.synchronizeStream(backupStream));
        quietly(() -> runtime.synchronizeStream(loader.loadStream()));
        loader.abandonAll();
        while (!openLeases.isEmpty()) {
            endLease(openLeases.get(openLeases.size() - 1), 0);
        }
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (!b.state.terminal()) {
                b.state = BackupState.DRAINING;
                release(b, AbortReason.SHUTDOWN);
            }
        }
        while (fifo.size() > 0) {
            fifo.pop();
        }
        for (ForwardSlot s : slotPool.all()) {
            for (CudaEvent e : s.targetEvents) {
                quietly(() -> runtime.destroyEvent(e));
            }
            for (CudaEvent e : s.draftEvents) {
                quietly(() -> runtime.destroyEvent(e));
            }
            quietly(() -> runtime.destroyEvent(s.endEvent));
            quietly(() -> runtime.destroyEvent(s.finalEvent));
            for (CudaEvent e : s.copiedEvents) {
                quietly(() -> runtime.destroyEvent(e));
            }
        }
        for (CudaEvent e : loaderEvents) {
            quietly(() -> runtime.destroyEvent(e));
        }
        loader.destroy();
        quietly(() -> runtime.destroyStream(backupStream));
        if (ownsComputeStream) {
            quietly(() -> runtime.destroyStream(computeStream));
        }
        if (draftPool != null) {
            quietly(draftPool::close);
        }
        quietly(hostPool::close);
        allocator.close();
        agentErrors.logSummary();
    }

    /** True once {@link #close()} ran. */
    public boolean isClosed() {
        return closed;
    }

    private static void quietly(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            LOG.debug("ignored during cleanup", e);
        }
    }

    private void checkHooksOpen(String call) {
        if (ring.closed()) {
            throw new IllegalStateException(call + " on a closed controller");
        }
    }

    private void checkOpen(String call) {
        checkOwner();
        if (closed) {
            throw new IllegalStateException(call + " on a closed controller");
        }
    }

    private void checkOwner() {
        if (!checkThread) {
            return;
        }
        Thread t = Thread.currentThread();
        if (owner == null) {
            owner = t;
        } else if (owner != t) {
            throw new IllegalStateException("scheduler-thread call from " + t.getName() + ": this controller is owned by "
                + owner.getName());
        }
    }

    private void checkUsable() {
        checkOwner();
        if (closed) {
            throw new IllegalStateException("controller is closed");
        }
        if (stickyError != null) {
            throw new IllegalStateException("controller stopped after sticky CUDA error " + stickyError.errorName()
                + ": " + stickyError.getMessage());
        }
    }
}
