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
import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.RingBuffer;
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
 * stops the controller: every backup in flight is aborted and later reservations throw.
 */
public final class HiCacheController implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(HiCacheController.class);

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

    private final ForwardSlot[] slots;
    private final ForwardSlot[] freeSlots;
    private int freeSlotCount;
    private final RingBuffer<HookEvent> ring;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final SpscArrayQueue<ForwardSlot> acks;
    private final Loader loader;
    private final java.util.List<CudaEvent> loaderEvents = new java.util.ArrayList<>();
    private final SubmitterAgent submitter;
    private final CompletionAgent completion;
    private final AgentRunner submitterRunner;
    private final AgentRunner completionRunner;

    // scheduler-owned state
    private Thread owner;
    private long nextSeq;
    private long generation;
    private final SeqRing<Backup> fifo = new SeqRing<>(64);
    private long budgetUsedPages;
    private final long budgetCapacityPages;
    private long round;
    private boolean roundOpen;
    /** The open round's JFR event, or null when none is open or the event is disabled. */
    private AgreementRoundEvent roundEvent;
    private final long targetPageBytes;
    private final long draftPageBytes;
    private final long[] agreed = new long[2];
    private int changes;
    private int[] scratchPages = new int[64];
    private int[] scratchOffsets = new int[64];
    private RadixNode[] pathScratch = new RadixNode[64];
    private final HostEvictionListener hostEvictionListener = this::onHostEvicted;
    private final WriteBackEvictionListener deviceEvictionListener = new WriteBackEvictionListener();
    private volatile boolean hooksUnavailable;
    private volatile String hooksUnavailableReason;
    private final long[] lastFallbackWarnNs = new long[FallbackReason.values().length];
    private CudaException stickyError;
    private boolean closed;
    private HostTierObserver hostTierObserver;
    private final java.util.ArrayList<HostLease> openLeases = new java.util.ArrayList<>();
    /** Allocator holder ids of prefetch leases: far above any backup sequence number. */
    private static final long LEASE_HOLDER_BASE = 1L << 62;
    private long leaseSeq;

    private HiCacheController(Builder b) {
        this.runtime = b.runtime;
        this.targetLayout = b.targetLayout;
        this.draftLayout = b.draftLayout;
        this.pageSize = targetLayout.pageSizeTokens();
        this.cpSize = b.cpSize;
        this.rank = b.cpRank;
        this.lanes = b.lanes;
        this.agreement = b.agreement;
        this.writePolicy = b.writePolicy;
        this.hitThreshold = b.hitThreshold > 0 ? b.hitThreshold : (b.writePolicy == WritePolicy.WRITE_THROUGH_SELECTIVE ? 2 : 1);
        this.configuredMode = b.backupMode;
        this.clock = b.clock;
        this.leaseNs = b.leaseNs;
        this.checkThread = b.checkThread;
        this.listener = b.listener;
        this.targetLayers = targetLayout.layerCount();
        this.draftLayers = draftLayout == null ? 0 : draftLayout.layerCount();

        this.tree = RadixTree.builder().pageSize(pageSize).devicePolicy(b.deviceEviction).hostPolicy(b.hostEviction).build();

        // Native resources, released in reverse order if any step fails.
        CudaStream createdCompute = null;
        CudaStream createdBackup = null;
        HostKvPool pool = null;
        HostKvPool dpool = null;
        java.util.ArrayList<CudaEvent> events = new java.util.ArrayList<>();
        try {
            pool = b.hostPoolBuilder(runtime, targetLayout).allocate();
            dpool = draftLayout == null ? null : pool.allocateDraft(draftLayout.shape());
            createdBackup = runtime.createStream(0);
            if (b.computeStream == null) {
                createdCompute = runtime.createStream(0);
            }
            int slotCount = b.maxForwardsInFlight;
            slots = new ForwardSlot[slotCount];
            for (int i = 0; i < slotCount; i++) {
                CudaEvent[] te = new CudaEvent[targetLayers];
                for (int l = 0; l < targetLayers; l++) {
                    te[l] = runtime.createEvent(true);
                    events.add(te[l]);
                }
                CudaEvent[] de = new CudaEvent[draftLayers];
                for (int l = 0; l < draftLayers; l++) {
                    de[l] = runtime.createEvent(true);
                    events.add(de[l]);
                }
                CudaEvent end = runtime.createEvent(true);
                events.add(end);
                CudaEvent fin = runtime.createEvent(true);
                events.add(fin);
                CudaEvent[] copied = new CudaEvent[targetLayers + draftLayers];
                for (int l = 0; l < copied.length; l++) {
                    copied[l] = runtime.createEvent(true);
                    events.add(copied[l]);
                }
                slots[i] = new ForwardSlot(i, te, de, end, fin, copied);
            }
        } catch (RuntimeException e) {
            for (CudaEvent ev : events) {
                quietly(() -> runtime.destroyEvent(ev));
            }
            CudaStream cc = createdCompute;
            CudaStream cb = createdBackup;
            if (cc != null) {
                quietly(() -> runtime.destroyStream(cc));
            }
            if (cb != null) {
                quietly(() -> runtime.destroyStream(cb));
            }
            if (dpool != null) {
                dpool.close();
            }
            if (pool != null) {
                pool.close();
            }
            throw e;
        }
        this.hostPool = pool;
        this.draftPool = dpool;
        this.backupStream = createdBackup;
        this.ownsComputeStream = createdCompute != null;
        this.computeStream = createdCompute != null ? createdCompute : b.computeStream;
        this.allocator = new HostPageAllocator(hostPool.pageCount());
        this.budgetCapacityPages = hostPool.pageCount();
        metrics.set(Metric.HOST_PAGES_CAPACITY, budgetCapacityPages);
        this.targetPageBytes = hostPool.bytesPerPageAllLayers();
        this.draftPageBytes = draftPool == null ? 0 : draftPool.bytesPerPageAllLayers();

        this.freeSlots = new ForwardSlot[slots.length];
        for (int i = slots.length - 1; i >= 0; i--) {
            freeSlots[freeSlotCount++] = slots[i];
        }
        int ringSize = Integer.highestOneBit(Math.max(4, slots.length * (targetLayers + draftLayers + 1)) * 2 - 1);
        this.ring = RingBuffer.createSingleProducer(HookEvent::new, ringSize);
        EventPoller<HookEvent> poller = ring.newPoller();
        ring.addGatingSequences(poller.getSequence());
        int qcap = Math.max(4, slots.length * 2);
        this.commands = new SpscArrayQueue<>(qcap);
        SpscArrayQueue<ForwardSlot> sealed = new SpscArrayQueue<>(qcap);
        this.acks = new SpscArrayQueue<>(qcap);
        CopyPlanner tp = new CopyPlanner(targetLayout, hostPool, b.coalesce);
        CopyPlanner dp = draftLayout == null ? null : new CopyPlanner(draftLayout, draftPool, b.coalesce);
        this.submitter = new SubmitterAgent(runtime, backupStream, tp, dp, b.batchedCopies, targetLayers, draftLayers,
            poller, commands, sealed, metrics, clock);
        SpscArrayQueue<LoadSet> loadsIssued = new SpscArrayQueue<>(8);
        SpscArrayQueue<LoadSet> loadAcks = new SpscArrayQueue<>(8);
        this.completion = new CompletionAgent(runtime, sealed, acks, loadsIssued, loadAcks, metrics, clock, qcap);
        this.loader = new Loader(runtime, computeStream, tree, new CopyPlanner(targetLayout, hostPool, b.coalesce),
            draftLayout == null ? null : new CopyPlanner(draftLayout, draftPool, b.coalesce), b.batchedCopies,
            b.loadAgreement, rank, clock, metrics, b.loadListener, b.loadThresholdTokens, targetLayers, draftLayers,
            loadsIssued, loadAcks, loaderEvents);
        if (b.threadingMode == ThreadingMode.DEDICATED) {
            ErrorHandler errors = t -> LOG.error("HiCache agent error", t);
            this.submitterRunner = new AgentRunner(b.idleStrategySupplier.get(), errors, null, submitter);
            this.completionRunner = new AgentRunner(b.idleStrategySupplier.get(), errors, null, completion);
            AgentRunner.startOnThread(submitterRunner);
            AgentRunner.startOnThread(completionRunner);
        } else {
            this.submitterRunner = null;
            this.completionRunner = null;
        }
        if (configuredMode == BackupMode.ALL_LAYERS) {
            LOG.warn("HiCache backup mode ALL_LAYERS configured: every layer is copied after the forward, "
                + "so copies no longer overlap with compute");
        }
    }

    /** A builder; see {@link Builder} for the required parts. */
    public static Builder builder() {
        return new Builder();
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
        return out;
    }

    /** Counters; any thread. */
    public HiCacheMetrics metrics() {
        return metrics;
    }

    /** The target host pool (scheduler thread; for reading host KV in tests and storage tiers). */
    public HostKvPool hostPool() {
        return hostPool;
    }

    /** The draft host pool, or null. */
    public HostKvPool draftHostPool() {
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
        return budgetUsedPages;
    }

    /** Host pages the group budget allows. */
    public long hostBudgetCapacityPages() {
        return budgetCapacityPages;
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
        int budget = budgetOf(startPage, pages, totalPages);
        if (budgetUsedPages + budget > budgetCapacityPages) {
            evictHostBudget(budgetUsedPages + budget - budgetCapacityPages);
            if (budgetUsedPages + budget > budgetCapacityPages) {
                metrics.increment(Metric.RESERVE_NO_ROOM);
                return null;
            }
        }
        int[] offsets = new int[pages];
        int owned = lanes.ownedOffsets(rank, startPage, pages, totalPages, cpSize, offsets);
        int[] ownedIdx = owned == pages ? offsets : java.util.Arrays.copyOf(offsets, owned);
        int[] hostPages = new int[owned];
        long seq = nextSeq;
        if (owned > 0 && allocator.allocate(owned, hostPages, 0, seq) < 0) {
            // The budget bounds every rank's physical use, so this means the accounting is broken.
            throw new IllegalStateException("host allocator refused " + owned + " pages with budget "
                + budgetUsedPages + "/" + budgetCapacityPages + " used: accounting bug");
        }
        int[] devicePages = new int[pages];
        node.copyDevicePages(devicePages, 0);
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        HostPages value = new HostPages(hostPages, lane, withDraft, cpSize == 1 ? null : this);
        long now = clock.getAsLong();
        Backup b = new Backup(this, seq, node, startPage, devicePages, ownedIdx, owned, hostPages, budget, value, withDraft,
            now, leaseNs > 0 ? now + leaseNs : Long.MAX_VALUE);
        tree.markPending(node, b);
        tree.lock(node);
        nextSeq++;
        budgetUsedPages += budget;
        metrics.set(Metric.HOST_PAGES_USED, budgetUsedPages);
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
        if (writePolicy == WritePolicy.WRITE_BACK || node.isRoot()) {
            return 0;
        }
        int depth = 0;
        for (RadixNode p = node; p != null && !p.isRoot(); p = p.parent()) {
            if (depth == pathScratch.length) {
                pathScratch = java.util.Arrays.copyOf(pathScratch, depth * 2);
            }
            pathScratch[depth++] = p;
        }
        int reserved = 0;
        for (int i = depth - 1; i >= 0; i--) {
            RadixNode n = pathScratch[i];
            pathScratch[i] = null;
            if (n.isBackedUp()) {
                continue;
            }
            if (n.hitCount() < hitThreshold || !tree.canBackUp(n)) {
                clearPath(i);
                break;
            }
            Backup b = reserve(n, withDraft);
            if (b == null) {
                clearPath(i);
                break;
            }
            out.add(b);
            reserved++;
        }
        return reserved;
    }

    private void clearPath(int upTo) {
        for (int j = upTo; j >= 0; j--) {
            pathScratch[j] = null;
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
            return new ForwardHandle(null, 0, runtime, computeStream, ring, clock, targetLayers, draftLayers);
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
        return new ForwardHandle(slot, slot.generation, runtime, computeStream, ring, clock, targetLayers, draftLayers);
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
        if (freeSlotCount == 0) {
            reclaimSlots();
            if (freeSlotCount == 0) {
                throw new IllegalStateException("more than " + slots.length
                    + " forwards with backups in flight: call poll() to retire finished ones, or raise maxForwardsInFlight");
            }
        }
        ForwardSlot slot = freeSlots[--freeSlotCount];
        freeSlots[freeSlotCount] = null;
        slot.reset(++generation);
        slot.inUse = true;
        return slot;
    }

    private void reclaimSlots() {
        for (ForwardSlot s : slots) {
            if (s.inUse && s.acked && (s.endSeen || s.cancelled || s.writeBack)) {
                s.inUse = false;
                freeSlots[freeSlotCount++] = s;
            }
        }
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
        agree();
        int loads = loader.poll();
        metrics.set(Metric.HOST_PAGES_USED, budgetUsedPages);
        return changes + loads;
    }

    private void onAck(ForwardSlot slot) {
        slot.acked = true;
        int status = slot.status;
        if (status != 0) {
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
        if (slot.cancelled || slot.endSeen || slot.writeBack) {
            slot.inUse = false;
            java.util.Arrays.fill(slot.backups, 0, slot.backupCount, null);
            slot.backupCount = 0;
            freeSlots[freeSlotCount++] = slot;
        }
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
            } else if (b.state == BackupState.COPYING && b.slot != null && !b.cancelSent) {
                ForwardSlot slot = b.slot;
                for (int j = 0; j < slot.backupCount; j++) {
                    slot.backups[j].cancelSent = true;
                    slot.backups[j].state = BackupState.DRAINING;
                    slot.backups[j].abortReason = AbortReason.LEASE_EXPIRED;
                }
                slot.command = ForwardSlot.CMD_CANCEL;
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
            if (!roundOpen) {
                long prefix = nextSeq;
                long firstFailed = Long.MAX_VALUE;
                for (int i = 0; i < fifo.size(); i++) {
                    Backup b = fifo.at(i);
                    if (b.local == Backup.Local.UNRESOLVED) {
                        prefix = b.seq;
                        break;
                    }
                    if (b.local == Backup.Local.FAILED && firstFailed == Long.MAX_VALUE) {
                        firstFailed = b.seq;
                    }
                }
                roundEvent = HiCacheEvents.beginRound();
                agreement.contribute(rank, round, prefix, firstFailed);
                roundOpen = true;
            }
            if (!agreement.tryResult(rank, round, agreed)) {
                return;
            }
            roundOpen = false;
            round++;
            long g = agreed[0];
            long f = agreed[1];
            long limit = Math.min(g, f);
            int retired = 0;
            while (fifo.size() > 0 && fifo.at(0).seq < limit) {
                Backup b = fifo.pop();
                retired++;
                if (!b.state.terminal()) {
                    // complete everywhere; an abort asked for after this rank reported it complete lost the race,
                    // and the bytes are whole, so it commits like on every other rank
                    commit(b);
                }
            }
            if (f < g && fifo.size() > 0 && fifo.at(0).seq == f) {
                Backup b = fifo.pop();
                retired++;
                if (!b.state.terminal()) {
                    release(b, b.local == Backup.Local.FAILED && b.abortReason != null ? b.abortReason
                        : AbortReason.RANK_FAILED);
                }
            }
            HiCacheEvents.endRound(roundEvent, cpSize, round - 1, retired, rank);
            roundEvent = null;
            if (retired == 0) {
                return;
            }
        }
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
    }

    /** Releases an aborted backup whose copies have drained: pending cleared, lock released, pages freed. */
    private void release(Backup b, AbortReason reason) {
        for (int i = 0; i < b.fragmentCount; i++) {
            tree.abortPending(b.fragments[i], b);
        }
        tree.unlock(b.node);
        if (b.ownedCount > 0) {
            allocator.free(b.hostPages, 0, b.ownedCount);
        }
        budgetUsedPages -= b.budgetPages;
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
     * device prefix is locked, and the load is issued by the next {@link #startLoading()}. The chain's nodes
     * stay host-only until the load is acknowledged on every rank; a chain node another load is bringing back
     * ends the chain. A chain node that an {@code insert} adopts meanwhile (the engine computed those tokens)
     * keeps the inserted pages: the load's pages for it are returned to {@code allocator} when the load ends.
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
        loader.waitLayer(consumer, layer, false);
    }

    /** Forward thread: as {@link #waitLayer} for draft layer {@code layer}. */
    public void waitDraftLayer(long consumer, int layer) {
        loader.waitLayer(consumer, layer, true);
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
        deviceEvictionListener.writeBacks = 0;
        int evicted = tree.evictDevice(pages, deviceEvictionListener);
        deviceEvictionListener.sink = null;
        if (deviceEvictionListener.writeBackSlot != null) {
            ForwardSlot slot = deviceEvictionListener.writeBackSlot;
            deviceEvictionListener.writeBackSlot = null;
            runtime.recordEvent(slot.endEvent, computeStream);
            slot.command = ForwardSlot.CMD_COPY_ALL_NOW;
            countFallback(FallbackReason.WRITE_BACK);
            if (!commands.offer(slot)) {
                throw new IllegalStateException("submitter command queue full");
            }
        }
        return evicted;
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
        ForwardSlot writeBackSlot;
        int writeBacks;

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
                return false;
            }
            if (writeBackSlot == null) {
                if (freeSlotCount == 0) {
                    reclaimSlots();
                }
                if (freeSlotCount == 0) {
                    abortQuietly(b);
                    return false;
                }
                writeBackSlot = takeSlot();
                writeBackSlot.allLayers = true;
                writeBackSlot.writeBack = true;
            }
            b.slot = writeBackSlot;
            b.state = BackupState.COPYING;
            writeBackSlot.add(b);
            writeBacks++;
            return true;
        }

        @Override
        public void onDeviceEvicted(RadixNode node, int[] pages, int offset, int count) {
            sink.free(pages, offset, count);
        }
    }

    private void abortQuietly(Backup b) {
        fail(b, AbortReason.ENGINE);
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
        }
        LaneDescription l = hp.lanes();
        budgetUsedPages -= budgetOf(l.startPage(), l.pageCount(), l.totalPages());
        metrics.add(Metric.HOST_PAGES_EVICTED, n);
    }

    private void evictHostBudget(long needed) {
        long target = budgetUsedPages - needed;
        if (cpSize == 1) {
            tree.evictHost((int) Math.min(Integer.MAX_VALUE, needed), hostEvictionListener);
            return;
        }
        while (budgetUsedPages > target) {
            if (tree.evictHost(1, hostEvictionListener) == 0) {
                return;
            }
        }
    }

    /** Host budget of a node: the largest number of its positions any rank of the group owns. */
    private int budgetOf(int startPage, int pages, int totalPages) {
        if (cpSize == 1) {
            return pages;
        }
        int max = 0;
        for (int r = 0; r < cpSize; r++) {
            max = Math.max(max, lanes.ownedCount(r, startPage, pages, totalPages, cpSize));
        }
        return max;
    }

    /**
     * Budget of a committed host value split by the tree: the halves may each need more than their share
     * under CP lanes; the difference is accounted here.
     */
    void onHostValueSplit(LaneDescription whole, LaneDescription head, LaneDescription tail) {
        budgetUsedPages += budgetOf(head.startPage(), head.pageCount(), head.totalPages())
            + budgetOf(tail.startPage(), tail.pageCount(), tail.totalPages())
            - budgetOf(whole.startPage(), whole.pageCount(), whole.totalPages());
    }

    // ------------------------------------------------------------------ storage tier hooks

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
        int budget = budgetOf(startPage, pages, totalPages);
        if (budgetUsedPages + budget > budgetCapacityPages) {
            evictHostBudget(budgetUsedPages + budget - budgetCapacityPages);
            if (budgetUsedPages + budget > budgetCapacityPages) {
                return null;
            }
        }
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        int owned = lane.ownedCount();
        int[] hostPages = new int[owned];
        if (owned > 0 && allocator.allocate(owned, hostPages, 0, LEASE_HOLDER_BASE + leaseSeq++) < 0) {
            throw new IllegalStateException("host allocator refused " + owned + " pages with budget "
                + budgetUsedPages + "/" + budgetCapacityPages + " used: accounting bug");
        }
        budgetUsedPages += budget;
        HostLease lease = new HostLease(this, hostPages, lane, budget);
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
        checkUsable();
        checkLease(lease);
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
        HostPages value = new HostPages(java.util.Arrays.copyOf(lease.hostPages, owned), head, false,
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
        int keptBudget = keptPositions == 0 ? 0 : budgetOf(l.startPage(), keptPositions, l.totalPages());
        budgetUsedPages -= lease.budgetPages - keptBudget;
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
        // the entries stay, failed, so the other ranks learn of them through the agreement rounds
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
        closed = true;
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
        for (ForwardSlot s : slots) {
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


    // ------------------------------------------------------------------ builder

    /**
     * Configuration of a {@link HiCacheController}. Required: {@link #runtime}, {@link #targetLayout} and a host
     * pool size ({@link #hostPages}, {@link #hostBytes} or {@link #hostRatioToDevice}). {@link #build()} validates
     * everything, naming the bad setting. Cold path; not thread-safe.
     */
    public static final class Builder {
        CudaRuntime runtime;
        CudaStream computeStream;
        DeviceKvLayout targetLayout;
        DeviceKvLayout draftLayout;
        int hostPages;
        long hostBytes;
        double hostRatio;
        io.hicache.core.memory.HostLayout hostLayout = io.hicache.core.memory.HostLayout.LAYER_FIRST;
        io.hicache.core.memory.HostMemoryKind hostMemoryKind;
        int cpSize = 1;
        int cpRank;
        OwnerLanes lanes = OwnerLanes.ROUND_ROBIN;
        RankAgreement agreement;
        RankAgreement loadAgreement;
        int loadThresholdTokens = 10;
        LoadListener loadListener;
        WritePolicy writePolicy = WritePolicy.WRITE_THROUGH;
        int hitThreshold;
        BackupMode backupMode = BackupMode.LAYERED;
        io.hicache.radix.EvictionPolicy deviceEviction = io.hicache.radix.EvictionPolicy.LRU;
        io.hicache.radix.EvictionPolicy hostEviction = io.hicache.radix.EvictionPolicy.LRU;
        ThreadingMode threadingMode = ThreadingMode.DEDICATED;
        java.util.function.Supplier<org.agrona.concurrent.IdleStrategy> idleStrategySupplier =
            () -> new org.agrona.concurrent.BackoffIdleStrategy(100, 10, 1_000, 100_000);
        LongSupplier clock = System::nanoTime;
        long leaseNs = 30_000_000_000L;
        int maxForwardsInFlight = 8;
        boolean coalesce = true;
        boolean batchedCopies = true;
        boolean checkThread = true;
        BackupListener listener;

        Builder() {
        }

        /** The CUDA runtime (native or simulated). Required. */
        public Builder runtime(CudaRuntime runtime) {
            this.runtime = runtime;
            return this;
        }

        /** The engine's compute stream the hooks record on; default: a stream the controller creates. */
        public Builder computeStream(CudaStream stream) {
            this.computeStream = stream;
            return this;
        }

        /** The target model's device KV layout. Required; its page size is the tree's. */
        public Builder targetLayout(DeviceKvLayout layout) {
            this.targetLayout = layout;
            return this;
        }

        /** The draft/MTP model's device KV layout (same page size and device page ids); none by default. */
        public Builder draftLayout(DeviceKvLayout layout) {
            this.draftLayout = layout;
            return this;
        }

        /** Host pool size in pages. */
        public Builder hostPages(int pages) {
            this.hostPages = pages;
            return this;
        }

        /** Host pool size in bytes (rounded down to whole pages). */
        public Builder hostBytes(long bytes) {
            this.hostBytes = bytes;
            return this;
        }

        /** Host pool size as a ratio of the device pool ({@code > 0}). */
        public Builder hostRatioToDevice(double ratio) {
            this.hostRatio = ratio;
            return this;
        }

        /** Host byte order (default {@code LAYER_FIRST}). */
        public Builder hostLayout(io.hicache.core.memory.HostLayout layout) {
            this.hostLayout = layout;
            return this;
        }

        /** Where host memory comes from (default: the pool's default, {@code cudaHostAlloc}). */
        public Builder hostMemoryKind(io.hicache.core.memory.HostMemoryKind kind) {
            this.hostMemoryKind = kind;
            return this;
        }

        /** The CP group: size, this rank, the owner-lane strategy and the agreement among ranks. */
        public Builder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement) {
            this.cpSize = size;
            this.cpRank = rank;
            this.lanes = lanes;
            this.agreement = agreement;
            return this;
        }

        /**
         * The CP group with a separate agreement for loads (an engine's collective may serve both; in-process
         * groups need two {@link io.hicache.core.cp.InProcessRankAgreement}s).
         */
        public Builder cpGroup(int size, int rank, OwnerLanes lanes, RankAgreement agreement, RankAgreement loadAgreement) {
            cpGroup(size, rank, lanes, agreement);
            this.loadAgreement = loadAgreement;
            return this;
        }

        /** Host hits shorter than this many tokens are not loaded back (default 10, as SGLang). */
        public Builder loadThresholdTokens(int tokens) {
            this.loadThresholdTokens = tokens;
            return this;
        }

        /** Listener for finished and failed loads (default none). */
        public Builder loadListener(LoadListener listener) {
            this.loadListener = listener;
            return this;
        }

        /** Write policy (default write-through). */
        public Builder writePolicy(WritePolicy policy) {
            this.writePolicy = policy;
            return this;
        }

        /** Hit threshold of write-through-selective (default 2; write-through uses 1). */
        public Builder hitThreshold(int threshold) {
            this.hitThreshold = threshold;
            return this;
        }

        /** Backup mode (default {@link BackupMode#LAYERED}). */
        public Builder backupMode(BackupMode mode) {
            this.backupMode = mode;
            return this;
        }

        /** Eviction policies of the device and host tiers (default LRU for both). */
        public Builder eviction(io.hicache.radix.EvictionPolicy device, io.hicache.radix.EvictionPolicy host) {
            this.deviceEviction = device;
            this.hostEviction = host;
            return this;
        }

        /** Threading of the agents (default {@link ThreadingMode#DEDICATED}). */
        public Builder threadingMode(ThreadingMode mode) {
            this.threadingMode = mode;
            return this;
        }

        /** Idle strategy of the agent threads (a new one per agent). */
        public Builder idleStrategy(java.util.function.Supplier<org.agrona.concurrent.IdleStrategy> supplier) {
            this.idleStrategySupplier = supplier;
            return this;
        }

        /** Clock in nanoseconds for leases and latencies (default {@code System::nanoTime}; the simulated device's clock in simulation). */
        public Builder clock(LongSupplier clockNs) {
            this.clock = clockNs;
            return this;
        }

        /** Lease of a reservation: not sealed within it, the backup is aborted (default 30 s; 0 disables). */
        public Builder leaseNs(long leaseNs) {
            this.leaseNs = leaseNs;
            return this;
        }

        /** Forwards with backups that may be in flight at once (default 8). */
        public Builder maxForwardsInFlight(int n) {
            this.maxForwardsInFlight = n;
            return this;
        }

        /** Whether pages contiguous on both sides are copied in one call (default true). */
        public Builder coalesce(boolean coalesce) {
            this.coalesce = coalesce;
            return this;
        }

        /** Whether a layer's copies go in one batched call where the runtime supports it (default true). */
        public Builder batchedCopies(boolean batched) {
            this.batchedCopies = batched;
            return this;
        }

        /** Whether scheduler-thread calls are checked to come from one thread (default true). */
        public Builder checkThread(boolean check) {
            this.checkThread = check;
            return this;
        }

        /** Listener for commits and aborts (default none). */
        public Builder listener(BackupListener listener) {
            this.listener = listener;
            return this;
        }

        HostKvPool.Builder hostPoolBuilder(CudaRuntime rt, DeviceKvLayout layout) {
            HostKvPool.Builder pb = HostKvPool.builder(rt, layout.shape()).layout(hostLayout);
            if (hostMemoryKind != null) {
                pb.memoryKind(hostMemoryKind);
            }
            if (hostPages > 0) {
                pb.pageCount(hostPages);
            } else if (hostBytes > 0) {
                pb.bytes(hostBytes);
            } else {
                pb.ratioToDevice(layout, hostRatio);
            }
            return pb;
        }

        /**
         * Validates and builds; allocates the host pool, streams and events (released again if any step fails).
         *
         * @throws IllegalArgumentException naming the bad setting
         * @throws io.hicache.cuda.CudaException if the runtime fails
         */
        public HiCacheController build() {
            if (runtime == null) {
                throw new IllegalArgumentException("runtime is required");
            }
            if (targetLayout == null) {
                throw new IllegalArgumentException("targetLayout is required");
            }
            if (draftLayout != null && draftLayout.pageSizeTokens() != targetLayout.pageSizeTokens()) {
                throw new IllegalArgumentException("draftLayout page size " + draftLayout.pageSizeTokens()
                    + " differs from the target's " + targetLayout.pageSizeTokens());
            }
            int sizes = (hostPages > 0 ? 1 : 0) + (hostBytes > 0 ? 1 : 0) + (hostRatio > 0 ? 1 : 0);
            if (sizes != 1) {
                throw new IllegalArgumentException("set exactly one positive host pool size (hostPages, hostBytes or "
                    + "hostRatioToDevice); got pages=" + hostPages + ", bytes=" + hostBytes + ", ratio=" + hostRatio);
            }
            if (cpSize < 1 || cpRank < 0 || cpRank >= cpSize) {
                throw new IllegalArgumentException("CP rank " + cpRank + " outside a group of size " + cpSize);
            }
            if (lanes == null) {
                throw new IllegalArgumentException("lanes must not be null");
            }
            if (agreement == null) {
                if (cpSize != 1) {
                    throw new IllegalArgumentException("a CP group of size " + cpSize + " needs a RankAgreement");
                }
                agreement = new io.hicache.core.internal.cp.LocalRankAgreement();
            }
            if (loadAgreement == null) {
                loadAgreement = agreement.loadChannel();
            }
            if (loadAgreement == agreement && cpSize > 1) {
                throw new IllegalArgumentException("backups and loads need separate RankAgreement instances");
            }
            if (loadThresholdTokens < 0) {
                throw new IllegalArgumentException("loadThresholdTokens " + loadThresholdTokens + " must be >= 0");
            }
            if (agreement.groupSize() != cpSize) {
                throw new IllegalArgumentException("RankAgreement of size " + agreement.groupSize()
                    + " for a CP group of size " + cpSize);
            }
            if (writePolicy == null || backupMode == null || threadingMode == null || deviceEviction == null
                || hostEviction == null || clock == null || idleStrategySupplier == null || hostLayout == null) {
                throw new IllegalArgumentException("writePolicy, backupMode, threadingMode, eviction policies, clock, "
                    + "idle strategy and hostLayout must not be null");
            }
            if (hitThreshold < 0) {
                throw new IllegalArgumentException("hitThreshold " + hitThreshold + " must be >= 1 (0 = policy default)");
            }
            if (leaseNs < 0) {
                throw new IllegalArgumentException("leaseNs " + leaseNs + " must be >= 0");
            }
            if (maxForwardsInFlight < 1 || maxForwardsInFlight > 1024) {
                throw new IllegalArgumentException("maxForwardsInFlight " + maxForwardsInFlight + " outside [1, 1024]");
            }
            return new HiCacheController(this);
        }
    }
}
