package io.hicache.core;

import io.hicache.core.internal.HiCacheController;
import io.hicache.core.metrics.Metric;
import io.hicache.core.metrics.MetricsSnapshot;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaStream;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.TierListener;

import java.util.ArrayList;
import java.util.List;

/**
 * The hierarchical KV cache of one serving-engine rank: a radix tree of cached token prefixes whose device
 * pages are backed up to pinned host memory layer by layer during the forward that computed them, committed
 * once the copies are acknowledged (on every rank of a context-parallel group), and loaded back on a host hit.
 *
 * <p>This is the whole engine-facing API; see the package overview for the types it uses. A typical
 * scheduler step: {@link #match} the prompt, {@link #loadBack} its host-only part, {@link #insert} the pages
 * computed, {@link #reserveByPolicy} backups of the inserted path, {@link #beginForward} to get the
 * {@link ForwardHooks} for the forward thread, and {@link #poll} to commit what finished. Under device memory
 * pressure {@link #evictDevice} frees pages whose KV stays on the host.
 *
 * <p><b>Threads.</b> One <em>scheduler thread</em> owns the cache: every method not marked otherwise must be
 * called from it (the first call binds it; a call from another thread throws {@link IllegalStateException}
 * unless {@link Builder#checkThread(boolean) checkThread(false)}). The <em>forward thread</em> calls the
 * {@link ForwardHooks} hooks, {@link #waitLayer} and {@link #waitDraftLayer}. With
 * {@link ThreadingMode#DEDICATED} the cache runs two agent threads of its own (submitter and completion); with
 * {@link ThreadingMode#INVOKER} the caller steps them with {@link #doAgentWork()}.
 *
 * <p><b>Failures.</b> Misuse (a bad argument, a handle from another cache, a call in the wrong state) throws
 * {@link IllegalArgumentException} or {@link IllegalStateException} naming what was wrong, and changes
 * nothing. After {@link #close()} every call that acts or hands out native state (the tree and its view, the
 * host pool view, backups, loads, hooks and {@code waitLayer}, eviction, agent work, {@link #computeStream()},
 * {@link #backupStream()}, {@link #loadStream()})
 * throws {@link IllegalStateException} naming "closed" without touching CUDA; {@link #metrics()}, {@link #metric},
 * {@link #metricsView()}, {@link #isClosed()}, {@link #stickyError()} and the configuration accessors
 * ({@link #rank()}, {@link #pageSize()}, {@link #targetLayers()}, {@link #draftLayers()}) keep answering, and
 * {@code close} is idempotent. A CUDA error while copying aborts only the backups or loads it touched (their
 * pages are released, nothing is published); a sticky CUDA error (the device is lost) stops the cache:
 * {@link #stickyError()} reports it and later scheduler calls throw {@link IllegalStateException}.
 */
public final class HiCache implements AutoCloseable {
    private final HiCacheController controller;
    private final TreeView treeView;
    private final HostPoolView hostPoolView;
    /** Scratch for {@link #reserveByPolicy}: the controller's list type is its own backup class. */
    private final ArrayList<io.hicache.core.internal.Backup> reserved = new ArrayList<>();

    private HiCache(HiCacheController controller) {
        this.controller = controller;
        this.treeView = new FacadeViews.Tree(controller);
        this.hostPoolView = new FacadeViews.Pool(controller);
    }

    /**
     * The controller behind this facade, for the project's test door in this package (the deterministic suites read
     * internal state for their invariants through it). Package-private: no module, and no engine, reaches it.
     */
    HiCacheController controller() {
        return controller;
    }

    /** A builder; see {@link Builder} for the required settings. */
    public static Builder builder() {
        return new Builder();
    }

    // ------------------------------------------------------------------ tree

    /**
     * Opens the scope of one request ({@code requestId}: the engine's id, reported back through the
     * {@link LoadListener}): a {@link CacheRequest} whose matches, loads and inserts count each prompt token once on
     * the tier it came from, read back as the request's {@code cached_tokens}; which holds the request's device lock;
     * and which ends it with {@link CacheRequest#finish()} or, cancelled, {@link CacheRequest#cancel}. Allocates one
     * small object. Scheduler thread.
     *
     * @throws IllegalStateException if the cache is closed
     */
    public CacheRequest openRequest(long requestId) {
        checkOpen();
        return new CacheRequest(this, requestId);
    }

    /**
     * Matches {@code tokens[from, from + len)} against the cached prefixes (whole pages only): fills {@code out}
     * with the device hit (its pages), the host-only extension beyond it and the last device and host nodes.
     * Touches the access order of the matched nodes and counts the device hit in {@link
     * io.hicache.core.metrics.Metric#DEVICE_HIT_TOKENS}, as one request's: an engine that matches a request more
     * than once (again after {@link #loadBack}, or per chunk of a chunked prefill) matches through its
     * {@link CacheRequest}, which counts each token once. An attached L3 storage tier sees the match (its
     * {@code write_through_selective} counts hits). While the CP group is degraded ({@link #groupState()}) the host
     * extension is dropped: no load could complete. Scheduler thread.
     *
     * @return {@code out}
     * @throws IllegalArgumentException on null arrays or a range outside {@code tokens}
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out) {
        checkOpen();
        return controller.match(tokens, from, len, out);
    }

    /** {@link #match} without counting the hit ({@link CacheRequest} counts it). */
    MatchResult matchUncounted(int[] tokens, int from, int len, MatchResult out) {
        checkOpen();
        return controller.match(tokens, from, len, out, false);
    }

    /** Counts device-hit tokens a {@link CacheRequest} had not counted yet. */
    void countDeviceHit(int tokens) {
        controller.metrics().add(Metric.DEVICE_HIT_TOKENS, tokens);
    }

    /**
     * Pages of the longest cached prefix of {@code tokens[from, from + len)} (on the device, loading, or committed
     * on the host), counted without changing the cache: no node is split, no access order or hit count moves, no
     * metric counts it and no storage tier sees it. For a router or an admission policy that compares caches
     * before it picks one; {@link #match} is the call for the request being served. Scheduler thread;
     * allocation-free.
     *
     * @throws IllegalArgumentException on a null array or a range outside {@code tokens}
     * @throws IllegalStateException if the cache is closed
     */
    public int cachedPrefixPages(int[] tokens, int from, int len) {
        return openTree().cachedPrefixPages(tokens, from, len);
    }

    /**
     * Pages of the longest prefix of {@code tokens[from, from + len)} on the device (loading included): the device
     * part of {@link #cachedPrefixPages}, counted the same way, without changing the cache. For a router that weighs
     * a device hit above a host hit. Scheduler thread; allocation-free.
     *
     * @throws IllegalArgumentException on a null array or a range outside {@code tokens}
     * @throws IllegalStateException if the cache is closed
     */
    public int devicePrefixPages(int[] tokens, int from, int len) {
        return openTree().devicePrefixPages(tokens, from, len);
    }

    /**
     * Inserts the whole pages of {@code tokens[from, from + len)} with their device pages
     * {@code devicePages[pagesFrom, pagesFrom + len / pageSize)}. Pages already cached on device stay the tree's: for
     * the prefix the tree held ({@code [pagesFrom, pagesFrom + r / pageSize)}, where r is the return value) the tree
     * keeps its own pages, so <b>the caller frees those of its pages there that are not the tree's page at that
     * position</b> (a page list that starts with the match's {@link MatchResult#devicePage(int)} hands the tree its
     * own pages back: those are not freed; pages allocated afresh for a prefix another request inserted meanwhile
     * are); <b>every later page now belongs to the cache</b>. {@link CacheRequest#insert} does this bookkeeping.
     * {@link #lastInsertNode()} is the node the insert ended on, the one to lock while the request runs (a lock on
     * the match alone leaves the new pages evictable once backed up) and to pass to {@link #reserveByPolicy}.
     * Inserted pages are matchable at once: until the forward that computes them has been launched, no other
     * request may use them (its kernels, and any backup of the path, would read pages not yet written); a request
     * cancelled before that withdraws them ({@link #withdrawUncomputed}). Scheduler thread.
     *
     * @return number of tokens already present on device (a multiple of the page size)
     * @throws IllegalArgumentException on null arrays or ranges outside the arrays
     */
    public int insert(int[] tokens, int from, int len, int[] devicePages, int pagesFrom) {
        return openTree().insert(tokens, from, len, devicePages, pagesFrom);
    }

    /** The node the last {@link #insert} ended on (the root if it inserted nothing). Scheduler thread. */
    public RadixNode lastInsertNode() {
        return openTree().lastInsertNode();
    }

    /**
     * Locks the path from {@code node} to the root on device while a request uses it (SGLang's
     * {@code inc_lock_ref}): locked nodes are never evicted. Locks nest; each needs one {@link #unlock}. Locking
     * the root (an empty match) is a no-op. Scheduler thread.
     *
     * @throws IllegalArgumentException if {@code node} is null
     * @throws IllegalStateException if {@code node} was removed from the tree, or the cache is closed
     */
    public void lock(RadixNode node) {
        openTree().lock(node);
    }

    /**
     * Releases one {@link #lock} of the path from {@code node}. Scheduler thread.
     *
     * @throws IllegalArgumentException if {@code node} is null
     * @throws IllegalStateException if a node on the path is not locked (nothing is changed then), {@code node}
     *     was removed from the tree, or the cache is closed
     */
    public void unlock(RadixNode node) {
        openTree().unlock(node);
    }

    /**
     * The port a storage tier implementation attaches to this cache through (see {@link
     * io.hicache.core.spi.StoragePort}); one per cache. Not for engines: its package is exported only to the storage
     * module, and an engine attaches the L3 tier with {@code io.hicache.storage.L3Tier.attach}. Any thread.
     */
    // "exports": the SPI type is exported to io.hicache.storage alone, on purpose (engines cannot name it)
    @SuppressWarnings("exports")
    public io.hicache.core.spi.StoragePort storagePort() {
        return controller.storagePort();
    }

    /** A read-only view of the tree's sizes and nodes. Scheduler thread, as every call on it; each throws once closed. */
    public TreeView tree() {
        return treeView;
    }

    /**
     * Sets the listener told of this cache's tier transitions (null for none), replacing the one set before: what
     * KV events for fleet routers are made of (the {@code hicache-events} module sets one; docs/EVENTS.md). An
     * attached L3 storage tier reports its transitions to it too. Scheduler thread.
     *
     * @throws IllegalStateException if called from another thread than the scheduler thread
     */
    public void tierListener(TierListener listener) {
        controller.tierObserver(listener);
    }

    /** The listener set with {@link #tierListener(TierListener)}, or null. Scheduler thread. */
    public TierListener tierListener() {
        return controller.tierObserver();
    }

    // ------------------------------------------------------------------ backups

    /**
     * Reserves the backup of {@code node} to host memory: host pages are allocated and the node's device pages
     * locked until the backup commits or aborts. Host room is counted for every rank of a CP group on every rank
     * (each holds the pages it owns) so every rank decides alike; with no room host eviction runs, and if there
     * is still none the result is null (counted). Scheduler thread.
     *
     * @param withDraft whether the backup also carries the draft/MTP KV (needs a draft layout)
     * @return the backup, or null when the host pool has no room
     * @throws IllegalStateException if the node is the root, detached, device-evicted, already backed up or
     *     pending, or its parent is neither the root nor backed up; or the cache is closed or stopped
     * @throws IllegalArgumentException if {@code node} is null, or {@code withDraft} without a draft layout
     */
    public BackupHandle reserve(RadixNode node, boolean withDraft) {
        checkOpen();
        return controller.reserve(node, withDraft);
    }

    /**
     * Applies the write policy to the path ending at {@code node} (normally {@link #lastInsertNode()}): from the
     * top, every node not yet backed up whose hit count reached the policy's threshold is reserved, stopping at
     * the first that does not qualify or when host room runs out. Nothing under {@link WritePolicy#WRITE_BACK}.
     * Scheduler thread.
     *
     * @param out receives the backups reserved, top first
     * @return how many were reserved
     * @throws IllegalArgumentException if {@code node} or {@code out} is null
     * @throws IllegalStateException if the cache is closed or stopped
     */
    public int reserveByPolicy(RadixNode node, boolean withDraft, List<? super BackupHandle> out) {
        checkOpen();
        if (out == null) {
            throw new IllegalArgumentException("out must not be null");
        }
        reserved.clear();
        int n = controller.reserveByPolicy(node, withDraft, reserved);
        for (int i = 0, size = reserved.size(); i < size; i++) {
            out.add(reserved.get(i));
        }
        reserved.clear();
        return n;
    }

    /**
     * Starts the backups' copies for one forward and returns its hooks, to hand to the forward thread. Each
     * backup must be {@link BackupState#RESERVED} and becomes {@link BackupState#COPYING}. An empty list gives a
     * handle whose hooks only validate. Scheduler thread; allocation-free in steady state.
     *
     * @throws IllegalArgumentException if a backup was not created by this cache
     * @throws IllegalStateException if a backup is not RESERVED, more forwards than
     *     {@link Builder#maxForwardsInFlight} are in flight, or the cache is closed or stopped
     */
    @SuppressWarnings("unchecked")
    public ForwardHooks beginForward(List<? extends BackupHandle> backups) {
        checkOpen();
        for (int i = 0, n = backups.size(); i < n; i++) {
            own(backups.get(i));
        }
        return controller.beginForward((List<io.hicache.core.internal.Backup>) (List<?>) backups);
    }

    /**
     * Declares that the engine cannot call per-layer hooks from now on (e.g. it replays the forward as a CUDA
     * graph): later forwards copy every layer after the forward. Logs a rate-limited WARN naming the reason and
     * counts a fallback per such forward. Any thread.
     *
     * @throws IllegalArgumentException if {@code reason} is null or blank
     * @throws IllegalStateException if the cache is closed
     */
    public void declareHooksUnavailable(String reason) {
        checkOpen();
        controller.declareHooksUnavailable(reason);
    }

    /**
     * The scheduler's duty cycle: collects finished forwards, aborts backups whose lease expired, runs one round
     * of rank agreement and commits (publishes the host copy on the node) or aborts what the group agreed on;
     * finishes loads the same way; then advances an attached L3 storage tier ({@code io.hicache.storage.L3Tier}:
     * its writes and prefetches, whose I/O runs on the store's threads). Call it every scheduler step. Scheduler
     * thread; allocation-free in steady state.
     *
     * @return backups committed or aborted by this call
     * @throws IllegalStateException if the cache is closed
     */
    public int poll() {
        checkOpen();
        return controller.poll();
    }

    /**
     * Aborts a backup from any non-terminal state; it is never published. Its pages stay held until its copies
     * have drained and the group agreed (a later {@link #poll()} releases them). In a CP group, a backup this
     * rank already reported complete in a still-open agreement round may commit anyway (its bytes are whole).
     * Scheduler thread.
     *
     * @return true if this call recorded the abort; false if the backup had already committed or aborted
     * @throws IllegalArgumentException if the backup or reason is null, or the backup is not this cache's
     */
    public boolean abort(BackupHandle backup, AbortReason reason) {
        checkOpen();
        if (backup == null) {
            throw new IllegalArgumentException("backup must not be null");
        }
        return controller.abort(own(backup), reason);
    }

    // ------------------------------------------------------------------ loads

    /**
     * Queues the load of {@code match}'s host-only pages (those after its device prefix) back to the device,
     * allocating their device pages from {@code allocator} now (all or nothing). Skipped (null) when the host
     * hit is below the load threshold or above {@code memoryQuotaTokens}; refused (null, counted) when the
     * allocator has no pages even after one device eviction. The load is issued by the next
     * {@link #startLoading()}. With {@link LoadOverlap#SAME_FORWARD} (the default) the chain is a LOADING device
     * prefix from now on: a new {@link #match} counts its pages as device pages (beyond
     * {@link MatchResult#readyPageCount()}), the request runs in the forward right after {@link #startLoading()},
     * calling {@link #waitLayer} before each layer, and may {@link #insert} below the chain. If the load fails
     * ({@link LoadListener#onLoadFailed}) the chain is host-only again, nodes inserted below it are dropped (their
     * KV was computed over the missing bytes) and their pages, like the load's, return to {@code allocator}; a load
     * begun below its chain (a later request's, which is the one that request joins) fails too; the engine
     * recomputes the requests that used them. With {@link LoadOverlap#PREVIOUS_BATCH} the chain becomes a
     * device hit only once the load is acknowledged on every rank. Scheduler thread.
     *
     * @param requestId the engine's id of the request, reported back through the {@link LoadListener}
     * @return the load, or null when nothing is loaded
     * @throws IllegalStateException if the cache is closed or stopped
     */
    public LoadHandle loadBack(MatchResult match, long requestId, int memoryQuotaTokens, DevicePageAllocator allocator) {
        checkOpen();
        return controller.loadBack(match, requestId, memoryQuotaTokens, allocator);
    }

    /**
     * Issues every queued load on the load stream, layer by layer, after the compute stream's current work.
     * Scheduler thread, before the forward that needs the loaded KV.
     *
     * @return the consumer token to pass to {@link #waitLayer}, or -1 when nothing was queued
     * @throws IllegalStateException if too many load batches are unacknowledged, or the cache is closed
     */
    public long startLoading() {
        checkOpen();
        return controller.startLoading();
    }

    /**
     * The load a request must wait for when its {@link #match} reached nodes still loading
     * ({@link MatchResult#loadingNode()} not null): the request joins it and passes its {@link LoadHandle#consumer()}
     * to {@link #waitLayer} in its own forward (after the {@link #startLoading()} that issued it). Counted in
     * {@link io.hicache.core.metrics.Metric#LOAD_JOINS}. If that load fails the joiner is told nothing
     * directly: the engine recomputes every request that used it on {@link LoadListener#onLoadFailed}. Scheduler
     * thread.
     *
     * @return the load, or null when the match reaches no loading node
     * @throws IllegalArgumentException if {@code match} is null
     * @throws IllegalStateException if the cache is closed or stopped
     */
    public LoadHandle joinLoad(MatchResult match) {
        checkOpen();
        return controller.joinLoad(match);
    }

    /**
     * As {@link #joinLoad(MatchResult)} for request {@code requestId} (the id it gave {@link #loadBack}): the load
     * its match reaches, its own included (for the consumer token of its own load, after a re-match), counted in
     * {@link io.hicache.core.metrics.Metric#LOAD_JOINS} only when it is another request's load. Scheduler thread.
     *
     * @return the load, or null when the match reaches no loading node
     * @throws IllegalArgumentException if {@code match} is null
     * @throws IllegalStateException if the cache is closed or stopped
     */
    public LoadHandle joinLoad(MatchResult match, long requestId) {
        checkOpen();
        return controller.joinLoad(match, requestId);
    }

    /**
     * Makes the compute stream wait on the GPU (never the CPU) for target layer {@code layer} of the loads of
     * {@code consumer} (from {@link #startLoading()} or {@link LoadHandle#consumer()}): call it before computing
     * the layer, so the layer's compute starts only once its load has landed while later layers are still being
     * copied. With CP each rank waits for the lanes it loads; agreement then decides only whether the whole load
     * succeeded. A no-op for token -1 or a load long finished. Forward thread; allocation-free; never blocks the
     * CPU.
     *
     * @throws IllegalArgumentException if {@code layer} is outside {@code [0, targetLayers())}
     * @throws IllegalStateException if the cache is closed
     * @throws CudaException if the runtime refuses the wait (a dead context: the load then fails and, for a sticky
     *     error, the cache stops at the next {@link #poll()})
     */
    public void waitLayer(long consumer, int layer) {
        controller.waitLayer(consumer, layer);
    }

    /** As {@link #waitLayer} for draft layer {@code layer}. Forward thread. */
    public void waitDraftLayer(long consumer, int layer) {
        controller.waitDraftLayer(consumer, layer);
    }

    // ------------------------------------------------------------------ withdrawal

    /**
     * Withdraws what a cancelled or preempted request inserted but never computed: the cached pages of
     * {@code tokens[from, from + len)} from page {@code computedTokens / pageSize} on (a page computed only in part
     * counts as not computed; {@code computedTokens} at or beyond what the request found cached), and everything
     * cached below them, whose KV would have been computed over them. They leave the tree: no later match returns
     * them. A node there that holds a committed host copy (it adopted the request's pages over a host-only node)
     * keeps its host copy and drops only its device pages. Their backups abort with {@code reason}. Their device
     * pages go to {@code sink}: now, or, where a backup's copies may still read them, once those drained and the
     * group agreed (a later {@link #poll()}). The pages before {@code computedTokens} stay cached. Call it after
     * unlocking what the request locked; {@link CacheRequest#cancel} does all of this. In a CP group every rank makes
     * the same call. Scheduler thread.
     *
     * @return device pages taken out of the tree (0 when the path holds no device page from that page on)
     * @throws IllegalArgumentException on a null argument, a range outside {@code tokens} or a negative
     *     {@code computedTokens}
     * @throws IllegalStateException when nothing could be withdrawn because the pages are still in use: locked
     *     beyond their own backups (another request matched them, a load is anchored there, or the caller still
     *     holds its lock), protected by a load or storage write, or being loaded (a node may then have been split at
     *     the page, which changes no match); or if the cache is closed or stopped
     */
    public int withdrawUncomputed(int[] tokens, int from, int len, int computedTokens, AbortReason reason,
                                  DevicePageSink sink) {
        checkOpen();
        return controller.withdrawUncomputed(tokens, from, len, computedTokens, reason, sink);
    }

    // ------------------------------------------------------------------ device eviction

    /**
     * Evicts at least {@code pages} device pages if the tree can (policy order, unlocked leaves without a
     * backup in flight); the freed pages go to {@code sink}. Their KV stays reachable where it was backed up.
     * Under {@link WritePolicy#WRITE_BACK} a leaf without a host copy is reserved and copied instead (with its
     * ancestors not backed up yet), and becomes evictable once committed. That copy is ordered after the work
     * enqueued on the compute stream so far, so the KV of the leaf's whole path must have been enqueued by then: as
     * it is when requests share only prefixes whose computing forward has been launched (an engine that inserts a
     * request's pages before its forward runs must not let another request match them until it has). Scheduler
     * thread.
     *
     * @return device pages evicted
     * @throws IllegalStateException if the cache is closed
     */
    public int evictDevice(int pages, DevicePageSink sink) {
        checkOpen();
        return controller.evictDevice(pages, sink);
    }

    // ------------------------------------------------------------------ state

    /** A copy of the counters and the commit-latency percentiles. Any thread; also after {@link #close()}. */
    public MetricsSnapshot metrics() {
        return controller.metrics().snapshot();
    }

    /**
     * One counter's current value, read from the live counters without copying them (a {@link #metrics()} snapshot
     * copies every counter and percentile). Any thread; allocation-free; also after {@link #close()}.
     *
     * @throws IllegalArgumentException if {@code metric} is null
     */
    public long metric(Metric metric) {
        if (metric == null) {
            throw new IllegalArgumentException("metric must not be null");
        }
        return controller.metrics().get(metric);
    }

    /**
     * The live counters and histograms, read in place: for a meter registry that reads them on every scrape without
     * the copies a {@link #metrics()} snapshot makes (hicache-micrometer binds its meters to it). The same object for
     * the cache's life. Any thread, allocation-free; also after {@link #close()}, when it keeps the final values. See
     * {@link MetricsSnapshot.View} for what a racy read returns.
     */
    public MetricsSnapshot.View metricsView() {
        return controller.metrics().view();
    }

    /** A read-only view of the host pool. Scheduler thread, as every call on it; each throws once closed. */
    public HostPoolView hostPool() {
        return hostPoolView;
    }

    /**
     * The compute stream the hooks record on (the engine's, or one the cache created). Any thread.
     *
     * @throws IllegalStateException if the cache is closed (a stream it created is destroyed then)
     */
    public CudaStream computeStream() {
        checkOpen();
        return controller.computeStream();
    }

    /**
     * The stream the backups' device-to-host copies run on, for observing them: a profiler or a simulator may record
     * an event or launch a host function on it to learn when the copies enqueued so far have finished (anything
     * else it enqueues there delays the backups). The cache owns it: never destroy or synchronise-and-reuse it.
     * Any thread.
     *
     * @throws IllegalStateException if the cache is closed (the stream is destroyed then)
     */
    public CudaStream backupStream() {
        checkOpen();
        return controller.backupStream();
    }

    /**
     * The stream loads are copied on (host to device), for observing them as {@link #backupStream()}. Any thread.
     *
     * @throws IllegalStateException if the cache is closed (the stream is destroyed then)
     */
    public CudaStream loadStream() {
        checkOpen();
        return controller.loadStream();
    }

    /**
     * The names of the JDK Flight Recorder events the cache emits (all start with {@code io.hicache.}): a recording
     * enables them with {@code recording.enable(name)}. No event is built or allocated while none is enabled. Any
     * thread.
     */
    public static List<String> flightRecorderEventNames() {
        return io.hicache.core.internal.jfr.HiCacheEvents.ALL.stream()
            .map(c -> c.getAnnotation(jdk.jfr.Name.class).value()).toList();
    }

    /** This rank in its CP group (0 without one). Any thread. */
    public int rank() {
        return controller.rank();
    }

    /** Tokens per page of the KV layouts. Any thread; also after {@link #close()}. */
    public int pageSize() {
        return controller.pageSize();
    }

    /** Target layers per forward. Any thread. */
    public int targetLayers() {
        return controller.targetLayers();
    }

    /** Draft layers per forward (0 without a draft layout). Any thread. */
    public int draftLayers() {
        return controller.draftLayers();
    }

    /** Backups not yet retired (reserved, copying, sealed, or aborted awaiting agreement). Scheduler thread. */
    public int backupsInFlight() {
        checkOpen();
        return controller.backupsInFlight();
    }

    /** Loads queued, issued or awaiting agreement. Scheduler thread. */
    public int loadsInFlight() {
        checkOpen();
        return controller.loadsInFlight();
    }

    /** The sticky CUDA error that stopped the cache, or null. Scheduler thread. */
    public CudaException stickyError() {
        return controller.stickyError();
    }

    /**
     * The CP group's health as this rank knows it: healthy, or degraded since when, why and with which ranks failed
     * (see {@link io.hicache.core.cp.GroupState}). While degraded, {@link #match} reports no host hits and nothing
     * commits. Any thread (a volatile read); answers after {@link #close()} too.
     */
    public io.hicache.core.cp.GroupState groupState() {
        return controller.groupState();
    }

    /**
     * Runs one duty cycle of the submitter and then of the completion agent. {@link ThreadingMode#INVOKER}
     * only; the thread that steps them must be the only one doing so. An error in an agent takes the same path as on
     * the agents' own threads in {@link ThreadingMode#DEDICATED} mode: the forward or load it was handling is aborted
     * ({@link AbortReason#AGENT_ERROR}), the error is counted in {@link io.hicache.core.metrics.Metric#AGENT_ERRORS}
     * and logged once per distinct error, and the agents go on; only a fatal {@link VirtualMachineError} (stack
     * overflow excepted) is rethrown.
     *
     * @return work done (0 when idle)
     * @throws IllegalStateException if the cache is closed (checked first), or in {@link ThreadingMode#DEDICATED} mode
     */
    public int doAgentWork() {
        checkOpen();
        return controller.doAgentWork();
    }

    /** True once {@link #close()} ran. Any thread: a volatile read, so a thread polling it sees the close. */
    public boolean isClosed() {
        return controller.isClosed();
    }

    /**
     * Stops the agents, aborts every backup in flight (waiting for copies already issued), frees the host memory
     * and destroys the cache's streams and events. Idempotent. Scheduler thread, after the last forward ended.
     * An attached L3 storage tier is closed first, waiting for its store I/O into host memory; if that I/O is still
     * running after the tier's bound, this throws {@link IllegalStateException} and closes nothing (close the store,
     * which completes its operations, and call again).
     */
    @Override
    public void close() {
        controller.close();
    }

    @Override
    public String toString() {
        return "HiCache{rank=" + controller.rank() + ", closed=" + controller.isClosed() + '}';
    }

    private void checkOpen() {
        if (controller.isClosed()) {
            throw new IllegalStateException("HiCache is closed");
        }
    }

    private RadixTree openTree() {
        checkOpen();
        return controller.tree();
    }

    private io.hicache.core.internal.Backup own(BackupHandle backup) {
        if (backup instanceof io.hicache.core.internal.Backup b) {
            return b;
        }
        throw new IllegalArgumentException("backup " + backup + " was not created by a HiCache");
    }

    // ------------------------------------------------------------------ builder

    /**
     * The engine's builder of a {@link HiCache}: the settings are {@link HiCacheSettings}' (required: {@link #runtime},
     * {@link #targetLayout} and a host pool size). {@link #build()} validates everything, naming the bad setting, and
     * leaves the builder as it was, so it can build again (another rank, a restarted cache). Cold path; not
     * thread-safe.
     */
    public static final class Builder extends HiCacheSettings<Builder> {
        private Builder() {
        }

        /**
         * Validates the settings and builds the cache: allocates the pinned host pool, streams and events and, in
         * {@link ThreadingMode#DEDICATED} mode, starts the agent threads. On failure whatever it allocated is
         * released again.
         *
         * @throws IllegalArgumentException naming the bad setting
         * @throws io.hicache.core.memory.InsufficientHostMemoryException if the host pool does not fit
         * @throws CudaException if the runtime fails
         */
        public HiCache build() {
            return new HiCache(buildController());
        }
    }
}
