package io.hicache.core;

import io.hicache.core.internal.HiCacheController;
import io.hicache.core.memory.HostLayout;
import io.hicache.core.memory.HostMemoryKind;
import io.hicache.radix.EvictionPolicy;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;

/**
 * The read-only views a {@link HiCache} hands out ({@link HiCache#tree()}, {@link HiCache#hostPool()}), over its
 * controller. Owned by the scheduler thread, like the cache; every read throws {@link IllegalStateException} once
 * the cache is closed.
 */
final class FacadeViews {
    private FacadeViews() {
    }

    static HiCacheController open(HiCacheController controller) {
        if (controller.isClosed()) {
            throw new IllegalStateException("HiCache is closed");
        }
        return controller;
    }

    /** {@link HiCache#tree()}: each call checks the cache is open, then reads the tree. */
    static final class Tree implements TreeView {
        private final HiCacheController controller;

        Tree(HiCacheController controller) {
            this.controller = controller;
        }

        private RadixTree openTree() {
            return open(controller).tree();
        }

        @Override
        public int pageSize() {
            return openTree().pageSize();
        }

        @Override
        public RadixNode root() {
            return openTree().root();
        }

        @Override
        public int nodeCount() {
            return openTree().nodeCount();
        }

        @Override
        public long devicePagesCached() {
            return openTree().devicePagesCached();
        }

        @Override
        public long devicePagesEvictable() {
            return openTree().devicePagesEvictable();
        }

        @Override
        public long devicePagesLocked() {
            return openTree().devicePagesLocked();
        }

        @Override
        public long hostPagesCommitted() {
            return openTree().hostPagesCommitted();
        }

        @Override
        public long hostPagesPending() {
            return openTree().hostPagesPending();
        }

        @Override
        public EvictionPolicy devicePolicy() {
            return openTree().devicePolicy();
        }

        @Override
        public EvictionPolicy hostPolicy() {
            return openTree().hostPolicy();
        }

        @Override
        public void checkInvariants() {
            RadixTree t = openTree();
            t.checkInvariants();
            t.checkHostContiguity();
        }

        @Override
        public String toString() {
            return "TreeView{" + (controller.isClosed() ? "closed" : "nodes=" + nodeCount() + ", devicePages=" + devicePagesCached()) + '}';
        }
    }

    /** {@link HiCache#hostPool()}: each call checks the cache is open, then reads the pool. */
    static final class Pool implements HostPoolView {
        private final HiCacheController controller;

        Pool(HiCacheController controller) {
            this.controller = controller;
        }

        private HiCacheController open() {
            return FacadeViews.open(controller);
        }

        @Override
        public int capacityPages() {
            return open().allocator().capacityPages();
        }

        @Override
        public int freePages() {
            return open().allocator().freePages();
        }

        @Override
        public int allocatedPages() {
            return open().allocator().allocatedPages();
        }

        @Override
        public long budgetUsedPages() {
            return open().hostBudgetUsedPages();
        }

        @Override
        public long budgetCapacityPages() {
            return open().hostBudgetCapacityPages();
        }

        @Override
        public long bytesPerPage() {
            return open().hostPool().bytesPerPageAllLayers();
        }

        @Override
        public long totalBytes() {
            return open().hostPool().totalBytes();
        }

        @Override
        public HostLayout layout() {
            return open().hostPool().layout();
        }

        @Override
        public HostMemoryKind memoryKind() {
            return open().hostPool().memoryKind();
        }

        @Override
        public boolean hasDraft() {
            return open().draftHostPool() != null;
        }

        @Override
        public String toString() {
            return "HostPoolView{" + (controller.isClosed() ? "closed" : "pages=" + capacityPages() + ", free=" + freePages()) + '}';
        }
    }
}
