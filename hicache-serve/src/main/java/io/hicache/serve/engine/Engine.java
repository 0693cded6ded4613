package io.hicache.serve.engine;

import com.github.tjake.jlama.tensor.AbstractTensor;
import io.hicache.core.BackupHandle;
import io.hicache.core.ForwardHooks;
import io.hicache.core.LoadHandle;
import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.serve.model.ModelSpec;
import io.hicache.serve.model.Sampler;
import io.hicache.serve.model.StepModel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The serving engine: one thread owns the Jlama model, the cache's scheduler side and the device page pool, and runs
 * the step loop; HTTP handlers reach it only through {@link #submit}, {@link ServeRequest#cancel()} and the commands
 * below, which go through a queue the loop drains (docs/SERVING.md, "Threads").
 *
 * <p><b>A step</b>: drain the inbox; {@code poll} the cache; abort cancelled requests; admit waiting requests (FCFS)
 * while fewer than {@code maxRunning} run: match, L3 prefetch, load-back or join, lock, and reserve device pages for
 * the prompt and the most it may generate (a request that cannot get them waits at the head of the queue); issue the
 * loads admitted in this step; then run <em>one prefill chunk</em> of the oldest request still prefilling (its pages
 * inserted and backed up by the write policy, per layer by the hooks) followed by <em>one decode token for every
 * decoding request</em>. Jlama computes one sequence per forward, so a step is a series of forwards, and a long
 * prompt costs every decoding request one chunk per token at most.
 *
 * <p><b>Cached tokens</b> ({@link Finish.CachedTokens}) come from this request's own match and load at admission: the
 * ready device prefix is device; pages it loaded from the host tier (or joined another request's load of) are host;
 * pages its L3 prefetch published and it then loaded are storage; capped in that order at the tokens it did not
 * compute. (Issue 41 adds per-request accounting to the library; this is the one place to switch to it.)
 *
 * <p>Thread-safe entry points: {@link #submit}, {@link #flush}, {@link #inspect}, {@link #shutdown}, {@link #scrape},
 * {@link #checkRequest}; everything else runs on the engine thread.
 */
public final class Engine {
    private static final Logger LOG = LoggerFactory.getLogger(Engine.class);
    private static final int MAX_OPEN_FORWARDS = 48;

    /** What {@link #submit} decided. */
    public enum Admission { ACCEPTED, QUEUE_FULL, STOPPING, FAILED }

    /** What {@link #flush} did: flushed, or refused because requests run (with how many). */
    public record FlushResult(boolean flushed, int busyRequests) {
    }

    private final EngineConfig cfg;
    private final ServeMetrics metrics;
    private final int ps;
    private final ConcurrentLinkedQueue<Object> inbox = new ConcurrentLinkedQueue<>();
    private final AtomicInteger inSystem = new AtomicInteger();
    private final AtomicLong ids = new AtomicLong(1);
    private final CompletableFuture<Void> ready = new CompletableFuture<>();
    private final Thread thread;
    private volatile boolean stopping;
    private volatile long graceDeadlineNs = Long.MAX_VALUE;
    private volatile String failure;
    private volatile CacheTiers tiersView;

    // ------------------------------------------------------------------ engine thread only
    private StepModel model;
    private CacheTiers tiers;
    private KvLayerHooks layerHooks;
    private DeviceKvViews kvViews;
    private final ArrayDeque<ServeRequest> waiting = new ArrayDeque<>();
    private final List<ServeRequest> running = new ArrayList<>();
    private final MatchResult match = new MatchResult();
    private final List<BackupHandle> backups = new ArrayList<>();
    private final ArrayDeque<List<BackupHandle>> openForwards = new ArrayDeque<>();
    private final Sampler sampler = new Sampler();
    private float[] logits;
    private boolean loadsQueued;

    /** @param cfg the settings; @param metrics the server's meters (the engine counts into them) */
    public Engine(EngineConfig cfg, ServeMetrics metrics) {
        this.cfg = cfg;
        this.metrics = metrics;
        this.ps = cfg.pageSize();
        this.thread = new Thread(this::run, "hicache-engine");
    }

    /**
     * Starts the engine thread and waits until the model is built and the cache open.
     *
     * @throws IllegalStateException with the cause when the engine could not start (an L3 store that cannot be
     *     opened, a KV event endpoint that cannot be bound)
     */
    public void start() {
        thread.start();
        try {
            ready.get(10, TimeUnit.MINUTES);
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable c = e.getCause();
            throw new IllegalStateException(c.getMessage() == null ? c.toString() : c.getMessage(), c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the engine started", e);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("the engine did not start within 10 minutes", e);
        }
    }

    /** The model served. Any thread. */
    public ModelSpec model() {
        return cfg.model();
    }

    /** The settings. Any thread. */
    public EngineConfig config() {
        return cfg;
    }

    /** A new request id. Any thread. */
    public long nextRequestId() {
        return ids.getAndIncrement();
    }

    /**
     * Why a request of {@code promptTokens} that may generate {@code maxNewTokens} cannot be served, in one line, or
     * null when it can. Any thread.
     */
    public String checkRequest(int promptTokens, int maxNewTokens) {
        int ctx = cfg.model().contextTokens();
        if (promptTokens < 1) {
            return "the prompt is empty";
        }
        if ((long) promptTokens + maxNewTokens > ctx) {
            return "the prompt's " + promptTokens + " tokens plus " + maxNewTokens + " new tokens exceed the model's "
                + "context of " + ctx + " tokens";
        }
        int pages = ceilDiv(promptTokens + maxNewTokens, ps);
        if (cfg.radixCache() && pages > cfg.devicePages()) {
            return "the prompt's " + promptTokens + " tokens plus " + maxNewTokens + " new tokens need " + pages
                + " device pages; the pool has " + cfg.devicePages() + " (--device-tokens " + cfg.deviceTokens() + ")";
        }
        return null;
    }

    /**
     * Hands a request to the engine, or refuses it: the engine holds at most {@code maxRunning + maxQueued} requests
     * (running or waiting); one more is {@link Admission#QUEUE_FULL} (the HTTP layer answers 503 with Retry-After),
     * after {@link #shutdown} began every one is {@link Admission#STOPPING}, and after the engine stopped on an internal
     * error ({@link #failure()}) every one is {@link Admission#FAILED} (the HTTP layer answers 503 at once). Any thread.
     */
    public Admission submit(ServeRequest r) {
        if (failure != null) {
            return Admission.FAILED;
        }
        if (stopping) {
            return Admission.STOPPING;
        }
        int limit = cfg.maxRunning() + cfg.maxQueued();
        int n = inSystem.incrementAndGet();
        if (n > limit) {
            inSystem.decrementAndGet();
            metrics.refusedQueueFull.increment();
            return Admission.QUEUE_FULL;
        }
        inbox.offer(r);
        if (failure != null && inbox.remove(r)) { // the engine stopped before it could see it: nobody will
            inSystem.decrementAndGet();
            return Admission.FAILED;
        }
        LockSupport.unpark(thread);
        return Admission.ACCEPTED;
    }

    /**
     * Why the engine stopped serving, or null while it serves. It stops only on an error that leaves the shared state
     * (the radix tree, the device pool) possibly inconsistent: a failure inside one request's forward fails that
     * request alone, unless the tree already holds pages of that forward whose KV was never computed (a later match
     * would read it), in which case the engine stops rather than serve wrong KV. Any thread.
     */
    public String failure() {
        return failure;
    }

    /** Requests held (running or waiting). Any thread. */
    public int requestsInSystem() {
        return inSystem.get();
    }

    /**
     * Empties the device pool and the host tier when no request is held; refuses (with the count) otherwise, so a
     * flush never pulls KV from under a running request (the HTTP layer answers 409). The L3 store is left alone.
     * Any thread.
     */
    public CompletableFuture<FlushResult> flush() {
        CompletableFuture<FlushResult> f = new CompletableFuture<>();
        command(new FlushCommand(f));
        return f;
    }

    /** What the engine and its cache hold, read on the engine thread. Any thread. */
    public CompletableFuture<Inspection> inspect() {
        CompletableFuture<Inspection> f = new CompletableFuture<>();
        command(new InspectCommand(f));
        return f;
    }

    /**
     * Stops accepting requests, lets those held finish for up to {@code graceNs}, aborts the rest (their clients get
     * 503), waits for the backups and L3 writes in flight (at most 30 s more), closes the cache and returns when the
     * engine thread has ended. Any thread; idempotent.
     */
    public void shutdown(long graceNs) {
        graceDeadlineNs = System.nanoTime() + Math.max(0, graceNs);
        stopping = true;
        LockSupport.unpark(thread);
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The server's meters and the library's, in Prometheus text. Any thread. */
    public String scrape() {
        CacheTiers t = tiersView;
        return metrics.scrape() + (t == null ? "" : t.scrape());
    }

    private void command(Object c) {
        String f = failure;
        if (f != null) {
            if (c instanceof FlushCommand fc) {
                fc.result().completeExceptionally(new IllegalStateException(f));
            } else if (c instanceof InspectCommand ic) {
                ic.result().completeExceptionally(new IllegalStateException(f));
            }
            return;
        }
        inbox.offer(c);
        LockSupport.unpark(thread);
    }

    private record FlushCommand(CompletableFuture<FlushResult> result) {
    }

    private record InspectCommand(CompletableFuture<Inspection> result) {
    }

    // ------------------------------------------------------------------ the loop (engine thread)

    private void run() {
        try {
            model = cfg.model().newModel();
            logits = new float[cfg.model().vocab()];
            if (cfg.radixCache()) {
                tiers = new CacheTiers(cfg);
                tiers.open();
                layerHooks = new KvLayerHooks(tiers);
                kvViews = new DeviceKvViews(tiers);
                tiersView = tiers;
            }
        } catch (RuntimeException | Error e) {
            ready.completeExceptionally(e);
            closeQuietly();
            return;
        }
        ready.complete(null);
        try {
            loop();
        } catch (RuntimeException | Error e) {
            LOG.error("engine failed; aborting every request", e);
            failure = "the engine stopped after an internal error (" + e + "); restart the server";
            failAll(500, "engine error: " + e);
        } finally {
            drainAndClose();
        }
    }

    private void loop() {
        while (true) {
            drainInbox();
            if (stopping && System.nanoTime() > graceDeadlineNs) {
                abortAll(503, "the server is shutting down");
            }
            if (stopping && waiting.isEmpty() && running.isEmpty()) {
                return;
            }
            if (tiers != null) {
                tiers.poll();
            }
            reapCancelled();
            admit();
            if (loadsQueued) {
                tiers.cache.startLoading();
                loadsQueued = false;
            }
            boolean worked = step();
            publishGauges();
            if (!worked) {
                boolean busy = !waiting.isEmpty() || (tiers != null && tiers.inFlight() > 0);
                LockSupport.parkNanos(busy ? 200_000L : 50_000_000L);
            }
        }
    }

    private void drainInbox() {
        Object o;
        while ((o = inbox.poll()) != null) {
            if (o instanceof ServeRequest r) {
                waiting.addLast(r);
            } else if (o instanceof FlushCommand f) {
                int busy = waiting.size() + running.size();
                if (busy > 0) {
                    f.result().complete(new FlushResult(false, busy));
                } else {
                    if (tiers != null) {
                        openForwards.clear();
                        tiers.flush();
                    }
                    f.result().complete(new FlushResult(true, 0));
                }
            } else if (o instanceof InspectCommand c) {
                c.result().complete(inspectNow());
            }
        }
    }

    private Inspection inspectNow() {
        if (tiers == null) {
            return new Inspection(running.size(), waiting.size(), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        }
        var tree = tiers.cache.tree();
        var host = tiers.cache.hostPool();
        return new Inspection(running.size(), waiting.size(), tiers.pool.capacity(), tiers.pool.freePages(),
            tree.devicePagesCached(), tree.devicePagesLocked(), tiers.cache.backupsInFlight(),
            tiers.cache.loadsInFlight(), tiers.hostTier() ? host.allocatedPages() : 0,
            tiers.hostTier() ? tree.hostPagesCommitted() : 0, tree.hostPagesPending(),
            tiers.l3 == null ? 0 : tiers.l3.inFlight());
    }

    private void publishGauges() {
        long devTotal = tiers == null ? 0 : (long) tiers.pool.capacity() * ps;
        long devUsed = tiers == null ? 0 : devTotal - (long) tiers.pool.freePages() * ps;
        long hostTotal = tiers != null && tiers.hostTier() ? (long) tiers.cache.hostPool().capacityPages() * ps : 0;
        long hostUsed = hostTotal == 0 ? 0 : (long) tiers.cache.hostPool().allocatedPages() * ps;
        metrics.publish(running.size(), waiting.size(), devUsed, devTotal, hostUsed, hostTotal);
    }

    // ------------------------------------------------------------------ cancellation

    private void reapCancelled() {
        for (Iterator<ServeRequest> it = waiting.iterator(); it.hasNext(); ) {
            ServeRequest r = it.next();
            if (r.isCancelled()) {
                it.remove();
                release(r);
                left(r);
                metrics.abortedDisconnect.increment();
            }
        }
        for (Iterator<ServeRequest> it = running.iterator(); it.hasNext(); ) {
            ServeRequest r = it.next();
            if (r.isCancelled()) {
                it.remove();
                finishCache(r, true);
                left(r);
                metrics.abortedDisconnect.increment();
            }
        }
    }

    /** A request left the engine (done, aborted or failed). */
    private void left(ServeRequest r) {
        r.state = ServeRequest.State.DONE;
        inSystem.decrementAndGet();
    }

    /** What a waiting request holds: its prefetch (cancelled). A previous-batch load goes on for later requests. */
    private void release(ServeRequest r) {
        if (r.prefetch != null) {
            r.prefetch.cancel();
            r.prefetch = null;
        }
    }

    private void abortAll(int status, String message) {
        for (ServeRequest r : waiting) {
            release(r);
            left(r);
            metrics.abortedShutdown.increment();
            r.sink.onError(status, message);
        }
        waiting.clear();
        for (ServeRequest r : running) {
            finishCache(r, true);
            left(r);
            metrics.abortedShutdown.increment();
            r.sink.onError(status, message);
        }
        running.clear();
    }

    private void failAll(int status, String message) {
        try {
            abortAll(status, message);
        } catch (RuntimeException e) {
            LOG.error("while failing the requests", e);
        }
        Object o;
        while ((o = inbox.poll()) != null) {
            if (o instanceof ServeRequest r) {
                inSystem.decrementAndGet();
                r.sink.onError(status, message);
            } else if (o instanceof FlushCommand f) {
                f.result().complete(new FlushResult(false, 0));
            } else if (o instanceof InspectCommand c) {
                c.result().completeExceptionally(new IllegalStateException(message));
            }
        }
    }

    // ------------------------------------------------------------------ admission

    private enum Admit { ADMITTED, PARKED, WAIT }

    private void admit() {
        for (Iterator<ServeRequest> it = waiting.iterator(); it.hasNext() && running.size() < cfg.maxRunning(); ) {
            ServeRequest r = it.next();
            if (r.state == ServeRequest.State.PREFETCH && !r.prefetch.mayRun()) {
                continue;
            }
            if (r.state == ServeRequest.State.LOADING && !terminal(r.load)) {
                continue;
            }
            Admit a = tiers == null ? admitWithoutCache(r) : admitWithCache(r);
            if (a == Admit.WAIT) {
                break; // first come, first served: a request that does not fit waits at the head
            }
            if (a == Admit.ADMITTED) {
                it.remove();
                running.add(r);
            }
        }
    }

    private Admit admitWithoutCache(ServeRequest r) {
        begin(r);
        r.pages = new int[0];
        r.state = ServeRequest.State.PREFILL;
        return Admit.ADMITTED;
    }

    private void begin(ServeRequest r) {
        long now = System.nanoTime();
        if (r.admittedNs == 0) {
            r.admittedNs = now;
        }
        r.prefixReadyNs = now;
        int n = r.prompt.length;
        r.seq = Arrays.copyOf(r.prompt, n + r.params.maxNewTokens());
        r.kv = tiers == null ? model.newKvBuffer() : kvViews.bufferFor(model, r); // the latter: its device pages
        if (r.params.temperature() > 0) {
            r.rng = new SplittableRandom(r.params.seed() != null ? r.params.seed() : cfg.seed() * 0x9E3779B97F4A7C15L + r.id);
        }
        metrics.promptTokens.increment(n);
        ServeMetrics.record(metrics.queue, r.admittedNs - r.arrivalNs);
    }

    private Admit admitWithCache(ServeRequest r) {
        var cache = tiers.cache;
        int n = r.prompt.length;
        int cacheable = n / ps * ps;
        if (r.admittedNs == 0) {
            r.admittedNs = System.nanoTime();
        }
        if (r.state == ServeRequest.State.LOADING) { // previous-batch load done (or failed): match it as a device hit
            r.state = ServeRequest.State.QUEUED;
            if (r.load.state() == LoadHandle.State.FAILED) {
                r.load = null; // nothing of it was used: the request computes its host part instead
                r.loadedTokens = 0;
                r.recompute = true;
                metrics.recomputed.increment();
            }
        }
        cache.match(r.prompt, 0, cacheable, match);
        if (tiers.l3 != null && !r.prefetchAsked && !r.recompute) {
            r.prefetchAsked = true;
            r.prefetch = tiers.l3.prefetch(r.prompt, 0, cacheable, match, r.id);
            if (r.prefetch != null && !r.prefetch.mayRun()) {
                r.state = ServeRequest.State.PREFETCH;
                return Admit.PARKED;
            }
        }
        if (r.prefetch != null) {
            cache.match(r.prompt, 0, cacheable, match); // what it published is now a host hit
        }
        boolean useHost = tiers.hostTier() && !r.recompute;
        int totalPages = ceilDiv(n + r.params.maxNewTokens(), ps);
        int hostPages = useHost ? match.hostPageCount() : 0;
        int devPages = match.devicePageCount();
        int recomputed = devPages - Math.min(devPages, (n - 1) / ps); // a whole cached prompt's last page
        if ((long) tiers.pool.freePages() + cache.tree().devicePagesEvictable() < totalPages - devPages + recomputed) {
            return Admit.WAIT;
        }
        boolean alreadyLoaded = r.load != null; // a previous-batch load this request waited for
        if (!alreadyLoaded) {
            r.devReadyTokens = match.readyPageCount() * ps;
            r.joinedTokens = match.deviceTokenCount() - r.devReadyTokens;
        }
        RadixNode held = match.lastDeviceNode();
        cache.lock(held);
        LoadHandle load = null;
        if (hostPages > 0 && !alreadyLoaded) {
            load = cache.loadBack(match, r.id, Integer.MAX_VALUE, tiers.pool);
            if (load != null) {
                r.loadedTokens = load.pageCount() * ps;
                storageShare(r);
                loadsQueued = true;
                if (cfg.loadOverlap() == LoadOverlap.PREVIOUS_BATCH) {
                    cache.unlock(held);
                    r.load = load;
                    r.state = ServeRequest.State.LOADING;
                    return Admit.PARKED;
                }
                cache.match(r.prompt, 0, cacheable, match); // the chain is a LOADING device prefix now
                RadixNode deeper = match.lastDeviceNode();
                cache.lock(deeper);
                cache.unlock(held);
                held = deeper;
            }
        }
        if (load == null && match.loadingNode() != null) {
            r.joined = cache.joinLoad(match);
        }
        if (!alreadyLoaded) {
            r.load = load;
        }
        if (r.prefetch != null) {
            storageShare(r);
            r.prefetch.consume();
            r.prefetch = null;
            if (r.state == ServeRequest.State.PREFETCH) {
                r.state = ServeRequest.State.QUEUED; // no prefetch to wait for if it must now wait for pages
            }
        }
        int dev = match.devicePageCount();
        int restored = Math.min(match.deviceTokenCount(), (n - 1) / ps * ps);
        // its KV pages: the tree's up to what it restores, then its own; a cached page it computes again (a whole
        // cached prompt's last page) gets a page of its own too, so attention never writes a page the tree shares
        int[] kvPages = new int[totalPages];
        for (int i = 0; i < restored / ps; i++) {
            kvPages[i] = match.devicePage(i);
        }
        int own = totalPages - restored / ps;
        if (!tiers.pool.allocate(own, kvPages, restored / ps)) {
            cache.evictDevice(own - tiers.pool.freePages(), tiers.pool);
            if (!tiers.pool.allocate(own, kvPages, restored / ps)) {
                cache.unlock(held); // its load (if any) goes on; the next try finds it loading or loaded
                return Admit.WAIT;
            }
        }
        int[] pages = kvPages.clone();
        for (int i = restored / ps; i < dev; i++) {
            pages[i] = match.devicePage(i);
        }
        r.kvPages = kvPages;
        begin(r);
        r.pages = pages;
        r.ownFrom = dev;
        r.firstOwnPage = dev;
        r.held = held;
        r.insertedTo = match.deviceTokenCount();
        r.restored = restored;
        r.computedTo = r.restored;
        r.cached = cachedTokens(r);
        metrics.cachedDevice.increment(r.cached.device());
        metrics.cachedHost.increment(r.cached.host());
        metrics.cachedStorage.increment(r.cached.storage());
        r.state = ServeRequest.State.PREFILL;
        return Admit.ADMITTED;
    }

    /** Pages of this request's load that its L3 prefetch published (they sit at the end of the host chain). */
    private void storageShare(ServeRequest r) {
        if (r.prefetch != null && r.prefetch.isDone()) {
            r.storageTokens = Math.min(r.loadedTokens, r.prefetch.publishedPages() * ps);
        }
    }

    /** The request's cached tokens by tier, in sequence order, capped at what it did not compute. */
    private static Finish.CachedTokens cachedTokens(ServeRequest r) {
        int left = r.restored;
        int device = Math.min(r.devReadyTokens, left);
        left -= device;
        int hostOnly = r.joinedTokens + r.loadedTokens - r.storageTokens;
        int host = Math.min(hostOnly, left);
        left -= host;
        int storage = Math.min(r.storageTokens, left);
        return new Finish.CachedTokens(device, host, storage);
    }

    private static boolean terminal(LoadHandle l) {
        return l == null || l.state() == LoadHandle.State.LOADED || l.state() == LoadHandle.State.FAILED;
    }

    // ------------------------------------------------------------------ steps

    /** One prefill chunk (oldest first) and one decode token per decoding request. @return whether anything ran */
    private boolean step() {
        boolean worked = false;
        for (ServeRequest r : running) {
            if (r.state == ServeRequest.State.PREFILL) {
                forward(r, true);
                worked = true;
                break;
            }
        }
        for (ServeRequest r : running) {
            if (r.state == ServeRequest.State.DECODE && !done(r) && r.error == null) {
                forward(r, false);
                worked = true;
            }
        }
        for (Iterator<ServeRequest> it = running.iterator(); it.hasNext(); ) {
            ServeRequest r = it.next();
            if (r.error != null) {
                it.remove();
                finishCache(r, true); // the pages it computed are whole and valid; the rest go back to the pool
                left(r);
                metrics.failed.increment();
                r.sink.onError(500, r.error);
            } else if (r.recompute && r.state == ServeRequest.State.PREFILL && r.kv == null) {
                it.remove(); // its load failed: served again, from the head of the queue, without the host tier
                waiting.addFirst(r);
                metrics.recomputed.increment();
            } else if (r.state == ServeRequest.State.DECODE && done(r)) {
                it.remove();
                complete(r);
            }
        }
        return worked;
    }

    /**
     * One prefill chunk or decode token of {@code r}. A failure inside the model's forward fails {@code r} alone (it
     * leaves at the end of the step with a 500) when the tree holds no page of {@code r} past what it computed;
     * otherwise the tree would keep KV never computed, so the failure stops the engine ({@link #failure()}).
     */
    private void forward(ServeRequest r, boolean prefill) {
        try {
            if (prefill) {
                prefillChunk(r);
            } else {
                decodeStep(r);
            }
        } catch (ForwardFailed e) {
            RuntimeException cause = (RuntimeException) e.getCause();
            if (tiers != null && r.insertedTo > r.computedTo) {
                throw cause;
            }
            LOG.error("request {}: its forward failed; failing it alone", r.id, cause);
            r.error = "engine error: " + cause;
        }
    }

    /** A failure inside the model's forward of one request (the cause); the forward wrote only that request's KV. */
    private static final class ForwardFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ForwardFailed(RuntimeException cause) {
            super(cause);
        }
    }

    private static boolean done(ServeRequest r) {
        return r.done();
    }

    private void prefillChunk(ServeRequest r) {
        long t0 = System.nanoTime();
        int n = r.prompt.length;
        int from = r.computedTo;
        int to = Math.min(from + cfg.chunkTokens(), n);
        ForwardHooks hooks = null;
        if (tiers != null) {
            int insertEnd = to / ps * ps;
            backups.clear();
            if (insertEnd > r.insertedTo) {
                insertPath(r, insertEnd);
                reserve(r);
            }
            if (!backups.isEmpty()) {
                hooks = beginForward();
            }
            layerHooks.start(r, hooks, loadToken(r));
        }
        AbstractTensor last;
        try {
            last = model.forwardChunk(r.seq, from, to, r.kv, layerHooks);
        } catch (RuntimeException e) {
            throw new ForwardFailed(e);
        } finally {
            if (hooks != null) {
                hooks.endForward(); // a layer never reported stored aborts its backups rather than publishing them
            }
            if (layerHooks != null) {
                layerHooks.clear();
            }
        }
        r.prefixCopied = true;
        r.computedTo = to;
        try (last) {
            if (to == n) {
                if (!prefixLoaded(r)) {
                    restartWithoutHost(r);
                    return;
                }
                model.logits(last, logits);
                long now = System.nanoTime();
                r.prefillNs += now - t0;
                r.firstTokenNs = now;
                ServeMetrics.record(metrics.ttft, now - r.arrivalNs);
                r.state = ServeRequest.State.DECODE;
                r.append(metrics, sampler.next(logits, r.params.temperature(), r.params.topP(), r.params.topK(), r.rng));
                return;
            }
        }
        r.prefillNs += System.nanoTime() - t0;
    }

    private void decodeStep(ServeRequest r) {
        int pos = r.prompt.length + r.generated - 1; // the last sampled token, whose KV is computed now
        try (AbstractTensor out = model.forwardChunk(r.seq, pos, pos + 1, r.kv, null)) { // KV into its own page
            r.computedTo = pos + 1;
            model.logits(out, logits);
        } catch (RuntimeException e) {
            throw new ForwardFailed(e);
        }
        r.append(metrics, sampler.next(logits, r.params.temperature(), r.params.topP(), r.params.topK(), r.rng));
    }

    private void complete(ServeRequest r) {
        finishCache(r, false);
        long now = System.nanoTime();
        ServeMetrics.record(metrics.e2e, now - r.arrivalNs);
        metrics.finished.increment();
        left(r);
        long queueNs = r.admittedNs - r.arrivalNs;
        long prefixWaitNs = r.prefixReadyNs - r.admittedNs;
        long other = Math.max(0, r.firstTokenNs - r.prefixReadyNs - r.prefillNs);
        r.sink.onFinish(new Finish(r.stopped ? "stop" : "length", r.matchedStop, r.prompt.length, r.generated, r.cached,
            new Finish.Timing(queueNs, prefixWaitNs, r.loadWaitNs, r.prefillNs, other, r.firstTokenNs - r.arrivalNs,
                now - r.arrivalNs)));
    }

    // ------------------------------------------------------------------ the cache side of a request

    /** Inserts the whole pages of {@code seq[0, end)} along the request's path and moves its lock down to them. */
    private void insertPath(ServeRequest r, int end) {
        var cache = tiers.cache;
        int present = cache.insert(r.seq, 0, end, r.pages, 0);
        RadixNode node = cache.lastInsertNode();
        for (int i = Math.max(r.ownFrom, r.insertedTo / ps); i < present / ps; i++) {
            // another request inserted these pages first: its copy is the tree's; ours stays this request's KV (its
            // attention reads it, r.kvPages) and goes back to the pool when the request ends
            r.pages[i] = -1;
        }
        cache.lock(node);
        cache.unlock(r.held);
        r.held = node;
        r.insertedTo = end;
        r.ownFrom = Math.max(r.ownFrom, end / ps);
    }

    /** Reserves the write policy's backups of the request's path into {@link #backups}. */
    private void reserve(ServeRequest r) {
        if (tiers.hostTier() && cfg.writePolicy() != WritePolicy.WRITE_BACK) {
            tiers.cache.reserveByPolicy(r.held, false, backups);
        }
    }

    private ForwardHooks beginForward() {
        while (true) {
            while (!openForwards.isEmpty() && allTerminal(openForwards.peekFirst())) {
                openForwards.pollFirst();
            }
            if (openForwards.size() < MAX_OPEN_FORWARDS) {
                break;
            }
            tiers.poll();
            Thread.onSpinWait();
        }
        openForwards.addLast(List.copyOf(backups));
        return tiers.cache.beginForward(backups);
    }

    private static boolean allTerminal(List<BackupHandle> l) {
        for (BackupHandle b : l) {
            if (!b.state().terminal()) {
                return false;
            }
        }
        return true;
    }

    private long loadToken(ServeRequest r) {
        if (r.prefixCopied) {
            return -1;
        }
        if (r.load != null && cfg.loadOverlap() == LoadOverlap.SAME_FORWARD) {
            return r.load.consumer();
        }
        return r.joined != null ? r.joined.consumer() : -1;
    }

    /** Waits (polling) until the loads the request's prefix came from are agreed. @return whether they all loaded */
    private boolean prefixLoaded(ServeRequest r) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        for (LoadHandle l : new LoadHandle[] {r.load, r.joined}) {
            while (l != null && !terminal(l)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("load of request " + r.id + " not done within 60 s: " + l);
                }
                tiers.poll();
                Thread.onSpinWait();
            }
            if (l != null && l.state() == LoadHandle.State.FAILED) {
                return false;
            }
        }
        return true;
    }

    /** Its load failed before its first token: release everything and serve it again without the host tier. */
    private void restartWithoutHost(ServeRequest r) {
        finishCache(r, true);
        LOG.warn("request {}: the load of its prefix failed; computing it again", r.id);
        r.recompute = true;
        r.state = ServeRequest.State.PREFILL;
        r.load = null;
        r.joined = null;
        r.prefixCopied = false;
        r.devReadyTokens = r.joinedTokens = r.loadedTokens = r.storageTokens = 0;
        r.cached = Finish.CachedTokens.NONE;
        r.prefixReadyNs = 0;
        r.prefillNs = 0;
        r.loadWaitNs = 0;
    }

    /**
     * Ends the request's hold on the cache: the whole pages it computed (prompt and answer) are inserted and backed
     * up by the write policy unless its KV may be wrong ({@code aborted} and a failed load), its own pages not handed
     * to the tree go back to the pool, its lock is released, its KV buffer closed.
     */
    private void finishCache(ServeRequest r, boolean aborted) {
        if (tiers != null && r.pages != null && r.held != null) {
            boolean valid = !(aborted && (failed(r.load) || failed(r.joined)));
            int end = r.computedTo / ps * ps;
            if (valid && end > r.insertedTo) {
                insertPath(r, end);
                backups.clear();
                reserve(r);
                if (!backups.isEmpty()) {
                    ForwardHooks h = beginForward(); // the KV is in the pages already: every layer is stored
                    for (int l = 0; l < tiers.cache.targetLayers(); l++) {
                        h.targetLayerStored(l);
                    }
                    h.endForward();
                }
            }
            for (int i = 0; i < r.kvPages.length; i++) { // its own pages, and those the tree has a copy of
                int k = r.kvPages[i];
                if (k >= 0 && (i >= r.ownFrom || k != r.pages[i])) {
                    tiers.pool.freeOne(k);
                }
                r.kvPages[i] = -1;
                if (i >= r.ownFrom) {
                    r.pages[i] = -1;
                }
            }
            tiers.cache.unlock(r.held); // a node dropped by a failed load: a no-op
            r.held = null;
        }
        release(r);
        if (r.kv != null) {
            r.kv.close();
            r.kv = null;
        }
    }

    private static boolean failed(LoadHandle l) {
        return l != null && l.state() == LoadHandle.State.FAILED;
    }

    // ------------------------------------------------------------------ shutdown

    private void drainAndClose() {
        try {
            if (tiers != null) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (tiers.inFlight() > 0 && System.nanoTime() < deadline) {
                    tiers.poll(); // backups commit, L3 writes land: a restart on the same store finds them
                    LockSupport.parkNanos(200_000L);
                }
            }
        } catch (RuntimeException e) {
            LOG.warn("draining the cache at shutdown: {}", e.toString());
        }
        failAll(503, "the server is shutting down");
        closeQuietly();
    }

    private void closeQuietly() {
        try {
            if (tiers != null) {
                tiers.close();
            }
        } catch (RuntimeException e) {
            LOG.warn("closing the cache: {}", e.toString());
        }
        if (model != null) {
            model.close();
        }
    }

    private static int ceilDiv(int a, int b) {
        return (a + b - 1) / b;
    }
}
