package io.hicache.storage.tier;

import io.hicache.core.BackupHandle;
import io.hicache.core.spi.StoragePort;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StorageMetric;
import io.hicache.storage.StorageTierConfig;
import io.hicache.storage.StorageWritePolicy;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The L2 → L3 half of a {@link StorageTier}: writes committed host pages to the store under the
 * {@link StorageWritePolicy}. Commits are queued by the tier's listener and handled in {@link #poll()} (never inside
 * the controller's callbacks). A write asks the store which of its keys exist and puts only the rest; keys known to
 * be stored are not asked again. While a write reads a node's host pages the node is host-protected; write-back
 * copies evicted pages into a bounded staging area first, since their host pages are freed at once.
 *
 * <p><b>Protection in a CP group.</b> Host eviction must pick the same nodes on every rank, so a node's protection is
 * agreed state: taken when its write starts (on every rank, at the same point, even where this lane has nothing of
 * it to put) and dropped, in the order taken, once the group agrees that every rank finished it
 * ({@link PrefetchAgreement}, run by the tier; see {@link #agreementValue} and {@link #agreed}), never when this
 * rank's store answered. A write-back is tracked the same way (it protects nothing: its pages are staged copies).
 *
 * <p><b>KV events.</b> A rank alone tells the cache's observer of each run of a node write's pages as soon as its
 * store batch committed them. In a CP group each rank writes only its own lanes, so no rank's store answers name a
 * whole page run: the observer (the speaker rank's) is told of a write's whole page range once the group agreed that
 * every rank finished it with every page stored or found; a write that failed anywhere is not announced. A
 * write-back is announced that way on a rank alone too. Every announcement goes through the {@link L3Announcer},
 * which keeps prefix order: a run whose parent page is not announced yet waits for it (a child node's write or a
 * later batch of the same node finishing first; host eviction takes a leaf before its parent, so a child's
 * write-back may finish before its parent's), and is never announced when the parent never is (its write failed).
 *
 * <p><b>Draft KV.</b> In a cache with draft/MTP layers a page whose host copy carries its draft KV is written as two
 * objects: its draft part under its draft key ({@link PageHasher#draftKey}), then its target part under its key, and
 * the target only for pages whose draft put succeeded, so the target object commits the pair. A page counts as
 * stored when both parts are (readers check both, since either may be lost later).
 *
 * <p>Owned by the scheduler thread.
 */
final class TierWriter {
    /** The cache's controller, reached only through its storage port. */
    private final StoragePort ctl;
    private final PageStore store;
    private final StorageTierConfig cfg;
    private final StorageTierCounters metrics;
    private final PageHasher hasher;
    private final HostViews views;
    private final KnownKeys known;
    /** What the observer is told of L3 commits, in prefix order. */
    private final L3Announcer announcer;
    private final int maxBatch;
    private final ArrayList<Write> writes = new ArrayList<>();
    private final ArrayList<RadixNode> committed = new ArrayList<>();
    /** Node writes and write-backs in the order they started, until the group agrees every rank finished them. */
    private final ArrayDeque<NodeWrite> tracked = new ArrayDeque<>();
    /** In a CP group: L3 commits are announced when the group agreed on them, not as this rank's store answers. */
    private final boolean group;
    private long releasedWrites;
    private int stagedPages;
    private boolean closing;

    TierWriter(StoragePort ctl, PageStore store, StorageTierConfig cfg, StorageTierCounters metrics,
               PageHasher hasher, HostViews views, KnownKeys known, L3Announcer announcer, boolean group) {
        this.ctl = ctl;
        this.store = store;
        this.cfg = cfg;
        this.metrics = metrics;
        this.hasher = hasher;
        this.views = views;
        this.known = known;
        this.announcer = announcer;
        this.maxBatch = Math.max(1, store.maxBatchPages());
        this.group = group;
        known.whenForgotten(this::onGone);
    }

    /**
     * A read found {@code key} gone from the store. A write not announced yet that covers it may have counted it
     * stored (known, or found by an existence check answered before the loss): a whole-range announcement (group
     * write, write-back) would follow the read's removal and claim it, so that write is not announced (it fails
     * here, and in a group the group agrees it failed); a node write on a rank alone leaves it out of its runs.
     */
    private void onGone(PageKey key) {
        for (NodeWrite t : tracked) {
            if (t.keys.contains(key)) {
                t.failed = true;
                if (t.goneKeys == null) {
                    t.goneKeys = new ArrayList<>(1);
                }
                t.goneKeys.add(key);
            }
        }
    }

    /** Write batches not yet done. */
    int size() {
        return writes.size();
    }

    /** Writes awaiting the group's agreement (agreed state: the same on every rank). */
    int trackedCount() {
        return tracked.size();
    }

    /**
     * This rank's contribution to the group minimum that releases tracked writes, counted in the order they started:
     * {@code 2d} when the first {@code d} are done here and none of them failed, {@code 2f + 1} when the {@code f}-th
     * is the first failed one among those done. The group minimum {@code m} then says: writes before {@code m / 2}
     * are done on every rank with every page stored, and when {@code m} is odd the write at {@code m / 2} is done on
     * every rank and failed on some.
     */
    long agreementValue() {
        long index = releasedWrites;
        for (NodeWrite t : tracked) {
            if (t.batches > 0) {
                break;
            }
            if (t.failed) {
                return 2 * index + 1;
            }
            index++;
        }
        return 2 * index;
    }

    /**
     * The group (or a rank alone) agreed on {@code value} (the minimum of {@link #agreementValue()}): drops the
     * protection of the writes it releases and, when {@code decided} (not a degraded round's local values), tells the
     * cache's observer of the whole page range of each write-back, and in a group of each node write, that every
     * rank stored (through the announcer, which keeps a run whose parent is not announced yet waiting for it).
     *
     * @return work done
     */
    int agreed(long value, boolean decided) {
        long ok = value >>> 1;
        long end = ok + (value & 1);
        int work = 0;
        while (releasedWrites < end && !tracked.isEmpty()) {
            NodeWrite t = tracked.pollFirst();
            if (t.node != null) {
                ctl.releaseHostCopy(t.node);
            }
            if (decided && releasedWrites < ok && (t.node == null || group)) {
                announce(t); // stored by every rank (failed, or nothing agreed: not announced)
            }
            releasedWrites++;
            work++;
        }
        return work;
    }

    /** Shutdown, after {@link #drain} found every write done: drops every protection. */
    void close(boolean live) {
        for (NodeWrite t : tracked) {
            if (live && t.node != null) {
                ctl.releaseHostCopy(t.node);
            }
        }
        releasedWrites += tracked.size();
        tracked.clear();
    }

    /** Tells the observer of {@code t}'s whole page range (a group write every rank committed). */
    private void announce(NodeWrite t) {
        StoragePort.StorageTransitions o = observer();
        if (o == null || t.pages == 0) {
            return;
        }
        if (t.node == null) {
            if (t.sequence != null) {
                announcer.sequencePagesStored(t.sequence, t.startPage, t.pages, t.sequenceFps);
            }
        } else if (t.node.isAttached()) {
            storedRun(t.node, startPage(t.node), t.startPage, t.startPage + t.pages);
        }
    }

    /** A backup committed: its nodes are considered at the next {@link #poll()}. */
    void onCommitted(BackupHandle handle) {
        ctl.committedNodes(handle, committed);
    }

    /**
     * Write-back: {@code node}'s host pages are about to be freed; copies and writes the owned ones. Tracked on every
     * rank of a group (host eviction is agreed), even one with nothing of it to write or no room to stage it.
     */
    void onHostEvicting(RadixNode node, StoragePort.HostCopy pages) {
        if (cfg.writePolicy() != StorageWritePolicy.WRITE_BACK) {
            return;
        }
        hasher.ensureHashes(node);
        int startPage = startPage(node);
        NodeWrite t = new NodeWrite(null, startPage, pages.pageCount());
        // the node is gone when the write commits: its KV events name the pages by their sequence
        t.sequence = observer() == null ? null : sequenceTokens(node, startPage, ctl.pageSize());
        t.sequenceFps = t.sequence == null ? null : announcer.nodeFps(node, 0, node.pageCount());
        tracked.add(t);
        int[] offsets = new int[pages.pageCount()];
        List<PageKey> keys = ownedKeys(node, pages, null, null, offsets, null);
        t.keys = keys;
        int n = keys.size();
        if (n == 0) {
            return;
        }
        if (stagedPages + n > cfg.writeBackStagingPages()) {
            metrics.add(StorageMetric.WRITE_BACK_DROPPED_PAGES, n);
            t.failed = true;
            return;
        }
        boolean draft = views.hasDraft() && pages.hasDraft();
        long pageBytes = views.pageBytes();
        long draftBytes = draft ? views.draftPageBytes() : 0;
        long stride = pageBytes + draftBytes;
        stagedPages += n;
        // the host pages are freed when this returns: copy them out now, a store batch at a time
        for (int from = 0; from < n; from += maxBatch) {
            int to = Math.min(n, from + maxBatch);
            @SuppressWarnings("MustBeClosedChecker") // owned by the Write, closed when the write completes
            Arena arena = Arena.ofShared();
            MemorySegment staging = arena.allocate(stride * (to - from), 64);
            List<HostPage> staged = new ArrayList<>(to - from);
            List<HostPage> stagedDraft = draft ? new ArrayList<>(to - from) : null;
            for (int i = from; i < to; i++) {
                MemorySegment slice = staging.asSlice(stride * (i - from), pageBytes);
                views.of(pages.hostPage(i)).copyTo(slice, 0);
                staged.add(HostPage.of(slice));
                if (draft) {
                    MemorySegment d = staging.asSlice(stride * (i - from) + pageBytes, draftBytes);
                    views.draft(pages.hostPage(i)).copyTo(d, 0);
                    stagedDraft.add(HostPage.of(d));
                }
            }
            List<PageKey> batch = new ArrayList<>(keys.subList(from, to));
            t.batches++;
            start(new Write(t, batch, staged, draft ? draftKeys(batch) : null, stagedDraft, arena,
                    java.util.Arrays.copyOfRange(offsets, from, to)));
        }
    }

    /**
     * Write-through-selective: writes the nodes of {@code match}'s path whose hit count reached the threshold, from
     * the top (a parent's write starts, and is announced, before its child's).
     */
    void onMatch(MatchResult match) {
        if (cfg.writePolicy() != StorageWritePolicy.WRITE_THROUGH_SELECTIVE) {
            return;
        }
        List<RadixNode> path = null;
        for (RadixNode n = match.lastHostNode(); n != null && !n.isRoot(); n = n.parent()) {
            if (n.hostValue() != null && n.hitCount() >= cfg.hitThreshold() && n.hostRef() == 0) {
                if (path == null) {
                    path = new ArrayList<>();
                }
                path.add(n);
            }
        }
        for (int i = path == null ? -1 : path.size() - 1; i >= 0; i--) {
            writeNode(path.get(i));
        }
    }

    /** Handles queued commits and advances writes whose store operations finished; returns work done. */
    int poll() {
        int work = 0;
        for (int i = 0; i < committed.size(); i++) {
            RadixNode n = committed.get(i);
            if (!n.isAttached() || n.hostValue() == null) {
                continue;
            }
            hasher.ensureHashes(n);
            if (cfg.writePolicy() == StorageWritePolicy.WRITE_THROUGH
                    || (cfg.writePolicy() == StorageWritePolicy.WRITE_THROUGH_SELECTIVE
                    && n.hitCount() >= cfg.hitThreshold())) {
                writeNode(n);
            }
            work++;
        }
        committed.clear();
        for (int i = writes.size() - 1; i >= 0; i--) {
            if (advance(writes.get(i))) {
                writes.remove(i);
                work++;
            }
        }
        return work;
    }

    /**
     * Shutdown: no new puts; advances every write as far as the store has answered.
     *
     * @return a store operation still running, or null when every write is done
     */
    StoreOp<?> drain() {
        closing = true;
        committed.clear();
        StoreOp<?> pending = null;
        for (int i = writes.size() - 1; i >= 0; i--) {
            Write w = writes.get(i);
            if (advance(w)) {
                writes.remove(i);
            } else {
                pending = w.put != null ? w.put : w.draftPut != null ? w.draftPut
                        : !w.exists.isDone() ? w.exists : w.draftExists;
            }
        }
        return pending;
    }

    private void writeNode(RadixNode n) {
        StoragePort.HostCopy hp = ctl.hostCopy(n);
        hasher.ensureHashes(n);
        boolean draft = views.hasDraft() && hp.hasDraft();
        List<HostPage> pages = new ArrayList<>();
        List<HostPage> draftPages = draft ? new ArrayList<>() : null;
        int[] offsets = new int[hp.pageCount()];
        List<PageKey> all = new ArrayList<>(hp.pageCount());
        List<PageKey> keys = ownedKeys(n, hp, pages, draftPages, offsets, all);
        // protected on every rank, even with nothing to put here: see the class comment
        NodeWrite t = new NodeWrite(n, startPage(n), hp.pageCount());
        t.keys = all;
        ctl.protectHostCopy(n);
        tracked.add(t);
        if (keys.isEmpty()) {
            return;
        }
        List<PageKey> draftKeys = draft ? draftKeys(keys) : null;
        for (int from = 0; from < keys.size(); from += maxBatch) {
            int to = Math.min(keys.size(), from + maxBatch);
            t.batches++;
            start(new Write(t, new ArrayList<>(keys.subList(from, to)), new ArrayList<>(pages.subList(from, to)),
                    draft ? new ArrayList<>(draftKeys.subList(from, to)) : null,
                    draft ? new ArrayList<>(draftPages.subList(from, to)) : null, null,
                    java.util.Arrays.copyOfRange(offsets, from, to)));
        }
    }

    /**
     * Keys of the owned positions: all of them when {@code pagesOut} is null (write-back, aligned with the evicted
     * value's pages: the existence check skips stored ones), else those not known to be stored, with their host page
     * views (and draft views, if {@code draftOut} is given: a page is known only when its draft part is too).
     * {@code offsetsOut} receives each returned key's page offset in the node, {@code allOut} (if given) every owned
     * key, the known ones too.
     */
    private List<PageKey> ownedKeys(RadixNode n, StoragePort.OwnedPages lanes, List<HostPage> pagesOut,
                                    List<HostPage> draftOut, int[] offsetsOut, List<PageKey> allOut) {
        StoragePort.HostCopy hp = ctl.hostCopy(n);
        int[] offsets = new int[lanes.pageCount()];
        // a node and its host value cover the same positions; its lanes say which this rank owns
        int owned = lanes.ownedOffsets(offsets);
        List<PageKey> keys = new ArrayList<>(owned);
        for (int i = 0; i < owned; i++) {
            PageKey k = hasher.nodeKey(n, offsets[i]);
            if (allOut != null) {
                allOut.add(k);
            }
            if (pagesOut == null) {
                offsetsOut[keys.size()] = offsets[i];
                keys.add(k);
                continue;
            }
            if (known.contains(k) && (draftOut == null || known.contains(hasher.draftKey(k)))) {
                metrics.increment(StorageMetric.WRITE_PAGES_PRESENT);
                metrics.increment(StorageMetric.WRITE_PAGES_KNOWN);
                continue;
            }
            offsetsOut[keys.size()] = offsets[i];
            keys.add(k);
            pagesOut.add(views.of(hp.hostPage(i)));
            if (draftOut != null) {
                draftOut.add(views.draft(hp.hostPage(i)));
            }
        }
        return keys;
    }

    private List<PageKey> draftKeys(List<PageKey> keys) {
        List<PageKey> out = new ArrayList<>(keys.size());
        for (PageKey k : keys) {
            out.add(hasher.draftKey(k));
        }
        return out;
    }

    private void start(Write w) {
        w.ioStartNs = System.nanoTime();
        w.exists = store.existsPrefix(w.keys);
        w.draftExists = w.draftKeys == null ? null : store.existsPrefix(w.draftKeys);
        writes.add(w);
    }

    /** Advances a write (existence checks, draft put, target put); returns true when it is done and ended. */
    private boolean advance(Write w) {
        if (w.put == null && w.draftPut == null) {
            return existsDone(w);
        }
        if (w.put == null) {
            return draftPutDone(w);
        }
        if (!w.put.isDone()) {
            return false;
        }
        StoreResult r = w.put.result();
        int ok = 0;
        int[] stored = new int[r.size()];
        for (int i = 0; i < r.size(); i++) {
            if (r.ok(i)) {
                stored[ok++] = w.putIndex[i];
                if (!foundGone(w, w.putIndex[i])) { // else the read that found it gone may have come after
                    known.add(w.putKeys.get(i));
                }
            }
        }
        l3Stored(w, stored, ok);
        metrics.add(StorageMetric.WRITE_PAGES_STORED, ok);
        metrics.recordWrite(ok * (views.pageBytes() + (w.draftKeys == null ? 0 : views.draftPageBytes())),
                System.nanoTime() - w.ioStartNs);
        metrics.add(StorageMetric.WRITE_FAILED_PAGES, w.failedDrafts + r.size() - ok);
        finish(w);
        return true;
    }

    /** The cache's observer of tier transitions (its KV events), or null. */
    private StoragePort.StorageTransitions observer() {
        return ctl.storageTransitions();
    }

    /**
     * The pages of {@code w} at key indices {@code idx[0, n)} (ascending) are committed in the store (their commit
     * markers written, or found there): counts them and, for a node write on a rank alone, tells the cache's
     * observer, one call per run of consecutive pages, so a node written in several batches is announced batch by
     * batch (write-backs, and every write in a group: see {@link #agreed}).
     */
    private void l3Stored(Write w, int[] idx, int n) {
        w.stored += n;
        StoragePort.StorageTransitions o = group || w.node == null ? null : observer();
        if (o == null || n == 0 || !w.node.isAttached()) {
            return;
        }
        for (int j = 0; j < n; ) {
            if (foundGone(w, idx[j])) {
                j++; // a read found it gone since this write counted it: see onGone
                continue;
            }
            int first = w.tracked.startPage + w.offsets[idx[j]];
            int end = first + 1;
            j++;
            while (j < n && w.tracked.startPage + w.offsets[idx[j]] == end && !foundGone(w, idx[j])) {
                end++;
                j++;
            }
            storedRun(w.node, startPage(w.node), first, end);
        }
    }

    /** Whether a read found the page at key index {@code i} of {@code w} gone while the write was tracked. */
    private static boolean foundGone(Write w, int i) {
        List<PageKey> gone = w.tracked.goneKeys;
        return gone != null && gone.contains(w.keys.get(i));
    }

    /**
     * Reports pages {@code [first, end)} of the sequence, which end in {@code node} (its first page at {@code start})
     * or in its ancestors (a split since the write started moved the node's leading pages into a new parent),
     * through the announcer (prefix order), parents' parts first.
     */
    private void storedRun(RadixNode node, int start, int first, int end) {
        if (node.isRoot()) {
            return;
        }
        if (first < start) {
            RadixNode parent = node.parent();
            storedRun(parent, parent.isRoot() ? 0 : start - parent.pageCount(), first, Math.min(end, start));
        }
        int lo = Math.max(first, start);
        int hi = Math.min(end, start + node.pageCount());
        if (lo < hi) {
            announcer.nodePagesStored(node, lo - start, hi - lo);
        }
    }

    /** The sequence position of {@code node}'s first page (the pages of its ancestors). */
    static int startPage(RadixNode node) {
        int pages = 0;
        for (RadixNode p = node.parent(); p != null && !p.isRoot(); p = p.parent()) {
            pages += p.pageCount();
        }
        return pages;
    }

    /** The tokens of the path from the root to the end of {@code node}, which starts at page {@code startPage}. */
    static int[] sequenceTokens(RadixNode node, int startPage, int pageSize) {
        int[] tokens = new int[(startPage + node.pageCount()) * pageSize];
        int end = tokens.length;
        for (RadixNode p = node; p != null && !p.isRoot(); p = p.parent()) {
            end -= p.tokenCount();
            p.copyTokens(tokens, end);
        }
        return tokens;
    }

    /**
     * The existence checks of {@code w}: once answered, puts what is missing (a page is present only when both its
     * parts are), the draft parts first. Returns true when the write ended (nothing to put, or closing).
     */
    private boolean existsDone(Write w) {
        if (!w.exists.isDone() || (w.draftExists != null && !w.draftExists.isDone())) {
            return false;
        }
        int present = Math.min(w.keys.size(), Math.max(0, w.exists.result()));
        if (w.draftExists != null) {
            present = Math.min(present, Math.max(0, w.draftExists.result()));
        }
        for (int i = 0; i < present; i++) {
            // a read found it missing or damaged: the check looks at its length and trailer only, so put it again
            if (known.isSuspect(w.keys.get(i)) || (w.draftKeys != null && known.isSuspect(w.draftKeys.get(i)))) {
                present = i;
            }
        }
        metrics.add(StorageMetric.WRITE_PAGES_PRESENT, present);
        for (int i = 0; i < present; i++) {
            if (foundGone(w, i)) {
                continue; // a check answered before a read found it gone: not in the store any more
            }
            known.add(w.keys.get(i));
            if (w.draftKeys != null) {
                known.add(w.draftKeys.get(i));
            }
        }
        if (present > 0) {
            int[] idx = new int[present];
            for (int i = 0; i < present; i++) {
                idx[i] = i;
            }
            l3Stored(w, idx, present);
        }
        if (present == w.keys.size() || closing) {
            finish(w);
            return true;
        }
        w.offset = present;
        metrics.add(StorageMetric.WRITE_PAGES_SUBMITTED, w.keys.size() - present);
        if (w.draftKeys != null) {
            w.draftPut = store.put(w.draftKeys.subList(present, w.keys.size()),
                    w.draftPages.subList(present, w.keys.size()));
        } else {
            w.putKeys = w.keys.subList(present, w.keys.size());
            w.putIndex = new int[w.putKeys.size()];
            for (int i = 0; i < w.putIndex.length; i++) {
                w.putIndex[i] = present + i;
            }
            w.put = store.put(w.putKeys, w.pages.subList(present, w.keys.size()));
        }
        return false;
    }

    /**
     * The draft put of {@code w}: once done, puts the target part of the pages whose draft part is stored, so the
     * target object commits the pair. Returns true when the write ended (no draft part stored, or closing).
     */
    private boolean draftPutDone(Write w) {
        if (!w.draftPut.isDone()) {
            return false;
        }
        StoreResult d = w.draftPut.result();
        List<PageKey> keys = new ArrayList<>(d.size());
        List<HostPage> pages = new ArrayList<>(d.size());
        int[] index = new int[d.size()];
        for (int i = 0; i < d.size(); i++) {
            if (d.ok(i)) {
                known.add(w.draftKeys.get(w.offset + i));
                index[keys.size()] = w.offset + i;
                keys.add(w.keys.get(w.offset + i));
                pages.add(w.pages.get(w.offset + i));
            }
        }
        w.failedDrafts = d.size() - keys.size();
        if (keys.isEmpty() || closing) {
            metrics.add(StorageMetric.WRITE_FAILED_PAGES, d.size());
            metrics.recordWrite(0, System.nanoTime() - w.ioStartNs);
            finish(w);
            return true;
        }
        w.putKeys = keys;
        w.putIndex = index;
        w.put = store.put(keys, pages);
        return false;
    }

    private void finish(Write w) {
        if (!w.released) {
            w.tracked.batches--; // a protection is dropped when the group agrees (see agreed)
            w.tracked.failed |= w.stored < w.keys.size();
        }
        w.released = true;
        if (w.staging != null) {
            stagedPages -= w.keys.size();
            w.staging.close();
        }
    }

    /**
     * One write batch: existence checks, then a put of the pages not stored yet (with draft parts: their draft put,
     * then the target put of those whose draft part is stored). Scheduler thread.
     */
    private static final class Write {
        /** The node write or write-back this batch belongs to. */
        final NodeWrite tracked;
        /** The node written ({@code tracked}'s), or null for write-back (staged copies). */
        final RadixNode node;
        final List<PageKey> keys;
        final List<HostPage> pages;
        final List<PageKey> draftKeys;
        final List<HostPage> draftPages;
        final Arena staging;
        /** Each key's page offset in the node (write-back: in the evicted node), from {@code tracked.startPage}. */
        final int[] offsets;
        /** The index in {@link #keys} of each key of {@link #putKeys}. */
        int[] putIndex;
        StoreOp<Integer> exists;
        StoreOp<Integer> draftExists;
        StoreOp<StoreResult> draftPut;
        StoreOp<StoreResult> put;
        List<PageKey> putKeys;
        int offset;
        int failedDrafts;
        /** Pages committed in the store: put, or found by the existence check. */
        int stored;
        long ioStartNs;
        boolean released;

        /** @param draftKeys the draft keys aligned with {@code keys}, or null to write the target KV only */
        Write(NodeWrite tracked, List<PageKey> keys, List<HostPage> pages, List<PageKey> draftKeys,
              List<HostPage> draftPages, Arena staging, int[] offsets) {
            this.tracked = tracked;
            this.node = tracked.node;
            this.keys = keys;
            this.pages = pages;
            this.draftKeys = draftKeys;
            this.draftPages = draftPages;
            this.staging = staging;
            this.offsets = offsets;
        }
    }

    /**
     * One node's write (its protection) or write-back: its page range, the batches of it still running on this rank
     * and whether one of them left a page unstored. Scheduler thread.
     */
    private static final class NodeWrite {
        /** The protected node, or null for a write-back. */
        final RadixNode node;
        /** The sequence position of the node's first page and its page count when the write started. */
        final int startPage;
        final int pages;
        /** Write-back with an observer: the tokens from the root to the node's end, for its KV events. */
        int[] sequence;
        /** With {@link #sequence}: the fingerprints of the page before the node and of its pages (L3Announcer). */
        long[] sequenceFps;
        /** Every key this rank owns in the write (known ones too). */
        List<PageKey> keys = List.of();
        /** Keys of {@link #keys} a read found gone while this write was tracked, or null. */
        List<PageKey> goneKeys;
        int batches;
        boolean failed;

        NodeWrite(RadixNode node, int startPage, int pages) {
            this.node = node;
            this.startPage = startPage;
            this.pages = pages;
        }
    }
}
