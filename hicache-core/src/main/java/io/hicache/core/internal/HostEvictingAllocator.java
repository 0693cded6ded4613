package io.hicache.core.internal;

import io.hicache.core.internal.memory.HostKvPool;
import io.hicache.core.internal.memory.HostPageAllocator;
import io.hicache.core.internal.metrics.HiCacheMetrics;
import io.hicache.core.metrics.Metric;
import io.hicache.core.spi.StoragePort;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.HostEvictionListener;
import io.hicache.radix.spi.HostValue;

/**
 * Allocates a controller's host pages under the group budget, evicting host-only nodes to make room when there is
 * none (each evicted node's pages freed, retired from the pools and given back to the budget, the
 * {@link StoragePort.EvictionObserver} told first). Backups and storage-tier leases both take their pages here.
 *
 * <p><b>Threads.</b> Scheduler thread only, like the tree and the allocator. Allocation-free except when a host
 * value holds more pages than any before (the scratch array grows).
 */
final class HostEvictingAllocator {
    private final RadixTree tree;
    private final HostBudget budget;
    private final HostPageAllocator allocator;
    private final HostKvPool hostPool;
    private final HostKvPool draftPool;
    private final int cpSize;
    private final HiCacheMetrics metrics;
    private final HostEvictionListener evictionListener = this::onHostEvicted;
    private final HostEvictionListener revokeListener = this::onHostRevoked;
    private StoragePort.EvictionObserver observer;
    private int[] scratchPages = new int[64];

    HostEvictingAllocator(RadixTree tree, HostBudget budget, HostPageAllocator allocator, HostKvPool hostPool,
                          HostKvPool draftPool, int cpSize, HiCacheMetrics metrics) {
        this.tree = tree;
        this.budget = budget;
        this.allocator = allocator;
        this.hostPool = hostPool;
        this.draftPool = draftPool;
        this.cpSize = cpSize;
        this.metrics = metrics;
    }

    /** Sets the observer of host evictions (null for none). */
    void observer(StoragePort.EvictionObserver observer) {
        this.observer = observer;
    }

    /**
     * True when the host budget has room for pages {@code [startPage, startPage + pages)} of a sequence of
     * {@code totalPages} on every rank, after host eviction (policy order) if it had none.
     */
    boolean makeRoom(int startPage, int pages, int totalPages) {
        long over = budget.overBy(startPage, pages, totalPages);
        if (over <= 0) {
            return true;
        }
        if (cpSize == 1) {
            tree.evictHost((int) Math.min(Integer.MAX_VALUE, over), evictionListener);
        } else { // a node frees room only on the ranks owning its pages: one at a time until the range fits
            while (budget.overBy(startPage, pages, totalPages) > 0) {
                if (tree.evictHost(1, evictionListener) == 0) {
                    break;
                }
            }
        }
        return budget.overBy(startPage, pages, totalPages) <= 0;
    }

    /**
     * Allocates {@code owned} host pages for {@code holder} after {@link #makeRoom} said they fit. The budget bounds
     * every rank's physical use, so a refusal means the accounting is broken.
     */
    void allocateBudgeted(int owned, int[] hostPages, long holder) {
        if (owned > 0 && allocator.allocate(owned, hostPages, 0, holder) < 0) {
            throw new IllegalStateException("host allocator refused " + owned + " pages with budget "
                + budget.usedPages() + "/" + budget.capacityPages() + " used: accounting bug");
        }
    }

    /** Frees pages whose KV may have been written and tells the pools they are free. */
    void freeWritten(int[] pages, int off, int n) {
        allocator.free(pages, off, n);
        retireHostPages(pages, off, n);
    }

    /**
     * Evicts at least {@code pages} host pages if the tree can (host-only leaves in policy order, never protected
     * ones), freeing them and their budget.
     *
     * @return host pages evicted
     */
    int evict(int pages) {
        int evicted = 0;
        int step;
        while (evicted < pages && (step = tree.evictHost(pages - evicted, evictionListener)) > 0) {
            evicted += step; // removing a leaf may expose its parent
        }
        return evicted;
    }

    /**
     * Withdraws the committed host value of {@code node} (see {@link RadixTree#revokeHost}): its pages and budget are
     * freed at once, without the {@link StoragePort.EvictionObserver} (a revoked value is not written anywhere).
     *
     * @return false when a protection, a lock or a backed-up child holds it for now
     */
    boolean revoke(RadixNode node) {
        return tree.revokeHost(node, revokeListener);
    }

    private void onHostRevoked(RadixNode node, HostValue value) {
        freeOwnedPages((HostPages) value);
    }

    /** Frees the pages {@code hp} owns and gives its lanes back to the budget. @return the pages freed */
    private int freeOwnedPages(HostPages hp) {
        int n = hp.ownedPageCount();
        if (n > scratchPages.length) {
            scratchPages = new int[Math.max(n, scratchPages.length * 2)];
        }
        hp.copyHostPages(scratchPages, 0);
        if (n > 0) {
            freeWritten(scratchPages, 0, n);
        }
        budget.give(hp.lanes());
        return n;
    }

    /** A checking runtime learns the pages are free now (the draft pool shares the page ids). */
    private void retireHostPages(int[] pages, int off, int n) {
        hostPool.retirePages(pages, off, n);
        if (draftPool != null) {
            draftPool.retirePages(pages, off, n);
        }
    }

    private void onHostEvicted(RadixNode node, HostValue value) {
        HostPages hp = (HostPages) value;
        if (observer != null) {
            observer.onHostEvicting(node, hp);
        }
        int n = freeOwnedPages(hp);
        metrics.add(Metric.HOST_PAGES_EVICTED, n);
    }
}
