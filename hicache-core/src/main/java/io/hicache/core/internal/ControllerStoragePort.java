package io.hicache.core.internal;

import io.hicache.core.BackupHandle;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.spi.StoragePort;
import io.hicache.radix.RadixNode;
import io.hicache.radix.TierListener;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The {@link StoragePort} of one controller: each operation is one of the controller's own (or its host pool's or
 * tree's, checked there), so the port adds no state of its own. Its leases are the controller's
 * {@link HostLease}s and its host copies the committed {@link HostPages}, which implement the port's types directly
 * (nothing is wrapped per call). Owned by the controller's scheduler thread, like the controller.
 */
final class ControllerStoragePort implements StoragePort {
    private final HiCacheController ctl;
    /** The cache's tier listener as the storage tier reports to it ({@link #storageTransitions}). */
    private final StorageTransitions transitions = new StorageTransitions() {
        @Override
        public void pagesStored(RadixNode node, int firstPage, int pages) {
            TierListener o = ctl.tierObserver();
            if (o != null) {
                o.onPagesStored(TierListener.STORAGE, node, firstPage, pages);
            }
        }

        @Override
        public void sequencePages(boolean stored, int[] tokens, int from, int firstPage, int pages) {
            TierListener o = ctl.tierObserver();
            if (o != null) {
                o.onSequencePages(TierListener.STORAGE, stored, tokens, from, firstPage, pages);
            }
        }
    };

    ControllerStoragePort(HiCacheController ctl) {
        this.ctl = ctl;
    }

    @Override
    public int rank() {
        return ctl.rank();
    }

    @Override
    public int cpSize() {
        return ctl.cpSize();
    }

    @Override
    public int pageSize() {
        return ctl.pageSize();
    }

    @Override
    public RadixNode root() {
        return ctl.tree().root();
    }

    @Override
    public boolean setPageHashes(RadixNode node, byte[] hashes, int off) {
        ctl.checkSchedulerThread();
        return ctl.tree().setPageHashes(node, hashes, off);
    }

    @Override
    public void protectHostCopy(RadixNode node) {
        ctl.checkSchedulerThread();
        ctl.tree().protectHost(node);
    }

    @Override
    public void releaseHostCopy(RadixNode node) {
        ctl.checkSchedulerThread();
        ctl.tree().releaseHost(node);
    }

    @Override
    public LongSupplier clock() {
        return ctl.clock();
    }

    @Override
    public boolean isClosed() {
        return ctl.isClosed();
    }

    @Override
    public void checkSchedulerThread() {
        ctl.checkSchedulerThread();
    }

    @Override
    public HostLayout hostLayout() {
        return ctl.hostPool().layout();
    }

    @Override
    public boolean hasDraftPool() {
        return ctl.draftHostPool() != null;
    }

    @Override
    public int hostPageCount() {
        return ctl.hostPool().pageCount();
    }

    @Override
    public long hostBudgetCapacityPages() {
        return ctl.hostBudgetCapacityPages();
    }

    @Override
    public MemorySegment hostMemory(boolean draft) {
        return pool(draft).segment();
    }

    @Override
    public long hostPageBytes(boolean draft) {
        return pool(draft).bytesPerPageAllLayers();
    }

    @Override
    public MemorySegment[] hostPageSegments(boolean draft, int hostPage) {
        return pool(draft).pageSegments(hostPage);
    }

    private HostKvPool pool(boolean draft) {
        if (!draft) {
            return ctl.hostPool();
        }
        HostKvPool p = ctl.draftHostPool();
        if (p == null) {
            throw new IllegalStateException("this cache has no draft layers, hence no draft host pool");
        }
        return p;
    }

    @Override
    public Lease reserveHost(int startPage, int pages, int totalPages) {
        return ctl.reserveHost(startPage, pages, totalPages);
    }

    @Override
    public RadixNode publishHost(Lease lease, int[] tokens, int from, int pages, byte[] hashes, int hashOff,
                                 boolean withDraft) {
        return ctl.publishHost(own(lease), tokens, from, pages, hashes, hashOff, withDraft);
    }

    @Override
    public boolean releaseHost(Lease lease) {
        return ctl.releaseHost(own(lease));
    }

    private HostLease own(Lease lease) {
        if (lease instanceof HostLease l && l.owner == ctl) {
            return l;
        }
        throw new IllegalArgumentException("not a host lease of this cache: " + lease);
    }

    @Override
    public HostCopy hostCopy(RadixNode node) {
        return node.hostValue() instanceof HostPages p ? p : null;
    }

    @Override
    public void committedNodes(BackupHandle committed, List<RadixNode> out) {
        if (!(committed instanceof Backup b)) {
            throw new IllegalArgumentException("not a backup of this cache: " + committed);
        }
        for (int i = 0; i < b.fragmentCount(); i++) {
            out.add(b.fragment(i));
        }
    }

    @Override
    public void observeHostEvictions(EvictionObserver observer) {
        ctl.hostEvictionObserver(observer);
    }

    @Override
    public StorageTransitions storageTransitions() {
        return ctl.isClosed() || ctl.tierObserver() == null ? null : transitions;
    }

    @Override
    public boolean hasTier() {
        return ctl.hasTier();
    }

    @Override
    public void attach(Tier tier) {
        ctl.attachTier(tier); // throws, attaching nothing, if a tier is attached or the controller is not usable
    }

    @Override
    public void detach(Tier tier) {
        ctl.detachTier(tier);
    }
}
