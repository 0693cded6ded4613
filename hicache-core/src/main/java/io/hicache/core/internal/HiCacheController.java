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
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.RankAgreement;
import io.hicache.core.memory.DeviceKvLayout;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.spi.StoragePort;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.core.metrics.FallbackReason;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
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
 * the same order on every rank. Backups and loads retire only through agreed rounds ({@link AgreementChannel}, one
 * round opened at every poll), so the ranks' trees stay identical as long as each rank applies a round's result at
 * the same engine step. Each round carries a fingerprint of every item it may retire and a digest of what the last
 * round committed, so ranks whose schedules diverged, or that an agreement gave different outcomes, abort everything
 * in flight ({@link AbortReason#DIVERGED}) instead of committing on one rank only; the group is then degraded
 * ({@link #groupState()}). With the non-blocking {@link io.hicache.core.cp.InProcessRankAgreement} stepped from one
 * thread, poll every rank until all of them have applied the round before the next engine step (the simulator does
 * this). {@link #close()} leaves the group ({@link RankAgreement#leave}).
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
 * <p><b>Parts.</b> The controller checks thread and state and delegates to parts it owns, all on the scheduler
 * thread: {@link ControllerResources} (native resources and agent threads, one release list for a failed build and
 * {@link #close()}), {@link BackupBook} (backups from reservation to agreed commit or release),
 * {@link HostEvictingAllocator} (host budget, allocator and host eviction), {@link HostLeases} (the storage tier's
 * prefetch leases), {@link WriteBackEviction} (device eviction and its write-backs) and {@link FallbackLog}
 * (all-layer fallbacks).
 *
 * <p><b>Slot leases and hand-offs.</b> A forward's {@link ForwardSlot} belongs to its {@link ForwardHandle} from
 * {@link #beginForward} until the handle ended or was invalidated <i>and</i> the forward was acknowledged
 * ({@link SlotPool}). A lease expiry revokes the handle (a volatile generation number on the slot): its next hook
 * throws and lets go. Scheduler → forward thread: the engine's hand-off of the handle; forward thread →
 * submitter: the hook ring (a single-producer lane per slot, release/acquire); submitter → completion → scheduler:
 * SPSC queues; the few flags written and read concurrently are volatile generation numbers ({@link ForwardSlot}).
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
    private final ControllerResources resources;
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
    /** The agreement rounds: one channel carrying backups and loads, or one each (see {@link AgreementChannel}). */
    private final AgreementChannel[] channels;
    private final GroupHealth health;
    private final AgreementWatchdog.Watch watch;
    private boolean leftGroup;
    private final WritePolicy writePolicy;
    private final BackupMode configuredMode;
    private final LongSupplier clock;
    private final boolean checkThread;
    private final HiCacheMetrics metrics = new HiCacheMetrics();
    private final int targetLayers;
    private final int draftLayers;

    private final SlotPool slotPool;
    private final HookRing ring;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final SpscArrayQueue<ForwardSlot> acks;
    private final Loader loader;
    private final io.hicache.core.LoadOverlap loadOverlap;
    private final AgentErrors agentErrors = new AgentErrors(metrics);
    private final FallbackLog fallbacks;
    private final SubmitterAgent submitter;
    private final CompletionAgent completion;
    /** Null in {@link ThreadingMode#INVOKER} mode. */
    private final AgentRunner submitterRunner;
    /** The agents as both threading modes step them: one error path (see {@link GuardedAgent}). */
    private final GuardedAgent guardedSubmitter;
    private final GuardedAgent guardedCompletion;

    // scheduler-owned state
    private Thread owner;
    private final HostBudget budget;
    private final long targetPageBytes;
    private final long draftPageBytes;
    private final WriteBackEviction deviceEviction;
    private CudaException stickyError;
    /** Written by the scheduler at close; volatile so that {@link #isClosed()} and hooks see it from any thread. */
    private volatile boolean closed;
    /** The lower tier driven by this controller's calls (see {@link #attachTier}), or null. */
    private StoragePort.Tier tier;
    /** The port a storage tier attaches through (see {@link #storagePort()}). */
    private final StoragePort storagePort = new ControllerStoragePort(this);
    private final HostEvictingAllocator room;
    private final BackupBook backups;
    private final HostLeases leases;
    private final Withdrawal withdrawal;

    private HiCacheController(ControllerConfig b) {
        this.runtime = b.runtime();
        this.targetLayout = b.targetLayout();
        this.draftLayout = b.draftLayout();
        this.pageSize = targetLayout.pageSizeTokens();
        this.cpSize = b.cpSize();
        this.rank = b.cpRank();
        this.lanes = b.lanes();
        this.writePolicy = b.writePolicy();
        this.configuredMode = b.backupMode();
        this.clock = b.clock();
        this.checkThread = b.checkThread();
        this.targetLayers = targetLayout.layerCount();
        this.draftLayers = draftLayout == null ? 0 : draftLayout.layerCount();

        this.fallbacks = new FallbackLog(metrics, rank);
        this.tree = RadixTree.builder().pageSize(pageSize).devicePolicy(b.deviceEviction()).hostPolicy(b.hostEviction()).build();

        // Native resources and threads: build() either returns a working controller or leaves nothing behind.
        this.health = new GroupHealth(rank, clock, metrics);
        this.resources = ControllerResources.allocate(b, tree, metrics, agentErrors, health);
        this.hostPool = resources.hostPool;
        this.draftPool = resources.draftPool;
        this.backupStream = resources.backupStream;
        this.computeStream = resources.computeStream;
        this.loader = resources.loader;
        this.slotPool = resources.slotPool;
        this.ring = resources.ring;
        this.commands = resources.commands;
        this.acks = resources.acks;
        this.submitter = resources.submitter;
        this.completion = resources.completion;
        this.guardedSubmitter = resources.guardedSubmitter;
        this.guardedCompletion = resources.guardedCompletion;
        this.submitterRunner = resources.submitterRunner;
        this.allocator = new HostPageAllocator(hostPool.pageCount());
        this.budget = new HostBudget(lanes, cpSize, hostPool.pageCount(), metrics);
        this.targetPageBytes = hostPool.bytesPerPageAllLayers();
        this.draftPageBytes = draftPool == null ? 0 : draftPool.bytesPerPageAllLayers();
        this.room = new HostEvictingAllocator(tree, budget, allocator, hostPool, draftPool, cpSize, metrics);
        this.backups = new BackupBook(this, b, tree, room, budget, metrics, slotPool, commands, targetPageBytes,
            draftPageBytes, health);
        // a group of one answers at once: only a real group's agreement is watched
        this.watch = cpSize > 1 ? AgreementWatchdog.watch(metrics, rank, b.watchdogNs()) : AgreementWatchdog.disabled();
        this.channels = b.loadAgreement() == null
            ? new AgreementChannel[] {new AgreementChannel(b.agreement(), rank, cpSize, watch, clock, true,
                backups.fifo(), loader.fifo())}
            : new AgreementChannel[] {new AgreementChannel(b.agreement(), rank, cpSize, watch, clock, true,
                backups.fifo()), new AgreementChannel(b.loadAgreement(), rank, cpSize, watch, clock, false,
                loader.fifo())};
        this.deviceEviction = new WriteBackEviction(this, writePolicy, tree, draftLayout != null, metrics, slotPool,
            runtime, computeStream, commands, fallbacks);
        this.leases = new HostLeases(this, room, budget, allocator, tree, lanes, cpSize, rank, pageSize, draftPool);
        this.withdrawal = new Withdrawal(tree, backups, metrics);
        this.loadOverlap = b.loadOverlap();
        if (b.loadOverlap() == io.hicache.core.LoadOverlap.PREVIOUS_BATCH && OVERLAP_REASONS_LOGGED.add(b.loadOverlapReason())) {
            LOG.warn("HiCache loads overlap with the previous batch, not the forward that uses them ({}): a host hit"
                + " waits for the whole load and its agreement before its request runs", b.loadOverlapReason());
        }
        if (configuredMode == BackupMode.ALL_LAYERS && ALL_LAYERS_LOGGED.compareAndSet(false, true)) {
            LOG.warn("HiCache backup mode ALL_LAYERS configured: every layer is copied after the forward, "
                + "so copies no longer overlap with compute (said once per process)");
        }
    }

    /** A builder; see {@link ControllerBuilder} for the required parts. */
    public static ControllerBuilder builder() {
        return new ControllerBuilder();
    }

    /**
     * Builds a controller from concluded settings (see {@link ControllerBuilder}); allocates the host
     * pool, streams and events, released again if any step fails.
     *
     * @throws io.hicache.cuda.CudaException if the runtime fails
     */
    public static HiCacheController create(ControllerConfig config) {
        return new HiCacheController(java.util.Objects.requireNonNull(config, "config"));
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
        return match(tokens, from, len, out, true);
    }

    /**
     * As {@link #match(int[], int, int, MatchResult)}; {@code countHit} false leaves the device hit uncounted (a
     * request scope counts it once per request). Scheduler thread; allocation-free.
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out, boolean countHit) {
        checkOwner();
        tree.match(tokens, from, len, out);
        if (health.degraded()) {
            out.dropHostExtension(); // a degraded group completes no load: no host hit to report
        }
        if (countHit) {
            metrics.add(Metric.DEVICE_HIT_TOKENS, out.deviceTokenCount());
        }
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

    /** Host pages reserved or committed on the group's fullest rank (see {@link #reserve}). Scheduler thread. */
    public long hostBudgetUsedPages() {
        return budget.usedPages();
    }

    /** Host pages the budget allows each rank. */
    public long hostBudgetCapacityPages() {
        return budget.capacityPages();
    }

    /** Backups not yet agreed and retired (reserved, copying, sealed, or aborted awaiting agreement). */
    public int backupsInFlight() {
        return backups.size();
    }

    /** The CP group's health as this rank knows it. Any thread (a volatile read). */
    public io.hicache.core.cp.GroupState groupState() {
        return health.state();
    }

    /** Agreement rounds applied on the backups' channel. Scheduler thread. */
    public long agreementRounds() {
        return channels[0].roundsApplied();
    }

    /** Host values revoked but not yet withdrawn (a load or an L3 write still reads them). Scheduler thread. */
    public int revocationsPending() {
        return backups.revocationsPending();
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
     * Runs one duty cycle of the submitter, then of the completion agent ({@link ThreadingMode#INVOKER} only). Errors
     * take the same path as on the agents' own threads ({@link GuardedAgent}): recorded and counted in {@link
     * Metric#AGENT_ERRORS}, and the agents go on; only a fatal {@link VirtualMachineError} is rethrown.
     *
     * @return work done
     */
    public int doAgentWork() {
        if (closed) {
            throw new IllegalStateException("doAgentWork on a closed controller");
        }
        if (submitterRunner != null) {
            throw new IllegalStateException("doAgentWork in DEDICATED threading mode: the agents run on their own threads");
        }
        return guardedSubmitter.doWork() + guardedCompletion.doWork();
    }

    // ------------------------------------------------------------------ reserve

    /**
     * Reserves a backup of {@code node}'s pages: allocates host pages for the positions this rank owns,
     * marks the node pending (a device hit only: not a host hit, not evictable) and locks its device pages.
     *
     * <p>Host room is counted for every rank of the group on every rank: a node costs each rank the positions it
     * owns, and fits when it fits on the rank with the least room, so every rank of the group makes the same
     * decision and evicts the same nodes without a collective. With no room, host eviction frees
     * least-recently-used host-only leaves until it fits or none is left;
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
        return backups.reserve(node, withDraft);
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
        return backups.reserveByPolicy(node, withDraft, out);
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
        boolean allLayers = configuredMode == BackupMode.ALL_LAYERS || fallbacks.hooksUnavailable();
        slot.allLayers = allLayers;
        for (int i = 0; i < n; i++) {
            Backup b = backups.get(i);
            b.slot = slot;
            b.state = BackupState.COPYING;
            slot.add(b);
        }
        if (allLayers) {
            fallbacks.count(configuredMode == BackupMode.ALL_LAYERS ? FallbackReason.CONFIGURED
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
        if (closed) {
            throw new IllegalStateException("declareHooksUnavailable on a closed controller");
        }
        if (reason == null || reason.isBlank()) {
            throw new IllegalArgumentException("declareHooksUnavailable needs a reason");
        }
        fallbacks.declareHooksUnavailable(reason);
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
        backups.resetChanges();
        ForwardSlot s;
        while ((s = acks.poll()) != null) {
            onAck(s);
        }
        loader.poll();
        backups.expireLeases();
        backups.expireSealed(channels[0].openForNs());
        deviceEviction.issue();
        for (AgreementChannel ch : channels) {
            ch.run();
        }
        if (backups.revocationsPending() > 0) {
            backups.revokePending();
        }
        int loads = loader.fifo().takeRetired();
        if (stickyError == null && loader.stickyStatus() != 0) {
            int status = loader.stickyStatus(); // a load met a sticky error: the context is dead for backups too
            stickyError = new CudaException(status, runtime.errorName(status), runtime.errorString(status), "load copies");
            stopAfterStickyError();
        }
        if (tier != null && stickyError == null) {
            tier.poll();
        }
        return backups.changes() + loads;
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
        if (status == 0 && !slot.agentError && slot.firstCopyNs > 0) {
            metrics.backupBandwidth().record(slot.copiedBytes, slot.completedNs - slot.firstCopyNs);
        }
        long now = clock.getAsLong();
        for (int i = 0; i < slot.backupCount; i++) {
            Backup b = slot.backups[i];
            b.forwardEndNs = slot.endNs;
            b.slot = null;
            if (b.state.terminal()) {
                continue; // already released when an earlier ack of this poll stopped the controller (sticky error)
            } else if (b.state == BackupState.DRAINING) {
                backups.fail(b, b.abortReason);
            } else if (slot.agentError) {
                backups.fail(b, AbortReason.AGENT_ERROR);
            } else if (status != 0) {
                backups.fail(b, AbortReason.CUDA_ERROR);
            } else if (slot.cancelled) {
                backups.fail(b, AbortReason.LEASE_EXPIRED);
            } else if (slot.missingTarget) {
                backups.fail(b, AbortReason.TARGET_LAYER_MISSING);
            } else if (slot.missingDraft && b.withDraft) {
                backups.fail(b, AbortReason.DRAFT_LAYER_MISSING);
            } else {
                b.state = BackupState.SEALED;
                b.local = Backup.Local.OK;
                b.resolvedAtNs = now;
            }
        }
        slotPool.onAcked(slot);
        if (stickyError != null) {
            stopAfterStickyError();
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
        return backups.markAborted(backup, reason);
    }

    /**
     * A failed load invalidated the node of {@code b} (it was computed in the forward that loaded its prefix): the
     * backup aborts with {@link AbortReason#LOAD_FAILED} like an engine's abort, and is released once its copies
     * drained and the group agreed. Called by the tree from {@code failLoad} through {@link Backup#onInvalidated}.
     */
    void dependencyFailed(Backup b) {
        backups.markAborted(b, AbortReason.LOAD_FAILED);
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
     * chain is host-only again, whatever was inserted below it is dropped, a load begun below it fails too, and
     * every page returns to {@code allocator} once. With {@link io.hicache.core.LoadOverlap#PREVIOUS_BATCH} the
     * chain's nodes stay host-only until the load is acknowledged on every rank; a chain node another load is
     * bringing back ends the chain, and a chain node that an {@code insert} adopts meanwhile keeps the inserted
     * pages.
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
     * {@link Metric#LOAD_JOINS} (every join: this call cannot tell a request's own load). Null when the match
     * reaches no loading node.
     */
    public LoadOp joinLoad(MatchResult match) {
        checkUsable();
        if (match == null) {
            throw new IllegalArgumentException("match must not be null");
        }
        return loader.joinLoad(match, 0, true);
    }

    /**
     * As {@link #joinLoad(MatchResult)} for request {@code requestId}: counted in {@link Metric#LOAD_JOINS} only when
     * the load is another request's (its {@link LoadOp#requestId()} differs).
     */
    public LoadOp joinLoad(MatchResult match, long requestId) {
        checkUsable();
        if (match == null) {
            throw new IllegalArgumentException("match must not be null");
        }
        return loader.joinLoad(match, requestId, false);
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
        return deviceEviction.evict(pages, sink);
    }

    /**
     * Evicts at least {@code pages} host pages if the tree can (host-only leaves in policy order, never protected
     * ones), freeing them and their budget; the host eviction observer sees each first.
     *
     * @return host pages evicted
     */
    public int evictHost(int pages) {
        checkUsable();
        if (pages < 0) {
            throw new IllegalArgumentException("evictHost(" + pages + "): pages must be >= 0");
        }
        return room.evict(pages);
    }

    /**
     * Withdraws KV a request inserted but never computed: the pages of the cached path of {@code tokens[from, from +
     * len)} from page {@code computedTokens / pageSize} on (a page computed only in part counts as not computed), and
     * everything cached below them, whose KV was computed over them. A node there holding a committed host copy keeps
     * it (it adopted the request's pages over a host-only node) and drops only its device pages; every other node is
     * removed from the tree. Backups of the withdrawn nodes abort with {@code reason}; the device pages go to
     * {@code sink} now, or, where such a backup's copies may still read them, once they drained and the group agreed
     * (a later {@link #poll()}). Afterwards no match returns them; the computed pages before them stay cached.
     *
     * @return device pages taken out of the tree (0 when the path holds nothing from that page on)
     * @throws IllegalArgumentException on a null argument, a range outside {@code tokens} or a negative
     *     {@code computedTokens}
     * @throws IllegalStateException if the pages there are locked beyond their own backups (another request, or a
     *     load, uses them; or the caller still holds its own lock), protected, or being loaded: nothing is withdrawn
     *     then (a node may have been split at the page); or the controller is closed or stopped
     */
    public int withdrawUncomputed(int[] tokens, int from, int len, int computedTokens, AbortReason reason,
                                  DevicePageSink sink) {
        checkUsable();
        if (reason == null || sink == null) {
            throw new IllegalArgumentException("reason and sink must not be null");
        }
        if (computedTokens < 0) {
            throw new IllegalArgumentException("computedTokens " + computedTokens + " must be >= 0");
        }
        if (tokens == null || from < 0 || len < 0 || from > tokens.length - len) {
            throw new IllegalArgumentException("tokens range [" + from + ", " + from + " + " + len + ") outside "
                + (tokens == null ? "a null array" : "[0, " + tokens.length + ")"));
        }
        return withdrawal.withdraw(tokens, from, len, computedTokens, reason, sink);
    }

    // ------------------------------------------------------------------ storage tier hooks

    /**
     * Attaches a lower tier that this controller's own calls drive from now on (see {@link StoragePort.Tier}): at
     * most one. Scheduler thread.
     *
     * @throws IllegalArgumentException if {@code attachment} is null
     * @throws IllegalStateException if a tier is already attached, or the controller is closed or stopped
     */
    void attachTier(StoragePort.Tier attachment) {
        checkUsable();
        if (attachment == null) {
            throw new IllegalArgumentException("tier must not be null");
        }
        if (tier != null) {
            throw new IllegalStateException("this cache already has a storage tier attached; close it first");
        }
        tier = attachment;
    }

    /**
     * The port a lower storage tier attaches to this controller through: the operations it needs and nothing more
     * (see {@link StoragePort}). One per controller. Any thread.
     */
    public StoragePort storagePort() {
        return storagePort;
    }

    /** Tells the attached tier, if any, that {@code b} committed (from {@link BackupBook}). Scheduler thread. */
    void tierCommitted(Backup b) {
        if (tier != null) {
            tier.onCommitted(b);
        }
    }

    /** Detaches {@code attachment} if it is the attached tier (it closed itself). Scheduler thread. */
    void detachTier(StoragePort.Tier attachment) {
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
    void hostEvictionObserver(StoragePort.EvictionObserver observer) {
        checkOwner();
        room.observer(observer);
    }

    /**
     * Sets the observer of this cache's tier transitions (the KV-events port; null for none): pages matchable on
     * the device, host values committed (after the CP group agreed) or published, pages leaving a tier. A lower
     * tier reports its L3 commits and deletes to {@link #tierObserver()}. Scheduler thread.
     */
    public void tierObserver(io.hicache.radix.TierListener observer) {
        checkOwner();
        tree.tierObserver(observer);
    }

    /** The observer of tier transitions, or null. Scheduler thread. */
    public io.hicache.radix.TierListener tierObserver() {
        return tree.tierObserver();
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
        return leases.reserve(startPage, pages, totalPages);
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
        return leases.publish(lease, tokens, from, pages, hashes, hashOff, withDraft);
    }

    /**
     * Ends {@code lease} without publishing: frees its pages and budget.
     *
     * @return false if it had already ended
     */
    public boolean releaseHost(HostLease lease) {
        checkOwner();
        return leases.end(lease, closed);
    }

    /** Prefetch leases not yet ended. Scheduler thread. */
    public int hostLeasesOpen() {
        return leases.openCount();
    }

    // ------------------------------------------------------------------ failure and close

    private void stopAfterStickyError() {
        LOG.error("HiCache stops: sticky CUDA error {} poisoned the context; aborting {} backups in flight",
            stickyError.errorName(), backups.size());
        int aborted = backups.releaseAll(AbortReason.CUDA_ERROR);
        HiCacheEvents.stickyError(stickyError.errorName(), stickyError.code(), stickyError.call(), aborted, rank);
        // the entries stay, failed, so the other ranks learn of them through the agreement rounds; an agreement
        // across processes is told this rank is gone, so the group degrades without waiting for its timeout
        leaveGroup();
    }

    /** Tells every agreement this rank stops taking part (once). */
    private void leaveGroup() {
        if (leftGroup) {
            return;
        }
        leftGroup = true;
        health.leftOnPurpose();
        for (AgreementChannel ch : channels) {
            try {
                ch.agreement().leave(rank);
            } catch (RuntimeException e) {
                LOG.warn("HiCache CP rank {}: leaving the group failed: {}", rank, e.toString());
            }
        }
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
        StoragePort.Tier attached = tier;
        if (attached != null) {
            attached.close(); // first, while the host memory its I/O uses is live; if it throws, nothing is closed
            tier = null;
        }
        closed = true;
        ring.close(); // hooks and waitLayer throw from now on, touching nothing
        resources.quiesce(); // agents stopped, queued copies finished
        loader.abandonAll();
        leases.endAll();
        backups.releaseAll(AbortReason.SHUTDOWN);
        backups.clear();
        leaveGroup(); // the other ranks degrade at once instead of waiting for their timeout
        watch.close();
        resources.release();
        allocator.close();
        agentErrors.logSummary();
    }

    /** True once {@link #close()} ran. Any thread (a volatile read). */
    public boolean isClosed() {
        return closed;
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
