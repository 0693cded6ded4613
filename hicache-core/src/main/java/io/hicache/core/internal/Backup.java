package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupState;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.RadixNode;

import java.util.Arrays;

/**
 * One backup of a radix node's pages to host memory on one CP rank: the unit of the state machine
 * RESERVED → COPYING → SEALED → COMMITTED, or → DRAINING → ABORTED.
 *
 * <p>Owned by the scheduler thread, which creates it in {@code reserve}, attaches it to a forward, and
 * commits or aborts it in {@code poll}. The submitter agent reads only the page arrays, which are fixed
 * before the backup is handed to a forward (the hand-off through the forward's queues orders those reads
 * after the writes). The engine holds it as an opaque handle to abort it.
 *
 * <p>As the tree's {@link PendingBackup} it learns about splits of its node, so that every fragment is
 * published (or cleared) when the backup ends.
 */
public final class Backup implements PendingBackup, AgreedFifo.Item, io.hicache.core.BackupHandle {

    /** Local resolution of a backup on this rank, before the group agrees. */
    enum Local { UNRESOLVED, OK, FAILED }

    final Object owner;
    final long seq;
    final boolean withDraft;
    final int startPage;
    final int pageCount;
    final int[] devicePages;
    /** Positions (0-based within the node) this rank owns, ascending. */
    final int[] ownedIndex;
    final int ownedCount;
    /** Host pages for the owned positions, parallel to {@link #ownedIndex}. */
    final int[] hostPages;
    /** The positions reserved, as charged to the host budget (given back whole on an abort). */
    final LaneDescription budgetLane;
    final HostPages hostValue;
    final long leaseDeadlineNs;
    /** What this backup is, the same on every rank ({@link Fingerprints#backup}); 0 without a CP group. */
    final long fingerprint;

    RadixNode node;
    RadixNode[] fragments = new RadixNode[1];
    int fragmentCount;

    BackupState state = BackupState.RESERVED;
    Local local = Local.UNRESOLVED;
    AbortReason abortReason;
    ForwardSlot slot;
    boolean cancelSent;
    long forwardEndNs;
    /**
     * When it was resolved on this rank: its forward acknowledged (SEALED) or it failed here and has nothing left to
     * drain. The sealed time limit counts from here.
     */
    long resolvedAtNs;
    /** Committed here, then revoked: another rank did not commit it (the round's digests differed). */
    boolean revoked;
    /** Set when a failed load below which the node sat removed it from the tree (see {@link #onInvalidated}). */
    boolean invalidated;
    /** Device pages of invalidated fragments, held until the copies drained, then handed to {@link #heldSink}. */
    int[] heldPages;
    int heldCount;
    io.hicache.core.DevicePageSink heldSink;
    /** Pages held for a second page sink (a failed load and a withdrawal with different sinks), or null. */
    HeldElsewhere heldElsewhere;

    /** Pages held for another sink than {@link #heldSink}; a list, failure paths only. */
    record HeldElsewhere(io.hicache.core.DevicePageSink sink, int[] pages, HeldElsewhere next) {
    }

    Backup(Object owner, long seq, RadixNode node, int startPage, int[] devicePages, int[] ownedIndex, int ownedCount,
           int[] hostPages, LaneDescription budgetLane, HostPages hostValue, boolean withDraft,
           long leaseDeadlineNs, long fingerprint) {
        this.owner = owner;
        this.seq = seq;
        this.node = node;
        this.fragments[0] = node;
        this.fragmentCount = 1;
        this.startPage = startPage;
        this.pageCount = devicePages.length;
        this.devicePages = devicePages;
        this.ownedIndex = ownedIndex;
        this.ownedCount = ownedCount;
        this.hostPages = hostPages;
        this.budgetLane = budgetLane;
        this.hostValue = hostValue;
        this.withDraft = withDraft;
        this.leaseDeadlineNs = leaseDeadlineNs;
        this.fingerprint = fingerprint;
    }

    @Override
    public void onSplit(RadixNode prefix, RadixNode suffix) {
        for (int i = 0; i < fragmentCount; i++) {
            if (fragments[i] == suffix) {
                if (fragmentCount == fragments.length) {
                    fragments = Arrays.copyOf(fragments, fragmentCount * 2);
                }
                System.arraycopy(fragments, i, fragments, i + 1, fragmentCount - i);
                fragments[i] = prefix;
                fragmentCount++;
                return;
            }
        }
        throw new IllegalStateException("backup " + seq + " was told of a split of " + suffix
            + ", which is not one of its fragments");
    }

    /**
     * Device pages this backup holds for the engine: those of fragments a failed load or a withdrawal removed from the
     * tree while the backup's copies may still read them; they go to that call's page sink when the backup is
     * released. Scheduler thread.
     */
    public int heldDevicePageCount() {
        int n = heldCount;
        for (HeldElsewhere h = heldElsewhere; h != null; h = h.next()) {
            n += h.pages().length;
        }
        return n;
    }

    /** Held device page {@code i} ({@code 0 <= i < heldDevicePageCount()}). Scheduler thread. */
    public int heldDevicePage(int i) {
        if (i >= 0 && i < heldCount) {
            return heldPages[i];
        }
        int at = heldCount;
        for (HeldElsewhere h = heldElsewhere; h != null && i >= at; h = h.next()) {
            if (i < at + h.pages().length) {
                return h.pages()[i - at];
            }
            at += h.pages().length;
        }
        throw new IndexOutOfBoundsException("held page " + i + " outside [0, " + heldDevicePageCount() + ")");
    }

    /** Hands every held device page to its sink (the backup's copies have drained). Scheduler thread. */
    void freeHeldPages() {
        if (heldCount > 0) {
            heldSink.free(heldPages, 0, heldCount);
            heldCount = 0;
        }
        for (HeldElsewhere h = heldElsewhere; h != null; h = h.next()) {
            h.sink().free(h.pages(), 0, h.pages().length);
        }
        heldElsewhere = null;
    }

    /** Sequence number, identical on every rank of the group for the same reservation. */
    @Override
    public long seq() {
        return seq;
    }

    @Override
    public long fingerprint() {
        return fingerprint;
    }

    /**
     * True when this backup committed here and was then revoked (its host value withdrawn) because another rank of
     * the group did not commit it. Scheduler thread.
     */
    public boolean revoked() {
        return revoked;
    }

    /**
     * The failed load's pages drop the node's KV: the backup is failed on this rank (never published) and the
     * controller releases it once its copies drained and the group agreed.
     */
    @Override
    public void onInvalidated(RadixNode fragment) {
        invalidated = true;
        if (owner instanceof HiCacheController c) {
            c.dependencyFailed(this);
        }
    }

    /**
     * Keeps device pages of an invalidated fragment until the backup is released: its copies may still read them.
     * Scheduler thread; failure path only (allocates).
     */
    void holdDevicePages(io.hicache.core.DevicePageSink sink, int[] pages, int offset, int count) {
        if (heldSink != null && heldSink != sink) {
            heldElsewhere = new HeldElsewhere(sink, Arrays.copyOfRange(pages, offset, offset + count), heldElsewhere);
            return;
        }
        heldSink = sink;
        if (heldPages == null) {
            heldPages = new int[Math.max(count, pageCount)];
        } else if (heldCount + count > heldPages.length) {
            heldPages = Arrays.copyOf(heldPages, heldCount + count);
        }
        System.arraycopy(pages, offset, heldPages, heldCount, count);
        heldCount += count;
    }

    /**
     * Not resolved on this rank: its copies are not done, or they are but the node's KV was computed over a prefix
     * still loading (the backup is published only after that load is agreed; see {@code RadixTree.dependsOnLoad}).
     */
    @Override
    public boolean unresolved() {
        return local == Local.UNRESOLVED || local == Local.OK && waitsForLoad();
    }

    /** Whether an ancestor of the backup's top fragment is still loading. Allocation-free. */
    boolean waitsForLoad() {
        if (invalidated) {
            return false;
        }
        for (RadixNode p = fragments[0].parent(); p != null && !p.isRoot(); p = p.parent()) {
            if (p.isLoading()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean failedLocally() {
        return local == Local.FAILED;
    }

    /** Current state. Scheduler thread. */
    @Override
    public BackupState state() {
        return state;
    }

    /** The reason it was aborted, or null. Scheduler thread. */
    @Override
    public AbortReason abortReason() {
        return abortReason;
    }

    /** Whether it carries draft/MTP KV besides the target KV. */
    @Override
    public boolean withDraft() {
        return withDraft;
    }

    /** Pages of the node (all positions, owned by any rank). */
    @Override
    public int pageCount() {
        return pageCount;
    }

    /** Pages this rank copies (its owned positions). */
    @Override
    public int ownedPageCount() {
        return ownedCount;
    }

    /** Host page holding owned position {@code i} ({@code 0 <= i < ownedPageCount()}). */
    public int hostPage(int i) {
        if (i < 0 || i >= ownedCount) {
            throw new IndexOutOfBoundsException("owned page " + i + " outside [0, " + ownedCount + ")");
        }
        return hostPages[i];
    }

    /** Device page of owned position {@code i}. */
    public int ownedDevicePage(int i) {
        if (i < 0 || i >= ownedCount) {
            throw new IndexOutOfBoundsException("owned page " + i + " outside [0, " + ownedCount + ")");
        }
        return devicePages[ownedIndex[i]];
    }

    /** The deepest fragment: the node reserved (it keeps the trailing pages across splits). */
    @Override
    public RadixNode node() {
        return node;
    }

    /** Number of fragments the node was split into while pending (1 if never split). */
    public int fragmentCount() {
        return fragmentCount;
    }

    /** Fragment {@code i}, prefix first. */
    public RadixNode fragment(int i) {
        if (i < 0 || i >= fragmentCount) {
            throw new IndexOutOfBoundsException("fragment " + i + " outside [0, " + fragmentCount + ")");
        }
        return fragments[i];
    }

    @Override
    public String toString() {
        return "Backup{seq=" + seq + ", state=" + state + ", pages=" + pageCount + ", owned=" + ownedCount
            + ", draft=" + withDraft + (abortReason != null ? ", abort=" + abortReason : "") + '}';
    }
}
