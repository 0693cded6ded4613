package io.hicache.it.dst;

import io.hicache.core.CacheInternals;
import io.hicache.core.AbortReason;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupState;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.internal.Backup;
import io.hicache.core.internal.HostPages;
import io.hicache.core.internal.LoadOp;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTestAccess;
import io.hicache.radix.spi.HostValue;
import io.hicache.radix.spi.PendingBackup;

import java.util.BitSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static io.hicache.it.dst.DstHarness.loadClass;

/**
 * The invariant checks of {@link DstHarness}: the backup listener's checks at each commit (a), and the checks after
 * every step: each rank's tree, host pages, lanes and host budget (a, b, d), host copies contiguous from the root and
 * the evictable count exact (h, i), device page ownership with the loads in flight and the pages backups hold (l1,
 * l4, l5), agreement across ranks (f, l3) and copies that ran on freed memory. Violations go to the
 * harness's list, which throws. Owned by the harness; single-threaded.
 */
final class Invariants {
    private final DstHarness harness;
    // ---- configuration and shared state, copied from the harness
    private final int cp;
    private final OwnerLanes lanes;
    private final int layers;
    private final int draftLayers;
    private final int devicePages;
    private final int hostPages;
    private final Rank[] ranks;
    private final Map<Long, Rec> recs;
    private final List<String> violations;
    /** Host pages rank 0 had evicted at the previous check (eviction while loads are in flight is counted). */
    private long hostPagesEvictedSeen;

    Invariants(DstHarness harness) {
        this.harness = harness;
        this.cp = harness.cp;
        this.lanes = harness.lanes;
        this.layers = harness.layers;
        this.draftLayers = harness.draftLayers;
        this.devicePages = harness.devicePages;
        this.hostPages = harness.hostPages;
        this.ranks = harness.ranks;
        this.recs = harness.recs;
        this.violations = harness.violations;
    }

    /** The backup listener of {@code rank}'s controller. */
    BackupListener listener(Rank rank) {
        return new Listener(rank);
    }

    /** Checks each commit against every rank's state and the expected bytes (a); counts commits and aborts. */
    private final class Listener implements BackupListener {
        private final Rank rank;

        Listener(Rank rank) {
            this.rank = rank;
        }

        @Override
        public void onCommitted(io.hicache.core.BackupHandle committed) {
            Backup backup = (Backup) committed;
            rank.committedSeqs.add(backup.seq());
            count("committed");
            Rec rec = harness.byBackup.get(backup);
            if (rec == null || rec.b[rank.r] != backup) {
                violations.add("rank " + rank.r + " committed unknown backup " + backup);
                return;
            }
            // (a) visible only after every layer, target and draft, on every rank, was acked; (v1) and never on one
            // rank only: every other rank reserved the node too (a released one is settled by the next round)
            for (Rank other : ranks) {
                Backup b = rec.b[other.r];
                if (b == null) {
                    violations.add("rank " + rank.r + " committed seq " + rec.seq + " (" + backup.pageCount()
                        + " pages) that rank " + other.r + " never reserved: a node committed on one rank only");
                    continue;
                }
                if (inDoubt(b)) {
                    count("commit.otherReleasedPastTimeLimit");
                    continue;
                }
                if (b.state() != BackupState.SEALED && b.state() != BackupState.COMMITTED) {
                    violations.add("rank " + rank.r + " committed seq " + rec.seq + " while rank " + other.r
                        + " has it " + b.state() + (b.abortReason() != null ? " " + b.abortReason() : ""));
                }
                checkBackupBytes(other, rec, b, "at commit on rank " + rank.r);
            }
        }

        @Override
        public void onAborted(io.hicache.core.BackupHandle backup, AbortReason reason) {
            count("aborted." + reason);
        }
    }

    /**
     * A backup this rank released past its sealed time limit: if another rank committed it, the next round's digests
     * differ and that rank revokes it (checked at the end, (v1)).
     */
    private static boolean inDoubt(Backup b) {
        return b.state() == BackupState.ABORTED && b.abortReason() == AbortReason.AGREEMENT_TIMEOUT;
    }

    private void checkBackupBytes(Rank rank, Rec rec, Backup b, String when) {
        for (int i = 0; i < b.ownedPageCount(); i++) {
            int hp = b.hostPage(i);
            for (int l = 0; l < layers; l++) {
                String m = rank.hostMismatch(false, l, hp, rank.expT[hp][l]);
                if (m != null) {
                    violations.add("seq " + rec.seq + " " + when + ": " + m);
                    return;
                }
            }
            if (b.withDraft()) {
                for (int d = 0; d < draftLayers; d++) {
                    String m = rank.hostMismatch(true, d, hp, rank.expD[hp][d]);
                    if (m != null) {
                        violations.add("seq " + rec.seq + " " + when + ": " + m);
                        return;
                    }
                }
            }
        }
    }

    /** Adds what pages {@code [start, start + pages)} of a sequence of {@code total} cost each rank of the group. */
    private void addBudget(long[] perRank, int start, int pages, int total) {
        for (int r = 0; r < cp; r++) {
            perRank[r] += cp == 1 ? pages : lanes.ownedCount(r, start, pages, total, cp);
        }
    }

    /** Checks every invariant on every rank; throws {@link AssertionError} on the first violations. */
    void checkAll() {
        for (Rank rank : ranks) {
            if (rank.rt.useAfterFreeCount() != 0) {
                violations.add("rank " + rank.r + ": " + rank.rt.useAfterFreeCount() + " copies ran on memory freed "
                    + "while they were queued: " + rank.rt.useAfterFreeReports());
            }
            checkRank(rank);
            if (!harness.stickyInjected && !rank.cache.isClosed()) {
                checkDevicePages(rank);
            }
        }
        long hostEvicted = ranks[0].cache.metric(io.hicache.core.metrics.Metric.HOST_PAGES_EVICTED);
        if (hostEvicted != hostPagesEvictedSeen && !harness.loadSteps.loadRecs.isEmpty()) {
            count("load.hostEvictionWhileLoading"); // (l5) is checked under pressure
        }
        hostPagesEvictedSeen = hostEvicted;
        for (LoadRec rec : harness.loadSteps.loadRecs) {
            // (l3) loads are agreed: loaded on every rank or failed on every rank
            boolean loaded = false;
            boolean failed = false;
            for (LoadOp op : rec.op) {
                loaded |= op.state() == LoadOp.State.LOADED;
                failed |= op.state() == LoadOp.State.FAILED;
            }
            if (loaded && failed) {
                StringBuilder sb = new StringBuilder("load " + rec.id + " loaded on some ranks, failed on others:");
                for (LoadOp op : rec.op) {
                    sb.append(' ').append(op.state());
                }
                violations.add(sb.toString());
            }
        }
        // (f, v1) no backup committed on one rank and aborted on another, or never reserved there: no node committed
        // on one rank only (a rank's release past its sealed time limit is settled by the next round's digests)
        for (Iterator<Rec> it = recs.values().iterator(); it.hasNext(); ) {
            Rec rec = it.next();
            boolean committed = false;
            boolean aborted = false;
            boolean doubt = false;
            boolean allTerminal = true;
            for (Backup b : rec.b) {
                if (b == null) {
                    aborted = true;
                    continue;
                }
                committed |= b.state() == BackupState.COMMITTED && !b.revoked();
                aborted |= b.state() == BackupState.ABORTED && !inDoubt(b);
                doubt |= inDoubt(b);
                allTerminal &= b.state().terminal();
            }
            if (committed && aborted) {
                StringBuilder sb = new StringBuilder("seq " + rec.seq + " committed on some ranks, aborted or never "
                    + "reserved on others (a node committed on one rank only):");
                for (Backup b : rec.b) {
                    sb.append(' ').append(b == null ? "never reserved" : b.state())
                        .append(b != null && b.abortReason() != null ? "/" + b.abortReason() : "");
                }
                violations.add(sb.toString());
            }
            if (allTerminal && !(committed && doubt)) {
                it.remove(); // (a commit another rank released stays until it is revoked: see checkSettled)
            }
        }
        throwViolations();
    }

    /**
     * (v1) at the end of a run: no backup one rank committed while another released it past its sealed time limit is
     * still published; the next round's digests made the committing rank revoke it. The drain stops once nothing is in
     * flight, which can be before the committing rank applied that next round (the releasing rank applied it, the
     * committing one contributed to it but had not polled since), so while such a backup is still published, every
     * rank polls once more (at most {@code 3} times) first: an engine goes on polling.
     */
    void checkSettled(Runnable pollEveryRank) {
        for (int round = 0; round < 3 && unsettled(); round++) {
            count("settled.afterMorePolls");
            pollEveryRank.run();
        }
        for (Rec rec : recs.values()) {
            if (committedWhereReleased(rec)) {
                count("settled.notRevoked");
                violations.add("seq " + rec.seq + " is still committed on a rank although another released it past "
                    + "its sealed time limit: a node committed on one rank only");
            }
        }
        throwViolations();
    }

    /** Whether {@code rec} is committed (not revoked) on one rank and released past its sealed time limit on another. */
    private boolean committedWhereReleased(Rec rec) {
        boolean committed = false;
        boolean doubt = false;
        for (Backup b : rec.b) {
            if (b != null) {
                committed |= b.state() == BackupState.COMMITTED && !b.revoked();
                doubt |= inDoubt(b);
            }
        }
        return committed && doubt;
    }

    /** True while a backup one rank committed and another released past its sealed time limit is still published. */
    private boolean unsettled() {
        for (Rec rec : recs.values()) {
            if (committedWhereReleased(rec)) {
                return true;
            }
        }
        return false;
    }

    /**
     * (l1) the pages of a load not yet agreed are not in the tree (no partially loaded node is a device hit);
     * (l4) no device page is owned twice: every page is in exactly one of the tree, a load in flight or the
     * engine's free list; (l5) the host-only part of a chain being loaded is still attached and protected.
     */
    private void checkDevicePages(Rank rank) {
        BitSet inTree = new BitSet(devicePages);
        RadixTestAccess.forEachNode(rank.tree, n -> {
            if (n.hasDeviceValue()) {
                for (int i = 0; i < n.pageCount(); i++) {
                    int p = n.devicePage(i);
                    if (inTree.get(p)) {
                        violations.add("rank " + rank.r + " device page " + p + " is held by two tree nodes");
                    }
                    inTree.set(p);
                }
            }
        });
        BitSet inLoads = new BitSet(devicePages);
        for (LoadRec rec : harness.loadSteps.loadRecs) {
            LoadOp op = rec.op[rank.r];
            if (loadClass(op.state()) != 0) {
                continue;
            }
            for (int i = 0; i < op.pageCount(); i++) {
                int p = op.devicePage(i);
                if (inTree.get(p)) {
                    violations.add("rank " + rank.r + " device page " + p + " of load " + rec.id + " (" + op.state()
                        + ") is in the tree before the load was agreed");
                }
                if (inLoads.get(p)) {
                    violations.add("rank " + rank.r + " device page " + p + " belongs to two loads in flight");
                }
                inLoads.set(p);
            }
            RadixNode last = op.node(op.nodeCount() - 1);
            if (!last.isAttached()) {
                violations.add("rank " + rank.r + " load " + rec.id + " (" + op.state() + "): its last node " + last
                    + " was removed from the tree (host-evicted?) while the load is in flight");
            } else {
                for (RadixNode n = last; n.isDeviceEvicted(); n = n.parent()) {
                    if (n.hostRef() <= 0) {
                        violations.add("rank " + rank.r + " load " + rec.id + ": host-only chain node " + n
                            + " is not protected from host eviction while the load is in flight");
                    }
                }
            }
        }
        BitSet owned = (BitSet) inTree.clone();
        owned.or(inLoads);
        // pages of removed nodes (a failed load, a withdrawal) that a backup still copying holds until it is released
        for (Rec rec : recs.values()) {
            Backup b = rec.b[rank.r];
            if (b == null) {
                continue; // a reservation this rank skipped (divergence suite)
            }
            for (int i = 0; i < b.heldDevicePageCount(); i++) {
                int p = b.heldDevicePage(i);
                if (owned.get(p)) {
                    violations.add("rank " + rank.r + " device page " + p + " held by backup seq " + rec.seq
                        + " is also in the tree, a load or another backup");
                }
                owned.set(p);
            }
        }
        if (rank.freeModel.intersects(owned)) {
            BitSet both = (BitSet) rank.freeModel.clone();
            both.and(owned);
            violations.add("rank " + rank.r + " device pages " + both + " are free in the engine's pool and owned by the "
                + "tree or a load");
        }
        owned.or(rank.freeModel);
        if (owned.cardinality() != devicePages || owned.length() > devicePages) {
            BitSet lost = new BitSet(devicePages);
            lost.set(0, devicePages);
            lost.andNot(owned);
            violations.add("rank " + rank.r + " device pages " + lost + " are neither free, in the tree nor in a load");
        }
        if (rank.r == 0 && harness.devices.freeDevice.freePages() != rank.freeModel.cardinality()) {
            violations.add("free list holds " + harness.devices.freeDevice.freePages() + " pages, the model "
                + rank.freeModel.cardinality());
        }
    }

    private void checkRank(Rank rank) {
        if (rank.cache.isClosed()) {
            return;
        }
        try {
            rank.tree.checkInvariants();
        } catch (IllegalStateException e) {
            violations.add("rank " + rank.r + " tree: " + e.getMessage());
        }
        checkHostContiguityAndEvictable(rank);
        BitSet used = new BitSet(hostPages);
        long[] budget = new long[cp]; // every rank's pages, as each rank's budget counts them
        RadixTestAccess.forEachNode(rank.tree, n -> {
            HostValue v = n.hostValue();
            if (v != null) {
                if (!(v instanceof HostPages hp)) {
                    violations.add("rank " + rank.r + " node " + n + " has a foreign host value " + v);
                    return;
                }
                // (d) lane metadata describes exactly this node's positions on this rank
                LaneDescription l = hp.lanes();
                int start = RadixTestAccess.startPage(n);
                if (l.pageCount() != n.pageCount() || l.startPage() != start || l.cpSize() != cp || l.rank() != rank.r
                    || l.strategy() != lanes || l.totalPages() < start + n.pageCount()
                    || hp.ownedPageCount() != l.ownedCount()) {
                    violations.add("rank " + rank.r + " node at page " + start + " with " + n.pageCount()
                        + " pages carries lanes " + l + " for " + hp.ownedPageCount() + " host pages");
                    return;
                }
                addBudget(budget, l.startPage(), l.pageCount(), l.totalPages());
                for (int i = 0; i < hp.ownedPageCount(); i++) {
                    int h = hp.hostPage(i);
                    if (used.get(h)) {
                        violations.add("rank " + rank.r + " host page " + h + " referenced twice");
                    }
                    used.set(h);
                    // (a) committed bytes equal the device bytes when the layer's hook fired
                    for (int layer = 0; layer < layers; layer++) {
                        String m = rank.hostMismatch(false, layer, h, rank.expT[h][layer]);
                        if (m != null) {
                            violations.add("committed " + m);
                            return;
                        }
                    }
                    if (rank.hostDraft[h]) {
                        for (int d = 0; d < draftLayers; d++) {
                            String m = rank.hostMismatch(true, d, h, rank.expD[h][d]);
                            if (m != null) {
                                violations.add("committed " + m);
                                return;
                            }
                        }
                    }
                }
            }
            PendingBackup pb = n.pending();
            if (pb != null) {
                if (!(pb instanceof Backup b) || harness.byBackup.get(b) == null
                    || harness.byBackup.get(b).b[rank.r] != b) {
                    violations.add("rank " + rank.r + " node " + n + " is pending with an unknown backup " + pb);
                } else if (b.state().terminal()) {
                    violations.add("rank " + rank.r + " node " + n + " still pending with " + b);
                }
            }
        });
        // (b) allocated host pages == pages of committed values + pages of backups in flight
        for (Rec rec : recs.values()) {
            Backup b = rec.b[rank.r];
            if (b == null || b.state().terminal()) {
                continue;
            }
            int start = rec.startPage;
            int pages = rec.pageCount;
            if (harness.diverged && b.fragment(0).isAttached()) {
                // (the ranks' reservations need not line up once the schedules diverged: this rank's own range)
                start = RadixTestAccess.startPage(b.fragment(0));
                pages = b.pageCount();
            }
            addBudget(budget, start, pages, start + pages);
            for (int i = 0; i < b.ownedPageCount(); i++) {
                int h = b.hostPage(i);
                if (used.get(h)) {
                    violations.add("rank " + rank.r + " host page " + h + " of in-flight seq " + rec.seq
                        + " is referenced elsewhere too");
                }
                used.set(h);
            }
        }
        var alloc = CacheInternals.hostAllocator(rank.cache);
        if (alloc.allocatedPages() != used.cardinality()) {
            violations.add("rank " + rank.r + " allocator holds " + alloc.allocatedPages() + " pages but the tree and "
                + "backups in flight reference " + used.cardinality());
        }
        for (int h = used.nextSetBit(0); h >= 0; h = used.nextSetBit(h + 1)) {
            if (!alloc.isAllocated(h)) {
                violations.add("rank " + rank.r + " host page " + h + " is referenced but free in the allocator");
            }
        }
        long most = java.util.Arrays.stream(budget).max().orElse(0);
        if (rank.cache.stickyError() == null && !harness.manualHostEviction) {
            if (rank.cache.hostPool().budgetUsedPages() != most) {
                violations.add("rank " + rank.r + " host budget says " + rank.cache.hostPool().budgetUsedPages()
                    + " pages used on its fullest rank but committed values and backups in flight need " + most);
            }
            if (budget[rank.r] != alloc.allocatedPages()) {
                violations.add("rank " + rank.r + " holds " + alloc.allocatedPages() + " host pages but its share of "
                    + "committed values and backups in flight is " + budget[rank.r]);
            }
        }
    }

    /**
     * (h) host copies of a prefix are contiguous from the root: no node with a committed host value under a node
     * without one (an aborted backup takes the backups reserved below it along); (i) the evictable count is exact:
     * {@code devicePagesEvictable()} is what repeated device eviction would free, worked out here from the nodes'
     * public state (a node is freed when it holds device pages, is unlocked, neither pending nor loading, every
     * device child is freed, and, without a host copy, every child is removed and nothing protects it).
     */
    private void checkHostContiguityAndEvictable(Rank rank) {
        List<RadixNode> order = new java.util.ArrayList<>();
        Map<RadixNode, List<RadixNode>> children = new java.util.IdentityHashMap<>();
        RadixTestAccess.forEachNode(rank.tree, n -> {
            order.add(n);
            children.computeIfAbsent(n.parent(), k -> new java.util.ArrayList<>()).add(n);
            if (n.isHostResident() && !n.parent().isRoot() && !n.parent().isHostResident()) {
                violations.add("rank " + rank.r + " (h) " + n + " holds a host copy under " + n.parent()
                    + ", which holds none");
            }
        });
        // parents come before children in the walk: backwards, every child is decided before its parent
        Map<RadixNode, Boolean> freed = new java.util.IdentityHashMap<>(); // node -> removed by its eviction
        long freeable = 0;
        for (int i = order.size() - 1; i >= 0; i--) {
            RadixNode n = order.get(i);
            if (!n.hasDeviceValue() || n.lockRef() > 0 || n.pending() != null || n.isLoading()) {
                continue;
            }
            boolean ok = true;
            for (RadixNode c : children.getOrDefault(n, List.of())) {
                Boolean removed = freed.get(c);
                ok &= !c.hasDeviceValue() || removed != null;
                ok &= n.isHostResident() || removed != null && removed;
            }
            ok &= n.isHostResident() || n.hostRef() == 0;
            if (ok) {
                freed.put(n, !n.isHostResident());
                freeable += n.pageCount();
            }
        }
        if (freeable != rank.tree.devicePagesEvictable()) {
            violations.add("rank " + rank.r + " (i) devicePagesEvictable() is " + rank.tree.devicePagesEvictable()
                + " but device eviction could free " + freeable + " pages");
        }
    }

    // ---- the harness's trace, counters and violations

    private void count(String what) {
        harness.count(what);
    }

    private void throwViolations() {
        harness.throwViolations();
    }
}
