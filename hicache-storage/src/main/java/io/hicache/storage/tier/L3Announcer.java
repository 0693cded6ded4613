package io.hicache.storage.tier;

import io.hicache.core.spi.StoragePort;
import io.hicache.radix.RadixNode;
import org.agrona.collections.LongHashSet;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the tier tells the cache's observer (its KV events) of pages committed in L3, in prefix order: a page is
 * announced only once the page before it in its sequence was announced and not found gone since (the first page of
 * a sequence at once), so a router that indexes the stream per medium, as llm-d's does, never meets an L3 block
 * whose parent it lacks on L3. A run whose parent is not announced yet waits (its parent's node write may finish
 * later, a batch of the same node may come back later, a child node's write may have started first) and goes out
 * right after that parent, before anything else; a page announced already is not announced again. Pages that reach
 * L3 without a write of this tier (read by a prefetch: another cache, or an earlier life of this one, wrote them)
 * are announced when they are published, so pages written below them have their parent on L3 too.
 *
 * <p>A page is known here by a fingerprint (64 bits of its key in this rank's namespace, whichever rank's lane holds
 * it), never by the key object, so the record costs 8 bytes a page. Bounds: {@link #ANNOUNCED_CAP} fingerprints
 * (past it the oldest is forgotten: a page stored below a page announced that long ago waits until that page is
 * announced again, or is dropped at the next bound) and {@link #WAITING_CAP} waiting runs (past it the oldest is
 * dropped, its pages never announced). Only while the cache has an observer: with none, nothing is recorded.
 *
 * <p>Owned by the scheduler thread.
 */
final class L3Announcer {
    /** Fingerprints of announced pages kept at most. */
    static final int ANNOUNCED_CAP = 1 << 20;
    /** Runs waiting for their parent page kept at most. */
    static final int WAITING_CAP = 1 << 12;

    private final StoragePort ctl;
    private final PageHasher hasher;
    private final int pageSize;
    private final byte[] scratch = new byte[PageHasher.HASH];
    private final LongHashSet announced = new LongHashSet(1024);
    /** Announced fingerprints in the order they were announced (a ring), to forget the oldest past the cap. */
    private long[] order = new long[1024];
    private int orderHead;
    private int orderSize;
    /** Runs waiting, by the fingerprint of the page before their first, oldest parent first. */
    private final LinkedHashMap<Long, List<Waiting>> waiting = new LinkedHashMap<>();
    /** Fingerprints of the pages of waiting runs. */
    private final LongHashSet waitingPages = new LongHashSet(64);
    private int waitingRuns;
    /** Runs released by an announcement, announced in turn (children right after their parent). */
    private final ArrayDeque<Waiting> released = new ArrayDeque<>();

    /**
     * A run of pages committed in L3 whose parent page was not announced when it was: positions {@code first ..} of
     * {@code tokens} (from the root), the sequence ending in {@code node} when a node write made it (announced by
     * node while the node is attached, the cheaper report), {@code fps} the page before and the run's pages.
     */
    private record Waiting(RadixNode node, int[] tokens, int first, long[] fps) {
    }

    L3Announcer(StoragePort ctl, PageHasher hasher) {
        this.ctl = ctl;
        this.hasher = hasher;
        this.pageSize = ctl.pageSize();
    }

    /** The cache's observer of tier transitions, or null (closed, or none set). */
    private StoragePort.StorageTransitions observer() {
        return ctl.storageTransitions();
    }

    /** The fingerprint of page {@code i} of {@code node}, which has its hashes. */
    private long fp(RadixNode node, int i) {
        node.copyPageHash(i, scratch, 0);
        return fp(scratch, 0);
    }

    /** The fingerprint of the hash at {@code off} of {@code hashes}. */
    static long fp(byte[] hashes, int off) {
        long v = 0;
        for (int b = 0; b < 8; b++) {
            v = v << 8 | (hashes[off + b] & 0xFF);
        }
        return v;
    }

    /**
     * The fingerprints of pages {@code [first, first + pages)} of {@code node} (hashing the node and its ancestors
     * first if they lack their hashes); {@code out[0]} is the page before them ({@link #NONE} at the sequence start).
     */
    long[] nodeFps(RadixNode node, int first, int pages) {
        hasher.ensureHashes(node);
        long[] out = new long[pages + 1];
        out[0] = first > 0 ? fp(node, first - 1) : node.parent().isRoot() ? NONE : fp(node.parent(),
                node.parent().pageCount() - 1);
        for (int i = 0; i < pages; i++) {
            out[i + 1] = fp(node, first + i);
        }
        return out;
    }

    /** Marks "no page before": the run starts its sequence. */
    static final long NONE = 0;

    /**
     * Pages {@code [first, first + pages)} of {@code node} (counted from its first page; attached) are committed in
     * L3: announced now, those already announced left out, or made to wait for the page before them.
     */
    void nodePagesStored(RadixNode node, int first, int pages) {
        StoragePort.StorageTransitions o = observer();
        if (o == null || pages <= 0) {
            return;
        }
        node(o, node, first, pages);
        releaseWaiting(o);
    }

    /** {@link #nodePagesStored}, leaving the runs it releases queued. */
    private void node(StoragePort.StorageTransitions o, RadixNode node, int first, int pages) {
        long[] fps = nodeFps(node, first, pages);
        int i = 0;
        while (i < pages) {
            if (announced.contains(fps[i + 1])) {
                i++;
                continue;
            }
            int j = i + 1;
            while (j < pages && !announced.contains(fps[j + 1])) {
                j++;
            }
            if (parentAnnounced(i == 0 && first == 0 && node.parent().isRoot(), fps[i])) {
                o.pagesStored(node, first + i, j - i);
                announced(fps, i + 1, j + 1);
            } else {
                int start = TierWriter.startPage(node);
                wait(node, TierWriter.sequenceTokens(node, start, pageSize), start + first + i, fps, i, j + 1);
            }
            i = j;
        }
    }

    /**
     * Positions {@code [first, first + pages)} of the sequence {@code tokens} (from the root) are committed in L3;
     * {@code fps[0]} is the fingerprint of position {@code first - 1} (ignored when {@code first} is 0) and
     * {@code fps[1 + i]} that of position {@code first + i}. Announced now, those already announced left out, or made
     * to wait for the page before them.
     */
    void sequencePagesStored(int[] tokens, int first, int pages, long[] fps) {
        StoragePort.StorageTransitions o = observer();
        if (o == null || pages <= 0) {
            return;
        }
        sequence(o, tokens, first, pages, fps, 0);
        releaseWaiting(o);
    }

    /** {@link #sequencePagesStored} of {@code fps[base ..]}: {@code fps[base]} the page before, then the pages. */
    private void sequence(StoragePort.StorageTransitions o, int[] tokens, int first, int pages, long[] fps, int base) {
        int i = 0;
        while (i < pages) {
            if (announced.contains(fps[base + i + 1])) {
                i++;
                continue;
            }
            int j = i + 1;
            while (j < pages && !announced.contains(fps[base + j + 1])) {
                j++;
            }
            if (parentAnnounced(first + i == 0, fps[base + i])) {
                o.sequencePages(true, tokens, 0, first + i, j - i);
                announced(fps, base + i + 1, base + j + 1);
            } else {
                wait(null, tokens, first + i, fps, base + i, base + j + 1);
            }
            i = j;
        }
    }

    /**
     * A read found the page of fingerprint {@code fp} gone from the store: it is no longer announced (a page written
     * below it waits until it is written again), and a waiting run that holds it is dropped (the store lost part of
     * it). The caller announces the removal.
     */
    void pageGone(long fp) {
        if (observer() == null) {
            return;
        }
        announced.remove(fp);
        if (!waitingPages.contains(fp)) {
            return;
        }
        for (Iterator<Map.Entry<Long, List<Waiting>>> it = waiting.entrySet().iterator(); it.hasNext(); ) {
            List<Waiting> runs = it.next().getValue();
            for (Iterator<Waiting> r = runs.iterator(); r.hasNext(); ) {
                Waiting w = r.next();
                if (contains(w.fps, fp)) {
                    r.remove();
                    dropped(w);
                }
            }
            if (runs.isEmpty()) {
                it.remove();
            }
        }
    }

    /** Runs waiting for their parent page now (tests). */
    int waitingRuns() {
        return waitingRuns;
    }

    private boolean parentAnnounced(boolean first, long parent) {
        return first || announced.contains(parent);
    }

    private static boolean contains(long[] fps, long fp) {
        for (int i = 1; i < fps.length; i++) {
            if (fps[i] == fp) {
                return true;
            }
        }
        return false;
    }

    /** Records {@code fps[from, to)} as announced and queues the runs that waited for them. */
    private void announced(long[] fps, int from, int to) {
        for (int i = from; i < to; i++) {
            long f = fps[i];
            if (announced.add(f)) {
                remember(f);
            }
            if (!waiting.isEmpty()) {
                List<Waiting> runs = waiting.remove(f);
                if (runs != null) {
                    for (Waiting w : runs) {
                        dropped(w);
                        released.add(w);
                    }
                }
            }
        }
    }

    /** Announces the released runs, each after the run it waited for. */
    private void releaseWaiting(StoragePort.StorageTransitions o) {
        Waiting w;
        while ((w = released.poll()) != null) {
            if (w.node != null && w.node.isAttached()) {
                byNode(o, w.node, TierWriter.startPage(w.node), w.first, w.first + w.fps.length - 1);
            } else {
                sequence(o, w.tokens, w.first, w.fps.length - 1, w.fps, 0);
            }
        }
    }

    /**
     * Positions {@code [first, end)} of the sequence ending in {@code node} (its first page at {@code start}), which
     * may lie in its ancestors (a split since moved its leading pages into a new parent), parents' parts first.
     */
    private void byNode(StoragePort.StorageTransitions o, RadixNode node, int start, int first, int end) {
        if (node.isRoot()) {
            return;
        }
        if (first < start) {
            RadixNode parent = node.parent();
            byNode(o, parent, parent.isRoot() ? 0 : start - parent.pageCount(), first, Math.min(end, start));
        }
        int lo = Math.max(first, start);
        int hi = Math.min(end, start + node.pageCount());
        if (lo < hi) {
            node(o, node, lo - start, hi - lo);
        }
    }

    /** Keeps {@code fps[from - 1, to)} (the page before, then the run) waiting for the page before. */
    private void wait(RadixNode node, int[] tokens, int first, long[] fps, int from, int to) {
        long[] own = java.util.Arrays.copyOfRange(fps, from, to);
        waiting.computeIfAbsent(own[0], k -> new ArrayList<>(1)).add(new Waiting(node, tokens, first, own));
        for (int i = 1; i < own.length; i++) {
            waitingPages.add(own[i]);
        }
        if (++waitingRuns > WAITING_CAP) { // the oldest parent's runs go: their pages are never announced
            Iterator<List<Waiting>> it = waiting.values().iterator();
            for (Waiting d : it.next()) {
                dropped(d);
            }
            it.remove();
        }
    }

    private void dropped(Waiting w) {
        waitingRuns--;
        for (int i = 1; i < w.fps.length; i++) {
            waitingPages.remove(w.fps[i]);
        }
    }

    /** Appends {@code f} to the ring of announced fingerprints, forgetting the oldest past the cap. */
    private void remember(long f) {
        if (orderSize == order.length) {
            if (order.length < ANNOUNCED_CAP) {
                long[] grown = new long[order.length * 2];
                for (int i = 0; i < orderSize; i++) {
                    grown[i] = order[(orderHead + i) % order.length];
                }
                order = grown;
                orderHead = 0;
            } else {
                announced.remove(order[orderHead]);
                orderHead = (orderHead + 1) % order.length;
                orderSize--;
            }
        }
        order[(orderHead + orderSize) % order.length] = f;
        orderSize++;
    }
}
