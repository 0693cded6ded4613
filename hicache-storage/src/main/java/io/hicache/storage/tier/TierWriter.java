package io.hicache.storage.tier;

import io.hicache.core.BackupHandle;
import io.hicache.core.internal.Backup;
import io.hicache.core.internal.HiCacheController;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
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
import java.util.ArrayList;
import java.util.List;

/**
 * The L2 → L3 half of a {@link StorageTier}: writes committed host pages to the store under the
 * {@link StorageWritePolicy}. Commits are queued by the tier's listener and handled in {@link #poll()} (never inside
 * the controller's callbacks). A write asks the store which of its keys exist and puts only the rest; keys known to
 * be stored are not asked again. While a write reads a node's host pages the node is host-protected; write-back
 * copies evicted pages into a bounded staging area first, since their host pages are freed at once.
 *
 * <p>Owned by the scheduler thread.
 */
final class TierWriter {
    private final HiCacheController ctl;
    private final RadixTree tree;
    private final PageStore store;
    private final StorageTierConfig cfg;
    private final StorageTierCounters metrics;
    private final PageHasher hasher;
    private final HostViews views;
    private final KnownKeys known;
    private final int maxBatch;
    private final ArrayList<Write> writes = new ArrayList<>();
    private final ArrayList<RadixNode> committed = new ArrayList<>();
    private int stagedPages;
    private boolean closing;

    TierWriter(HiCacheController ctl, PageStore store, StorageTierConfig cfg, StorageTierCounters metrics,
               PageHasher hasher, HostViews views, KnownKeys known) {
        this.ctl = ctl;
        this.tree = ctl.tree();
        this.store = store;
        this.cfg = cfg;
        this.metrics = metrics;
        this.hasher = hasher;
        this.views = views;
        this.known = known;
        this.maxBatch = Math.max(1, store.maxBatchPages());
    }

    /** Write batches not yet done. */
    int size() {
        return writes.size();
    }

    /** A backup committed: its nodes are considered at the next {@link #poll()}. */
    void onCommitted(BackupHandle handle) {
        Backup backup = (Backup) handle;
        for (int i = 0; i < backup.fragmentCount(); i++) {
            committed.add(backup.fragment(i));
        }
    }

    /** Write-back: {@code node}'s host pages are about to be freed; copies and writes the owned ones. */
    void onHostEvicting(RadixNode node, HostPages pages) {
        if (cfg.writePolicy() != StorageWritePolicy.WRITE_BACK || !node.hasPageHashes()) {
            return;
        }
        List<PageKey> keys = ownedKeys(node, pages.lanes(), null);
        int n = keys.size();
        if (n == 0) {
            return;
        }
        if (stagedPages + n > cfg.writeBackStagingPages()) {
            metrics.add(StorageMetric.WRITE_BACK_DROPPED_PAGES, n);
            return;
        }
        long pageBytes = views.pageBytes();
        // the host pages are freed when this returns: copy them out now
        Arena arena = Arena.ofShared();
        MemorySegment staging = arena.allocate(pageBytes * n, 64);
        List<HostPage> staged = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            MemorySegment slice = staging.asSlice(pageBytes * i, pageBytes);
            views.of(pages.hostPage(i)).copyTo(slice, 0);
            staged.add(HostPage.of(slice));
        }
        stagedPages += n;
        start(new Write(null, keys, staged, arena));
    }

    /** Write-through-selective: writes the nodes of {@code match}'s path whose hit count reached the threshold. */
    void onMatch(MatchResult match) {
        if (cfg.writePolicy() != StorageWritePolicy.WRITE_THROUGH_SELECTIVE) {
            return;
        }
        for (RadixNode n = match.lastHostNode(); n != null && !n.isRoot(); n = n.parent()) {
            if (n.hostValue() != null && n.hitCount() >= cfg.hitThreshold() && n.hostRef() == 0) {
                writeNode(n);
            }
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
                pending = w.put != null ? w.put : w.exists;
            }
        }
        return pending;
    }

    private void writeNode(RadixNode n) {
        HostPages hp = (HostPages) n.hostValue();
        hasher.ensureHashes(n);
        List<HostPage> pages = new ArrayList<>();
        List<PageKey> keys = ownedKeys(n, hp.lanes(), pages);
        if (keys.isEmpty()) {
            return;
        }
        for (int from = 0; from < keys.size(); from += maxBatch) {
            int to = Math.min(keys.size(), from + maxBatch);
            tree.protectHost(n);
            start(new Write(n, new ArrayList<>(keys.subList(from, to)), new ArrayList<>(pages.subList(from, to)),
                    null));
        }
    }

    /** Keys (and, if {@code pagesOut} is given, host page views) of the owned positions not known to be stored. */
    private List<PageKey> ownedKeys(RadixNode n, LaneDescription lanes, List<HostPage> pagesOut) {
        HostPages hp = (HostPages) n.hostValue();
        int[] offsets = new int[lanes.pageCount()];
        // a node and its host value cover the same positions; its lanes say which this rank owns
        int owned = lanes.ownedOffsets(offsets);
        List<PageKey> keys = new ArrayList<>(owned);
        for (int i = 0; i < owned; i++) {
            PageKey k = hasher.nodeKey(n, offsets[i]);
            if (pagesOut == null) {
                keys.add(k); // write-back: aligned with the evicted value's pages; the existence check skips known ones
                continue;
            }
            if (known.contains(k)) {
                metrics.increment(StorageMetric.WRITE_PAGES_PRESENT);
                continue;
            }
            keys.add(k);
            pagesOut.add(views.of(hp.hostPage(i)));
        }
        return keys;
    }

    private void start(Write w) {
        w.ioStartNs = System.nanoTime();
        w.exists = store.existsPrefix(w.keys);
        writes.add(w);
    }

    /** Advances a write; returns true when it is done and ended. */
    private boolean advance(Write w) {
        if (w.put == null) {
            if (!w.exists.isDone()) {
                return false;
            }
            int present = Math.min(w.keys.size(), Math.max(0, w.exists.result()));
            metrics.add(StorageMetric.WRITE_PAGES_PRESENT, present);
            for (int i = 0; i < present; i++) {
                known.add(w.keys.get(i));
            }
            if (present == w.keys.size() || closing) {
                finish(w);
                return true;
            }
            w.offset = present;
            metrics.add(StorageMetric.WRITE_PAGES_SUBMITTED, w.keys.size() - present);
            w.put = store.put(w.keys.subList(present, w.keys.size()), w.pages.subList(present, w.pages.size()));
            return false;
        }
        if (!w.put.isDone()) {
            return false;
        }
        StoreResult r = w.put.result();
        int ok = 0;
        for (int i = 0; i < r.size(); i++) {
            if (r.ok(i)) {
                ok++;
                known.add(w.keys.get(w.offset + i));
            }
        }
        metrics.add(StorageMetric.WRITE_PAGES_STORED, ok);
        metrics.add(StorageMetric.WRITE_BYTES, ok * views.pageBytes());
        metrics.add(StorageMetric.WRITE_FAILED_PAGES, r.size() - ok);
        metrics.add(StorageMetric.WRITE_IO_NS, System.nanoTime() - w.ioStartNs);
        finish(w);
        return true;
    }

    private void finish(Write w) {
        if (w.node != null && !ctl.isClosed() && !w.released) {
            tree.releaseHost(w.node);
        }
        w.released = true;
        if (w.staging != null) {
            stagedPages -= w.keys.size();
            w.staging.close();
        }
    }

    /** One write batch: existence check, then a put of the keys not stored yet. Scheduler thread. */
    private static final class Write {
        final RadixNode node;
        final List<PageKey> keys;
        final List<HostPage> pages;
        final Arena staging;
        StoreOp<Integer> exists;
        StoreOp<StoreResult> put;
        int offset;
        long ioStartNs;
        boolean released;

        Write(RadixNode node, List<PageKey> keys, List<HostPage> pages, Arena staging) {
            this.node = node;
            this.keys = keys;
            this.pages = pages;
            this.staging = staging;
        }
    }
}
