package io.hicache.core;

import io.hicache.core.metrics.Metric;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;

import java.util.ArrayList;
import java.util.List;

/**
 * One request's use of a {@link HiCache}, from its first match to its end ({@link HiCache#openRequest}): the
 * request's matches, loads, inserts and backups go through it, so that
 * <ul>
 *   <li><b>each prompt token is counted once</b>, on the tier it came from: a token already on the device when the
 *       request matched it in {@link Metric#DEVICE_HIT_TOKENS} (pages another request is still loading included),
 *       a token its own load brought back from host memory in {@link Metric#HOST_HIT_TOKENS}, or, the first load
 *       of pages a storage prefetch published, in the L3 tier's own counter. A re-match after {@link #loadBack}, or
 *       per chunk of a chunked prefill, counts nothing again, and the tokens the request computes itself count
 *       nowhere. {@link #deviceTokens()}, {@link #hostTokens()} and {@link #storageTokens()} are the split,
 *       {@link #cachedTokens()} their sum: what to report to the client as {@code cached_tokens};</li>
 *   <li>it <b>holds one device lock on the deepest node it uses</b>, moved down as it matches and inserts, so
 *       neither its hit nor the pages it inserted are evicted while it runs (also once they are backed up);</li>
 *   <li>{@link #finish()} releases that lock (its backups go on and commit); {@link #cancel} also withdraws the
 *       pages it inserted but never computed ({@link HiCache#withdrawUncomputed}) and aborts their backups and those
 *       no forward began with.</li>
 * </ul>
 * The {@link HiCache} primitives it uses stay available; an engine may mix them, but what it does through them is
 * not tracked here (a {@link HiCache#match} outside the request counts its device hit once per call).
 *
 * <p>A request follows one token sequence, from the root: its matches, loads and inserts name prefixes of it
 * ({@code tokens[from, from + len)} with the same {@code from}). {@link #markComputed} tells it how far the
 * forwards launched for it have computed, which {@link #cancel} needs to keep those pages.
 *
 * <p><b>Thread:</b> the scheduler thread that owns the cache, like every scheduler call; not thread-safe.
 * <b>Failures:</b> misuse (a call after {@link #finish} or {@link #cancel}, a null argument) throws
 * {@link IllegalStateException} or {@link IllegalArgumentException} and changes nothing; the cache's own
 * failures (closed, stopped, bad arguments) propagate from the primitive that met them, with the request's counts
 * and lock as they were before the call. If the request's own load (or the load it joined) fails, the tokens it
 * counted for that load no longer count in its split (the engine recomputes them); the cache-wide counters keep
 * them, as they keep {@link Metric#LOAD_TOKENS}.
 */
public final class CacheRequest {
    private final HiCache cache;
    private final long requestId;
    private final int pageSize;
    private boolean open = true;

    /** The deepest node this request locked (its path is locked), or null. */
    private RadixNode locked;
    /** The node its last insert ended on, or null. */
    private RadixNode lastInserted;
    private final List<BackupHandle> backups = new ArrayList<>();
    /** Scratch for {@link #reserveByPolicy}. */
    private final List<BackupHandle> reserved = new ArrayList<>();

    /** Tokens of the sequence, from its start, already counted on a tier or inserted by this request. */
    private int accounted;
    private int device;
    private int host;
    private int storage;
    /** Loads this request counted and that have not ended yet: its own (host and storage) and those it joined. */
    private final List<Counted> counted = new ArrayList<>();

    /** Token ranges [from, to) this request inserted new pages for, in order; merged where contiguous. */
    private int[] ownRanges = new int[4];
    private int ownRangeCount;
    /** Tokens from the sequence's start whose forwards have been launched ({@link #markComputed}). */
    private int computed;

    /** A load whose tokens this request counted, until the load has ended. */
    private record Counted(LoadHandle load, int firstToken, int device, int host, int storage) {
    }

    CacheRequest(HiCache cache, long requestId) {
        this.cache = cache;
        this.requestId = requestId;
        this.pageSize = cache.pageSize();
    }

    /** The engine's id of the request (what its loads report to the {@link LoadListener}). Any thread. */
    public long requestId() {
        return requestId;
    }

    /** Whether neither {@link #finish()} nor {@link #cancel} has been called. Scheduler thread. */
    public boolean isOpen() {
        return open;
    }

    // ------------------------------------------------------------------ match and load

    /**
     * {@link HiCache#match} for this request: counts the device tokens the request had not counted yet (once per
     * token for the request's life) and moves the request's lock to the match's last device node unless that lies
     * above the node locked so far. Scheduler thread.
     *
     * @return {@code out}
     * @throws IllegalArgumentException as {@link HiCache#match}
     * @throws IllegalStateException if the request ended, or as {@link HiCache#match}
     */
    public MatchResult match(int[] tokens, int from, int len, MatchResult out) {
        checkOpen();
        settle();
        cache.matchUncounted(tokens, from, len, out);
        countDevice(out.deviceTokenCount());
        lockDeepest(out.lastDeviceNode());
        return out;
    }

    /**
     * {@link HiCache#loadBack} for this request: loads {@code match}'s host-only pages (a match made through this
     * request) and counts them, the L3 tier's first loads of its prefetched pages apart, as served from host memory.
     * With {@link LoadOverlap#SAME_FORWARD} match again through this request afterwards: the chain is then a loading
     * device prefix, which is not counted again. Scheduler thread.
     *
     * @return the load, or null when nothing is loaded (see {@link HiCache#loadBack})
     * @throws IllegalStateException if the request ended, or as {@link HiCache#loadBack}
     */
    public LoadHandle loadBack(MatchResult match, int memoryQuotaTokens, DevicePageAllocator allocator) {
        checkOpen();
        settle();
        if (match == null) {
            throw new IllegalArgumentException("match must not be null");
        }
        countDevice(match.deviceTokenCount());
        LoadHandle load = cache.loadBack(match, requestId, memoryQuotaTokens, allocator);
        if (load == null) {
            return null;
        }
        int first = load.firstPage() * pageSize;
        int before = accounted;
        countDevice(first); // the chain's head, if another request's load was already bringing it back
        if (first > before && load.node(0).parent().pendingLoad() instanceof LoadHandle other) {
            counted.add(new Counted(other, before, first - before, 0, 0));
        }
        int storageTokens = load.storagePageCount() * pageSize;
        int hostTokens = load.pageCount() * pageSize - storageTokens;
        host += hostTokens;
        storage += storageTokens;
        accounted = Math.max(accounted, first + load.pageCount() * pageSize);
        counted.add(new Counted(load, first, 0, hostTokens, storageTokens));
        return load;
    }

    /**
     * {@link HiCache#joinLoad(MatchResult, long)} for this request: the load its device prefix is waiting for, or
     * null. Counted in {@link Metric#LOAD_JOINS} only when it is another request's load; this request's own is
     * returned too (for its {@link LoadHandle#consumer()}), uncounted. Scheduler thread.
     *
     * @throws IllegalStateException if the request ended, or as {@link HiCache#joinLoad(MatchResult)}
     */
    public LoadHandle joinLoad(MatchResult match) {
        checkOpen();
        settle();
        LoadHandle load = cache.joinLoad(match, requestId);
        if (load != null && load.requestId() != requestId && !tracks(load)) {
            // the tokens of its chain this request counted as device hits (they are not, should it fail)
            int first = load.firstPage() * pageSize;
            int end = Math.min(accounted, first + load.pageCount() * pageSize);
            if (end > first) {
                counted.add(new Counted(load, first, end - first, 0, 0));
            }
        }
        return load;
    }

    // ------------------------------------------------------------------ insert and backups

    /**
     * {@link HiCache#insert} for this request, with the page bookkeeping done: of the caller's pages for the
     * prefix the tree already held ({@code [pagesFrom, pagesFrom + r / pageSize)}, r the return value), those that
     * are not the tree's own page at that position go to {@code duplicates} (a page list built from a match's
     * {@link MatchResult#devicePage(int)} hands the tree's pages back: those stay the tree's), and every later page
     * now belongs to the cache. The request's lock moves to {@link HiCache#lastInsertNode()}, so its new pages stay
     * on the device while it runs; the tokens the tree already held and the request had not counted count as device
     * hits; the new pages are the request's until {@link #markComputed} says they are computed. Scheduler thread.
     *
     * @return tokens already present on device (a multiple of the page size)
     * @throws IllegalArgumentException as {@link HiCache#insert}, or if {@code duplicates} is null
     * @throws IllegalStateException if the request ended, or as {@link HiCache#insert}
     */
    public int insert(int[] tokens, int from, int len, int[] devicePages, int pagesFrom, DevicePageSink duplicates) {
        checkOpen();
        settle();
        if (duplicates == null) {
            throw new IllegalArgumentException("duplicates must not be null");
        }
        int present = cache.insert(tokens, from, len, devicePages, pagesFrom);
        RadixNode last = cache.lastInsertNode();
        freeDuplicates(last, present / pageSize, devicePages, pagesFrom, duplicates);
        int end = (len / pageSize) * pageSize;
        countDevice(present);
        if (end > present) {
            addOwnRange(present, end);
        }
        accounted = Math.max(accounted, end);
        if (!last.isRoot()) {
            lastInserted = last;
            lockDeepest(last);
        }
        return present;
    }

    /**
     * {@link HiCache#reserveByPolicy} of the path this request last inserted: the backups reserved are added to
     * {@code out} (to pass to {@link HiCache#beginForward}) and tracked, so {@link #cancel} aborts those no forward
     * began with. Nothing before the first insert. Scheduler thread.
     *
     * @return how many were reserved
     * @throws IllegalStateException if the request ended, or as {@link HiCache#reserveByPolicy}
     */
    public int reserveByPolicy(boolean withDraft, List<? super BackupHandle> out) {
        checkOpen();
        if (out == null) {
            throw new IllegalArgumentException("out must not be null");
        }
        if (lastInserted == null || !lastInserted.isAttached()) {
            return 0;
        }
        reserved.clear();
        int n = cache.reserveByPolicy(lastInserted, withDraft, reserved);
        backups.removeIf(b -> b.state().terminal()); // a long request reserves at every step: keep only live ones
        backups.addAll(reserved);
        out.addAll(reserved);
        reserved.clear();
        return n;
    }

    /**
     * Tells the request that tokens {@code [0, tokens)} of its sequence are computed: the forward that computes them
     * has been launched (its kernels are enqueued), so later work on the compute stream reads them written. Call it
     * after {@link HiCache#beginForward} for the request's part of each forward; {@link #cancel} keeps these pages
     * and withdraws the rest of what the request inserted. A page computed in part counts as not computed. Lower
     * values than before change nothing. Scheduler thread.
     *
     * @throws IllegalArgumentException if {@code tokens} is negative
     * @throws IllegalStateException if the request ended
     */
    public void markComputed(int tokens) {
        checkOpen();
        if (tokens < 0) {
            throw new IllegalArgumentException("tokens " + tokens + " must be >= 0");
        }
        computed = Math.max(computed, tokens);
    }

    // ------------------------------------------------------------------ end

    /**
     * Ends the request normally: releases its lock; its backups go on and commit, and what it inserted stays cached.
     * The token counts stay readable. Scheduler thread.
     *
     * @throws IllegalStateException if the request already ended, or the cache is closed
     */
    public void finish() {
        checkOpen();
        settle();
        open = false;
        unlockHeld();
    }

    /**
     * Ends a cancelled or preempted request: aborts with {@code reason} its backups no forward began with, releases
     * its lock, and withdraws the pages it inserted but never computed ({@link #markComputed}) with everything cached
     * below them ({@link HiCache#withdrawUncomputed}: their backups abort with {@code reason} too), their device pages
     * going to {@code sink} (those a backup's copies may still read once they drained, at a later
     * {@link HiCache#poll()}). Pages it computed, and those it found cached, stay, and the backups of computed pages
     * whose forward began go on and commit. A load it started goes on and its pages stay cached. Scheduler thread.
     *
     * @return device pages withdrawn from the tree
     * @throws IllegalArgumentException if {@code reason} or {@code sink} is null
     * @throws IllegalStateException if the request already ended or the cache is closed; or if another request
     *     still locks pages this one never computed (it matched them): the backups were aborted and the lock
     *     released, the request has ended, but nothing was withdrawn (end or replan that request, then call
     *     {@link HiCache#withdrawUncomputed} for these pages)
     */
    public int cancel(AbortReason reason, DevicePageSink sink) {
        checkOpen();
        if (reason == null || sink == null) {
            throw new IllegalArgumentException("reason and sink must not be null");
        }
        settle();
        open = false;
        for (int i = 0; i < backups.size(); i++) {
            BackupHandle b = backups.get(i);
            if (b.state() == BackupState.RESERVED) {
                cache.abort(b, reason); // no forward began with it: it would hold its pages until its lease ran out
            }
        }
        unlockHeld();
        int from = firstUncomputedToken();
        if (from < 0 || lastInserted == null || !lastInserted.isAttached()) {
            return 0;
        }
        int[] path = pathTokens(lastInserted);
        if (from >= path.length) {
            return 0;
        }
        return cache.withdrawUncomputed(path, 0, path.length, from, reason, sink);
    }

    // ------------------------------------------------------------------ what it was served

    /**
     * Prompt tokens the request found on the device (already there, or being loaded for another request when it
     * matched them). Scheduler thread.
     */
    public int deviceTokens() {
        settle();
        return device;
    }

    /** Prompt tokens the request's own loads brought back from host memory. Scheduler thread. */
    public int hostTokens() {
        settle();
        return host;
    }

    /**
     * Prompt tokens the request's own loads brought back that a storage prefetch had just published from the L3
     * tier (0 without one). Scheduler thread.
     */
    public int storageTokens() {
        settle();
        return storage;
    }

    /** {@link #deviceTokens()} + {@link #hostTokens()} + {@link #storageTokens()}: the client's {@code cached_tokens}. */
    public int cachedTokens() {
        settle();
        return device + host + storage;
    }

    /** The deepest node the request holds locked (its whole path is), or null. Scheduler thread. */
    public RadixNode lockedNode() {
        return locked;
    }

    @Override
    public String toString() {
        return "CacheRequest{id=" + requestId + ", open=" + open + ", device=" + device + ", host=" + host
            + ", storage=" + storage + ", computed=" + computed + '}';
    }

    // ------------------------------------------------------------------ internals

    private void checkOpen() {
        if (!open) {
            throw new IllegalStateException("request " + requestId + " has ended (finish or cancel)");
        }
    }

    /** Counts the device tokens of a prefix of {@code tokens} not counted yet. */
    private void countDevice(int tokens) {
        if (tokens > accounted) {
            device += tokens - accounted;
            cache.countDeviceHit(tokens - accounted);
            accounted = tokens;
        }
    }

    /**
     * Takes out of the split the tokens of loads that failed (the engine recomputes them, so they are no longer
     * counted as served); forgets loads that completed.
     */
    private void settle() {
        for (int i = counted.size() - 1; i >= 0; i--) {
            Counted c = counted.get(i);
            LoadHandle.State s = c.load().state();
            if (s == LoadHandle.State.FAILED) {
                device -= c.device();
                host -= c.host();
                storage -= c.storage();
                accounted = Math.min(accounted, c.firstToken());
                computed = Math.min(computed, c.firstToken()); // what was computed over it was dropped with it
                counted.remove(i);
            } else if (s == LoadHandle.State.LOADED) {
                counted.remove(i);
            }
        }
    }

    private boolean tracks(LoadHandle load) {
        for (int i = 0; i < counted.size(); i++) {
            if (counted.get(i).load() == load) {
                return true;
            }
        }
        return false;
    }

    /**
     * Moves the request's lock to {@code node} unless {@code node} lies above the node locked so far (already locked
     * through it): a node below it, or off its path (a request that changed its sequence), takes the lock.
     */
    private void lockDeepest(RadixNode node) {
        if (node == null || node.isRoot() || node == locked) {
            return;
        }
        if (locked != null && locked.isAttached() && isBelow(locked, node)) {
            return;
        }
        cache.lock(node); // first: the path the two share stays locked throughout
        unlockHeld();
        locked = node;
    }

    /** Whether {@code node} is {@code ancestor} or lies below it. */
    private static boolean isBelow(RadixNode node, RadixNode ancestor) {
        for (RadixNode n = node; n != null; n = n.parent()) {
            if (n == ancestor) {
                return true;
            }
        }
        return false;
    }

    private void unlockHeld() {
        if (locked != null) {
            RadixNode n = locked;
            locked = null;
            cache.unlock(n); // a no-op on a node a failed load removed
        }
    }

    /** Frees the caller's pages for the present prefix that the tree does not hold (duplicates). */
    private static void freeDuplicates(RadixNode last, int presentPages, int[] pages, int pagesFrom,
                                       DevicePageSink sink) {
        if (presentPages == 0) {
            return;
        }
        int end = 0;
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            end += n.pageCount();
        }
        for (RadixNode n = last; n != null && !n.isRoot(); n = n.parent()) {
            int start = end - n.pageCount();
            for (int p = start; p < Math.min(end, presentPages); p++) {
                if (!n.hasDeviceValue() || n.devicePage(p - start) != pages[pagesFrom + p]) {
                    sink.free(pages, pagesFrom + p, 1);
                }
            }
            end = start;
        }
    }

    private void addOwnRange(int from, int to) {
        if (ownRangeCount > 0 && ownRanges[2 * ownRangeCount - 1] == from) {
            ownRanges[2 * ownRangeCount - 1] = to;
            return;
        }
        if (2 * ownRangeCount == ownRanges.length) {
            ownRanges = java.util.Arrays.copyOf(ownRanges, ownRanges.length * 2);
        }
        ownRanges[2 * ownRangeCount] = from;
        ownRanges[2 * ownRangeCount + 1] = to;
        ownRangeCount++;
    }

    /** The first token this request inserted and has not computed (page-aligned), or -1. */
    private int firstUncomputedToken() {
        int done = (computed / pageSize) * pageSize;
        int first = -1;
        for (int i = 0; i < ownRangeCount; i++) {
            int from = ownRanges[2 * i];
            int to = ownRanges[2 * i + 1];
            if (to > done && (first < 0 || Math.max(from, done) < first)) {
                first = Math.max(from, done);
            }
        }
        return first;
    }

    /** The tokens of the path from the root to {@code last}. */
    private static int[] pathTokens(RadixNode last) {
        int len = 0;
        for (RadixNode n = last; !n.isRoot(); n = n.parent()) {
            len += n.tokenCount();
        }
        int[] tokens = new int[len];
        int end = len;
        for (RadixNode n = last; !n.isRoot(); n = n.parent()) {
            end -= n.tokenCount();
            n.copyTokens(tokens, end);
        }
        return tokens;
    }

}
