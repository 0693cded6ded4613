package io.hicache.core.internal;

import io.hicache.core.BackupHandle;
import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.tier.HostTierPort;
import io.hicache.core.memory.HostLayout;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.TierObserver;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The {@link HostTierPort} of one controller: each operation is one of the controller's own (or its host pool's), so
 * the port adds no state of its own but the attached tier's driver. Its leases are the controller's
 * {@link HostLease}s and its host copies the committed {@link HostPages}, which implement the port's types directly
 * (nothing is wrapped per call). Owned by the controller's scheduler thread, like the controller.
 */
final class ControllerTierPort implements HostTierPort {
    private final HiCacheController ctl;
    /** The attached tier and the controller's driver of it, or null. */
    private Tier attachedTier;
    private TierAttachment attachment;

    ControllerTierPort(HiCacheController ctl) {
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
    public RadixTree tree() {
        return ctl.tree();
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
        ctl.hostTierObserver(observer == null ? null : observer::onHostEvicting);
    }

    @Override
    public TierObserver tierObserver() {
        return ctl.tierObserver();
    }

    @Override
    public boolean hasTier() {
        return ctl.hasTier();
    }

    @Override
    public void attach(Tier tier) {
        if (tier == null) {
            throw new IllegalArgumentException("tier must not be null");
        }
        TierAttachment a = new Driver(tier);
        ctl.attachTier(a); // throws, attaching nothing, if a tier is attached or the controller is not usable
        attachedTier = tier;
        attachment = a;
    }

    @Override
    public void detach(Tier tier) {
        ctl.checkSchedulerThread();
        if (tier != null && tier == attachedTier) {
            ctl.detachTier(attachment);
            attachedTier = null;
            attachment = null;
        }
    }

    /** The controller's calls into an attached tier, passed on as they come. */
    private record Driver(Tier tier) implements TierAttachment {
        @Override
        public void onCommitted(Backup backup) {
            tier.onCommitted(backup);
        }

        @Override
        public void onMatch(MatchResult match) {
            tier.onMatch(match);
        }

        @Override
        public void poll() {
            tier.poll();
        }

        @Override
        public void close() {
            tier.close();
        }
    }
}
