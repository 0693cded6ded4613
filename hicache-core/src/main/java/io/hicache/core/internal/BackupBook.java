package io.hicache.core.internal;

import io.hicache.core.AbortReason;
import io.hicache.core.BackupListener;
import io.hicache.core.BackupState;
import io.hicache.core.WritePolicy;
import io.hicache.core.cp.OwnerLanes;
import io.hicache.core.cp.GroupState;
import io.hicache.core.internal.cp.LaneDescription;
import io.hicache.core.internal.jfr.HiCacheEvents;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.HostValue;
import org.jctools.queues.SpscArrayQueue;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The backup book of one controller: every backup from its reservation until the CP group agreed on it, in
 * reservation order ({@link AgreedFifo}), and what happens to it — reserve (by hand or by the write policy), lease
 * expiry, local failure and abort, and the agreement rounds that commit (publish the host value on the node) or
 * release (pending mark, device lock, host pages and budget) the same backups on every rank; a sealed backup that
 * waited past the sealed time limit is released here at once (an agreement that never answers cannot pin its device
 * pages), and what this rank committed in a round whose outcome another rank did not share is revoked.
 *
 * <p><b>Threads.</b> Scheduler thread only; the controller checks the thread and its state before calling. Commits
 * and releases are counted in {@link #changes} for {@link HiCacheController#poll()}. Allocation-free in steady state
 * except for the reservations themselves.
 */
final class BackupBook {
    private final HiCacheController owner;
    private final RadixTree tree;
    private final HostEvictingAllocator room;
    private final HostBudget budget;
    private final OwnerLanes lanes;
    private final int cpSize;
    private final int rank;
    private final boolean hasDraft;
    private final int targetLayers;
    private final int draftLayers;
    private final long targetPageBytes;
    private final long draftPageBytes;
    private final WritePolicy writePolicy;
    private final int hitThreshold;
    private final LongSupplier clock;
    private final long leaseNs;
    private final long sealedLimitNs;
    private final GroupHealth health;
    private final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(BackupBook.class);
    private final BackupListener listener;
    private final HiCacheMetrics metrics;
    private final SlotPool slotPool;
    private final SpscArrayQueue<ForwardSlot> commands;
    private final AgreedFifo<Backup> fifo;
    /** What the last applied round committed here (revoked if the next round's digests differ). */
    private final ArrayList<Backup> lastCommitted = new ArrayList<>();
    /** Nodes whose host values are revoked but were protected (a load or an L3 write reads them): retried each poll. */
    private final ArrayList<RadixNode> toRevoke = new ArrayList<>();
    private long sealedReleases;
    private final AgreedFifo.Retirer<Backup> backupRetirer = new AgreedFifo.Retirer<>() {
        @Override
        public boolean retireComplete(Backup b) {
            if (b.invalidated && !b.state.terminal()) {
                // never reported complete once its nodes were removed (failed load, withdrawal); defensive
                releaseAndAbortOrphans(b, b.abortReason != null ? b.abortReason : AbortReason.LOAD_FAILED);
            } else if (!b.state.terminal()) {
                if (hostCopiedAbove(b)) {
                    // complete everywhere; an abort asked for after this rank reported it complete lost the race,
                    // and the bytes are whole, so it commits like on every other rank
                    commit(b);
                    return true;
                }
                // a node above lost its backup. An abort marked this one at once on every rank; a node above that
                // this rank released past the sealed time limit while the group committed it is the other way here,
                // and this one's outcome is in doubt like that node's: the next round's digests settle both
                releaseAndAbortOrphans(b, sealedReleases > 0 ? AbortReason.AGREEMENT_TIMEOUT
                    : AbortReason.PARENT_ABORTED);
            }
            // released here past the sealed time limit while the group committed it: the next round's digests differ
            return false;
        }

        @Override
        public void retireFailed(Backup b) {
            if (!b.state.terminal()) {
                releaseAndAbortOrphans(b, b.local == Backup.Local.FAILED && b.abortReason != null ? b.abortReason
                    : AbortReason.RANK_FAILED);
            }
        }

        @Override
        public int retireDegraded(AbortReason reason) {
            return abortAll(reason);
        }

        @Override
        public void newRound() {
            lastCommitted.clear();
        }

        @Override
        public void revokeLastCommits() {
            revoke(lastCommitted);
            lastCommitted.clear();
        }

        @Override
        public String itemName() {
            return "backup";
        }
    };
    private int changes;
    private RadixNode[] pathScratch = new RadixNode[64];

    BackupBook(HiCacheController owner, ControllerConfig b, RadixTree tree, HostEvictingAllocator room,
               HostBudget budget, HiCacheMetrics metrics, SlotPool slotPool, SpscArrayQueue<ForwardSlot> commands,
               long targetPageBytes, long draftPageBytes, GroupHealth health) {
        this.owner = owner;
        this.tree = tree;
        this.room = room;
        this.budget = budget;
        this.lanes = b.lanes();
        this.cpSize = b.cpSize();
        this.rank = b.cpRank();
        this.hasDraft = b.draftLayout() != null;
        this.targetLayers = b.targetLayout().layerCount();
        this.draftLayers = hasDraft ? b.draftLayout().layerCount() : 0;
        this.targetPageBytes = targetPageBytes;
        this.draftPageBytes = draftPageBytes;
        this.writePolicy = b.writePolicy();
        this.hitThreshold = b.hitThreshold();
        this.clock = b.clock();
        this.leaseNs = b.leaseNs();
        this.sealedLimitNs = b.sealedLimitNs();
        this.health = health;
        this.listener = b.listener();
        this.metrics = metrics;
        this.slotPool = slotPool;
        this.commands = commands;
        this.fifo = new AgreedFifo<>(backupRetirer, health);
    }

    /** The backups' section of the agreement rounds. */
    AgreedFifo<Backup> fifo() {
        return fifo;
    }

    /** Backups not yet agreed and retired. */
    int size() {
        return fifo.size();
    }

    /** The backup at {@code i} in reservation order. */
    Backup at(int i) {
        return fifo.at(i);
    }

    /** Commits and releases since the last {@link #resetChanges()}. */
    int changes() {
        return changes;
    }

    void resetChanges() {
        changes = 0;
    }

    /**
     * Releases every backup not yet terminal with {@code reason} at once (its copies drained or abandoned). The
     * entries stay, failed, until {@link #clear()}.
     *
     * @return how many were released
     */
    int releaseAll(AbortReason reason) {
        int released = 0;
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (!b.state.terminal()) {
                b.state = BackupState.DRAINING;
                release(b, reason);
                released++;
            }
        }
        return released;
    }

    /** Drops every entry (close, after {@link #releaseAll}). */
    void clear() {
        while (fifo.size() > 0) {
            fifo.pop();
        }
    }

    /** See {@link HiCacheController#reserve}; the caller checked thread and state. */
    Backup reserve(RadixNode node, boolean withDraft) {
        if (node == null) {
            throw new IllegalArgumentException("node must not be null");
        }
        if (withDraft && !hasDraft) {
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
        if (!room.makeRoom(startPage, pages, totalPages)) {
            metrics.increment(Metric.RESERVE_NO_ROOM);
            return null;
        }
        int[] offsets = new int[pages];
        int owned = lanes.ownedOffsets(rank, startPage, pages, totalPages, cpSize, offsets);
        int[] ownedIdx = owned == pages ? offsets : java.util.Arrays.copyOf(offsets, owned);
        int[] hostPages = new int[owned];
        long seq = fifo.nextSeq();
        room.allocateBudgeted(owned, hostPages, seq);
        int[] devicePages = new int[pages];
        node.copyDevicePages(devicePages, 0);
        LaneDescription lane = new LaneDescription(lanes, cpSize, rank, startPage, pages, totalPages);
        HostPages value = new HostPages(hostPages, lane, withDraft);
        long now = clock.getAsLong();
        long fingerprint = cpSize > 1 ? Fingerprints.backup(seq, node, startPage, pages, withDraft) : 0;
        Backup b = new Backup(owner, seq, node, startPage, devicePages, ownedIdx, owned, hostPages, lane, value, withDraft,
            leaseNs > 0 ? now + leaseNs : Long.MAX_VALUE, fingerprint);
        tree.markPending(node, b);
        tree.lock(node);
        budget.take(lane);
        fifo.add(b);
        metrics.increment(Metric.BACKUPS_RESERVED);
        return b;
    }

    /** See {@link HiCacheController#reserveByPolicy}; the caller checked thread and state. */
    int reserveByPolicy(RadixNode node, boolean withDraft, List<Backup> out) {
        if (node == null || out == null) {
            throw new IllegalArgumentException("node and out must not be null");
        }
        if (node.isRoot()) {
            return 0;
        }
        int depth = 0;
        for (RadixNode p = node; p != null && !p.isRoot(); p = p.parent()) {
            if (depth == pathScratch.length) {
                pathScratch = java.util.Arrays.copyOf(pathScratch, depth * 2);
            }
            pathScratch[depth++] = p;
        }
        if (writePolicy == WritePolicy.WRITE_BACK) {
            skipPath(depth - 1, WritePolicy.SkipReason.WRITE_BACK);
            return 0;
        }
        int reserved = 0;
        for (int i = depth - 1; i >= 0; i--) {
            RadixNode n = pathScratch[i];
            pathScratch[i] = null;
            if (n.isBackedUp()) {
                continue;
            }
            WritePolicy.SkipReason skip = null;
            if (!n.hasDeviceValue()) {
                skip = WritePolicy.SkipReason.NOT_ON_DEVICE;
            } else if (n.hitCount() < hitThreshold) {
                skip = WritePolicy.SkipReason.BELOW_HIT_THRESHOLD;
            } else if (!tree.canBackUp(n)) {
                skip = WritePolicy.SkipReason.ANCESTOR_SKIPPED; // its parent is neither the root nor backed up
            } else {
                Backup b = reserve(n, withDraft);
                if (b == null) {
                    skip = WritePolicy.SkipReason.NO_ROOM;
                } else {
                    out.add(b);
                    reserved++;
                }
            }
            if (skip != null) {
                metrics.countSkipped(skip, 1);
                skipPath(i - 1, WritePolicy.SkipReason.ANCESTOR_SKIPPED);
                break;
            }
        }
        return reserved;
    }

    /** Counts the nodes {@code pathScratch[0..upTo]} not backed up under {@code reason} and clears the scratch. */
    private void skipPath(int upTo, WritePolicy.SkipReason reason) {
        int skipped = 0;
        for (int j = upTo; j >= 0; j--) {
            if (!pathScratch[j].isBackedUp()) {
                skipped++;
            }
            pathScratch[j] = null;
        }
        if (skipped > 0) {
            metrics.countSkipped(reason, skipped);
        }
    }

    /** Aborts the backups whose lease expired (a forward not sealed in time is cancelled). */
    void expireLeases() {
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
            } else if ((b.state == BackupState.COPYING || b.state == BackupState.DRAINING) && b.slot != null
                && !b.cancelSent && !b.slot.writeBack) {
                // (not a write-back's slot: it has no forward to revoke, and its own command copies and seals it.
                // A cancel would be a second command for that slot; the queue holds two a slot, the current one and
                // at most one left from the slot's previous forward.)
                // the forward was not sealed in time: revoke its lease (its handle throws at its next hook) and
                // have the submitter seal it after the copies already queued
                ForwardSlot slot = b.slot;
                for (int j = 0; j < slot.backupCount; j++) {
                    Backup sb = slot.backups[j];
                    sb.cancelSent = true;
                    if (!sb.state.terminal()) {
                        sb.state = BackupState.DRAINING;
                        if (sb.abortReason == null) {
                            sb.abortReason = AbortReason.LEASE_EXPIRED;
                        }
                    }
                }
                slot.command = ForwardSlot.CMD_CANCEL;
                slotPool.revoke(slot);
                if (!commands.offer(slot)) {
                    throw new IllegalStateException("submitter command queue full");
                }
            }
        }
    }

    /**
     * Releases at once every backup resolved here (sealed, or failed with nothing left to drain) that has waited
     * {@code sealedLimitNs} for the group's agreement: its device lock, pending mark and host pages go now; a sealed one
     * aborts {@link AbortReason#AGREEMENT_TIMEOUT} and this rank reports it failed from its next round on, a failed one
     * keeps its reason. Each keeps its place in the sequence until the group retires it. If the group had already agreed (in a round whose result never reached this rank)
     * that it completes, the others commit it and the next round's digests show it: they revoke it again. The group
     * is degraded ({@code AGREEMENT_TIMEOUT}): a backup not agreed for that long means the agreement does not answer
     * ({@code roundOpenForNs}, logged) or the ranks' schedules differ so that the group can never retire it.
     */
    void expireSealed(long roundOpenForNs) {
        if (sealedLimitNs <= 0 || fifo.size() == 0) {
            return;
        }
        long now = clock.getAsLong();
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (b.slot == null && b.local != Backup.Local.UNRESOLVED && !b.state.terminal()
                && now - b.resolvedAtNs >= sealedLimitNs) {
                if (sealedReleases++ % 100 == 0) {
                    log.warn("HiCache CP rank {}: {} backup {} waited {} ms for the group's agreement (sealed time"
                        + " limit {} ms; the open round has waited {} ms): released on this rank (released so far: {})",
                        rank, b.local == Backup.Local.OK ? "sealed" : "failed", b.seq,
                        (now - b.resolvedAtNs) / 1_000_000, sealedLimitNs / 1_000_000, roundOpenForNs / 1_000_000,
                        sealedReleases);
                }
                release(b, b.local == Backup.Local.OK || b.abortReason == null ? AbortReason.AGREEMENT_TIMEOUT
                    : b.abortReason);
                health.degrade(GroupState.Cause.AGREEMENT_TIMEOUT, 0);
            }
        }
    }

    /**
     * Withdraws the host values {@code committed} published here: some rank did not commit them (the digests of a
     * round's commits differed), so no rank may serve them. Each backup's range of the path is revoked deepest node
     * first; a node a load or an L3 write still reads is revoked at a later poll ({@link #revokePending()}).
     */
    private void revoke(List<Backup> committed) {
        for (int i = committed.size() - 1; i >= 0; i--) {
            Backup b = committed.get(i);
            b.revoked = true;
            for (RadixNode n = b.node; n != null && !n.isRoot(); n = n.parent()) {
                int start = 0;
                for (RadixNode p = n.parent(); p != null && !p.isRoot(); p = p.parent()) {
                    start += p.pageCount();
                }
                if (start < b.startPage) {
                    break;
                }
                toRevoke.add(n);
            }
        }
        revokePending();
    }

    /** Retries revocations a protection held up. Scheduler thread. */
    void revokePending() {
        for (int i = 0; i < toRevoke.size(); ) {
            RadixNode n = toRevoke.get(i);
            if (!n.isAttached() || n.hostValue() == null) {
                toRevoke.remove(i); // evicted meanwhile
            } else if (room.revoke(n)) {
                metrics.increment(Metric.CP_HOST_REVOKED);
                changes++;
                toRevoke.remove(i);
            } else {
                i++;
            }
        }
    }

    /** Host values revoked but not yet withdrawn (a load or an L3 write reads them). */
    int revocationsPending() {
        return toRevoke.size();
    }

    /**
     * A degraded round (a rank of the group was declared failed, the ranks diverged, or a rank reported the group
     * degraded): no backup in flight can be whole on every rank, so each aborts with {@code reason} and is released
     * once its own copies have drained. Every later round is degraded too, so nothing commits until the group restarts.
     */
    private int abortAll(AbortReason reason) {
        for (int i = 0; i < fifo.size(); i++) {
            Backup b = fifo.at(i);
            if (b.state == BackupState.RESERVED || b.state == BackupState.SEALED && b.slot == null) {
                fail(b, reason);
            } else if (b.state == BackupState.COPYING || b.state == BackupState.SEALED) {
                b.state = BackupState.DRAINING; // released when its forward is acknowledged
                if (b.abortReason == null) {
                    b.abortReason = reason;
                }
            }
        }
        int retired = 0;
        while (fifo.size() > 0 && fifo.at(0).local != Backup.Local.UNRESOLVED) {
            Backup b = fifo.pop();
            retired++;
            if (!b.state.terminal()) {
                release(b, b.abortReason != null ? b.abortReason : reason);
            }
        }
        return retired;
    }

    /** Marks a backup failed on this rank; it is released when the group agrees ({@link AgreementChannel}). */
    void fail(Backup b, AbortReason reason) {
        b.state = BackupState.DRAINING;
        if (b.abortReason == null) {
            b.abortReason = reason;
        }
        b.local = Backup.Local.FAILED;
        b.resolvedAtNs = clock.getAsLong();
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
        lastCommitted.add(b);
        metrics.increment(Metric.BACKUPS_COMMITTED);
        long latencyNs = clock.getAsLong() - b.forwardEndNs;
        metrics.commitLatencyNs().record(latencyNs);
        HiCacheEvents.backupCommitted(b.pageCount, b.ownedCount * (targetPageBytes + (b.withDraft ? draftPageBytes : 0)),
            targetLayers, b.withDraft ? draftLayers : 0, latencyNs, rank);
        changes++;
        if (listener != null) {
            listener.onCommitted(b);
        }
        owner.tierCommitted(b);
    }

    /**
     * Releases {@code b} and then aborts, with {@link AbortReason#PARENT_ABORTED}, every backup in flight that was
     * reserved below a node left without a backup by it: each would otherwise commit a host copy under a node with
     * none, and host copies of a prefix are contiguous from the root. Those backups were reserved after {@code b}
     * (a node is reserved only below a backed-up parent), so none has retired yet; every rank releases {@code b} in
     * the same agreed round and marks the same backups, which then retire, failed, in later rounds.
     */
    private void releaseAndAbortOrphans(Backup b, AbortReason reason) {
        release(b, reason);
        for (int i = 0; i < fifo.size(); i++) {
            Backup c = fifo.at(i);
            if (c.state != BackupState.DRAINING && !c.state.terminal() && !pathBackedUp(c)) {
                markAborted(c, AbortReason.PARENT_ABORTED);
            }
        }
    }

    /** Whether every node above the backup's top fragment is backed up (committed or pending) or the root. */
    private static boolean pathBackedUp(Backup c) {
        for (RadixNode p = c.fragments[0].parent(); p != null && !p.isRoot(); p = p.parent()) {
            if (!p.isBackedUp()) {
                return false;
            }
        }
        return true;
    }

    /** Whether every node above the backup's top fragment holds a committed host copy (or is the root). */
    private static boolean hostCopiedAbove(Backup b) {
        for (RadixNode p = b.fragments[0].parent(); p != null && !p.isRoot(); p = p.parent()) {
            if (!p.isHostResident()) {
                return false;
            }
        }
        return true;
    }

    /** Releases an aborted backup whose copies have drained: pending cleared, lock released, pages freed. */
    private void release(Backup b, AbortReason reason) {
        for (int i = 0; i < b.fragmentCount; i++) {
            if (!b.fragments[i].isInvalidated()) {
                tree.abortPending(b.fragments[i], b);
            }
        }
        tree.unlock(b.node);
        if (b.ownedCount > 0) {
            room.freeWritten(b.hostPages, 0, b.ownedCount);
        }
        budget.give(b.budgetLane);
        b.abortReason = reason;
        b.state = BackupState.ABORTED;
        b.local = Backup.Local.FAILED;
        // device pages of fragments a failed load or a withdrawal removed: their copies have drained, the engine
        // gets them now, from a backup that is aborted by then
        b.freeHeldPages();
        metrics.countAbort(reason);
        HiCacheEvents.backupAborted(reason, b.pageCount, rank);
        changes++;
        if (listener != null) {
            listener.onAborted(b, reason);
        }
    }

    boolean markAborted(Backup backup, AbortReason reason) {
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
}
