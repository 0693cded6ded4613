package io.hicache.radix;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.spi.PendingBackup;
import io.hicache.radix.spi.PendingLoad;
import java.util.ArrayDeque;

/**
 * Load-back transitions of a {@link RadixTree}: attaching and detaching device pages, beginning,
 * finishing and failing a load, and invalidating the subtree a failed load leaves without valid KV; a withdrawal
 * (KV never computed) invalidates a subtree the same way.
 * Static helpers the tree's public methods delegate to; they read and write its package-private state.
 * Single-threaded like the tree.
 *
 * <p><b>What the observer hears of the device tier.</b> A node on the device is reported to the tree's
 * {@link TierListener} only once no node on its path is loading ({@link #deviceReported}):
 * pages inserted (or attached) below a node still loading, whose KV the forward computes over the load, are
 * reported when the last load above them finishes, right after the loaded node, top-down; while unreported they
 * leave the device (eviction, the invalidation of a failed load) unreported too. So the observer is never told of a
 * page before the page it extends, and never of a page a failed load leaves without valid KV.
 */
final class LoadTransitions {

    private LoadTransitions() {
    }

    static void attachDevice(RadixTree t, RadixNode node, int[] pages, int from) {
        t.checkNode(node, false);
        RadixTree.checkRange(pages, "pages", from, node.pageCount);
        if (node.devPages != null) {
            throw new IllegalStateException("attachDevice on " + node + ": node already holds device pages");
        }
        if (node.parent != t.root && node.parent.devPages == null) {
            throw new IllegalStateException("attachDevice on " + node + ": parent is device evicted; load a path top-down");
        }
        t.adopt(node, pages, from);
        if (t.observer != null && deviceReported(t, node)) {
            t.observer.onStored(TierListener.DEVICE, node);
        }
    }

    static void beginLoad(RadixTree t, RadixNode node, int[] pages, int from, PendingLoad handle) {
        t.checkNode(node, false);
        RadixTree.checkRange(pages, "pages", from, node.pageCount);
        if (handle == null) {
            throw new IllegalArgumentException("pending load handle must not be null");
        }
        if (node.devPages != null || node.hostValue == null || node.loading != null) {
            throw new IllegalStateException("beginLoad on " + node + ": node must be host-only and not loading");
        }
        if (node.parent != t.root && node.parent.devPages == null) {
            throw new IllegalStateException("beginLoad on " + node + ": parent is device evicted; load a path top-down");
        }
        node.loading = handle;
        t.loadingNodes++;
        t.adopt(node, pages, from);
    }

    static void finishLoad(RadixTree t, RadixNode node, PendingLoad handle) {
        checkLoading(t, node, handle, "finishLoad");
        t.devicePagesUnevictable -= RadixTree.unevictablePages(node);
        node.loading = null;
        t.loadingNodes--;
        t.devicePagesUnevictable += RadixTree.unevictablePages(node);
        t.refresh(node);
        t.refresh(node.parent);
        if (t.observer != null && deviceReported(t, node)) {
            t.observer.onStored(TierListener.DEVICE, node);
            reportBelow(t, node); // what was computed over the load while it ran, parents first
        }
    }

    /**
     * Whether the observer is told of {@code node}'s device pages: no node on its path is loading (see the class
     * comment). Allocation-free; walks the path only while a load runs.
     */
    static boolean deviceReported(RadixTree t, RadixNode node) {
        if (t.loadingNodes == 0) {
            return true;
        }
        for (RadixNode x = node; x != t.root; x = x.parent) {
            if (x.loading != null) {
                return false;
            }
        }
        return true;
    }

    /** Reports every device node below {@code n} that no load holds back, each before its children. */
    private static void reportBelow(RadixTree t, RadixNode n) {
        if (n.deviceChildCount == 0) {
            return;
        }
        for (int s = 0; s < n.childVals.length; s++) {
            for (RadixNode c = n.childVals[s]; c != null; c = c.hashNext) {
                if (c.devPages != null && c.loading == null) { // a loading child reports its own subtree
                    t.observer.onStored(TierListener.DEVICE, c);
                    reportBelow(t, c);
                }
            }
        }
    }

    static int failLoad(RadixTree t, RadixNode node, PendingLoad handle, DeviceEvictionListener sink) {
        checkLoading(t, node, handle, "failLoad");
        if (sink == null) {
            throw new IllegalArgumentException("sink must not be null");
        }
        int freed = invalidateBelow(t, node, sink);
        t.devicePagesUnevictable -= RadixTree.unevictablePages(node);
        t.devicePagesLocked -= RadixTree.lockedPages(node);
        node.loading = null;
        t.loadingNodes--;
        t.dropDevice(node);
        t.refresh(node);
        t.refresh(node.parent);
        return freed;
    }

    static int withdraw(RadixTree t, RadixNode node, DeviceEvictionListener sink) {
        if (sink == null) {
            throw new IllegalArgumentException("sink must not be null");
        }
        t.checkNode(node, false);
        if (node.devPages == null || node.loading != null) {
            throw new IllegalStateException("withdraw of " + node + ": the node must hold device pages of its own"
                    + " (not host-only, not loading)");
        }
        RadixNode parent = node.parent;
        if (node.hostValue == null) {
            int freed = removeInvalid(t, node, sink);
            t.refresh(parent);
            return freed;
        }
        int freed = invalidateBelow(t, node, sink);
        int[] arr = node.devPages;
        int off = node.devOff;
        t.devicePagesUnevictable -= RadixTree.unevictablePages(node);
        t.devicePagesLocked -= RadixTree.lockedPages(node);
        if (t.observer != null) {
            t.observer.onRemoving(TierListener.DEVICE, node);
        }
        t.dropDevice(node);
        t.refresh(node);
        t.refresh(parent);
        sink.onDeviceEvicted(node, arr, off, node.pageCount);
        return freed + node.pageCount;
    }

    static RadixNode nodeStartingAt(RadixTree t, int[] tokens, int from, int len, int page) {
        RadixTree.checkRange(tokens, "tokens", from, len);
        if (page < 0) {
            throw new IllegalArgumentException("page " + page + " must be >= 0");
        }
        int pages = len >> t.pageShift;
        if (page >= pages) {
            return null;
        }
        RadixNode node = t.root;
        int pos = from;
        int at = 0;
        while (true) {
            RadixNode child = t.findChild(node, tokens, pos);
            if (child == null) {
                return null;
            }
            int k = t.matchPages(child, tokens, pos, pages - at);
            if (page < at + k) {
                // page lies in the matched part of child: the node starting there is child, or the tail of a split
                if (page > at) {
                    t.split(child, page - at);
                }
                return child;
            }
            if (k < child.pageCount) {
                return null; // the path leaves the tree before page
            }
            at += k;
            pos += k << t.pageShift;
            node = child;
        }
    }

    static void forEachInSubtree(RadixNode top, java.util.function.Consumer<RadixNode> visitor) {
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        stack.push(top);
        while (!stack.isEmpty()) {
            RadixNode n = stack.pop();
            visitor.accept(n);
            if (n.childVals != null) {
                for (RadixNode head : n.childVals) {
                    for (RadixNode c = head; c != null; c = c.hashNext) {
                        stack.push(c);
                    }
                }
            }
        }
    }

    static void detachDevice(RadixTree t, RadixNode node) {
        t.checkNode(node, false);
        if (node.devPages == null || node.hostValue == null || node.lockRef != 0 || node.pending != null
                || node.deviceChildCount != 0) {
            throw new IllegalStateException("detachDevice on " + node + ": node must hold device pages and a"
                    + " committed host value, be unlocked, not pending, and have no device-resident child");
        }
        if (t.observer != null && deviceReported(t, node)) {
            t.observer.onRemoving(TierListener.DEVICE, node);
        }
        t.dropDevice(node);
        t.refresh(node);
        t.refresh(node.parent);
    }

    static void checkLoading(RadixTree t, RadixNode node, PendingLoad handle, String op) {
        t.checkNode(node, false);
        if (handle == null) {
            throw new IllegalArgumentException("pending load handle must not be null");
        }
        if (node.loading != handle) {
            throw new IllegalStateException(op + " of " + node + ": node must be loading with the given handle, but "
                    + (node.loading == null ? "it is not loading" : "another load fills it"));
        }
    }

    /** Invalidates the device nodes below {@code n} (see {@link RadixTree#failLoad}); returns pages handed to the sink. */
    static int invalidateBelow(RadixTree t, RadixNode n, DeviceEvictionListener sink) {
        if (n.deviceChildCount == 0) {
            return 0;
        }
        RadixNode[] kids = new RadixNode[n.childCount];
        int k = 0;
        for (int s = 0; s < n.childVals.length; s++) {
            for (RadixNode c = n.childVals[s]; c != null; c = c.hashNext) {
                kids[k++] = c;
            }
        }
        int freed = 0;
        for (RadixNode c : kids) {
            if (c.devPages == null) {
                continue; // host-only: nothing below it is on device
            }
            if (c.hostValue == null) {
                freed += removeInvalid(t, c, sink);
                continue;
            }
            freed += invalidateBelow(t, c, sink);
            int[] arr = c.devPages;
            int off = c.devOff;
            t.devicePagesUnevictable -= RadixTree.unevictablePages(c);
            t.devicePagesLocked -= RadixTree.lockedPages(c);
            boolean ownPages = c.loading == null;
            if (ownPages && t.observer != null && deviceReported(t, c)) { // never, below a failing load
                t.observer.onRemoving(TierListener.DEVICE, c);
            }
            if (!ownPages) {
                t.loadingNodes--;
            }
            c.loading = null;
            t.dropDevice(c);
            t.refresh(c);
            if (ownPages) {
                freed += c.pageCount;
                sink.onDeviceEvicted(c, arr, off, c.pageCount);
            }
        }
        t.refresh(n);
        return freed;
    }

    /** Removes the device-only subtree at {@code top}, its pages to the sink and its refs off its ancestors. */
    static int removeInvalid(RadixTree t, RadixNode top, DeviceEvictionListener sink) {
        int locks = top.lockRef;
        int hostRefs = top.hostRef;
        RadixNode parent = top.parent;
        for (RadixNode x = parent; x != t.root; x = x.parent) {
            if (x.lockRef == locks && locks > 0) {
                t.devicePagesLocked -= RadixTree.lockedPages(x);
                t.devicePagesUnevictable -= RadixTree.unevictablePages(x);
                x.lockRef = 0;
                t.devicePagesUnevictable += RadixTree.unevictablePages(x);
            } else {
                x.lockRef -= locks;
            }
            x.hostRef -= hostRefs;
            t.refresh(x);
        }
        int freed = 0;
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        ArrayDeque<RadixNode> order = new ArrayDeque<>();
        stack.push(top);
        while (!stack.isEmpty()) {
            RadixNode x = stack.pop();
            order.push(x); // children end up before their parent
            if (x.childVals != null) {
                for (int s = 0; s < x.childVals.length; s++) {
                    for (RadixNode c = x.childVals[s]; c != null; c = c.hashNext) {
                        stack.push(c);
                    }
                }
            }
        }
        while (!order.isEmpty()) {
            RadixNode x = order.pop();
            int[] arr = x.devPages;
            int off = x.devOff;
            t.devicePagesLocked -= RadixTree.lockedPages(x);
            t.devicePagesUnevictable -= RadixTree.unevictablePages(x);
            if (t.observer != null && deviceReported(t, x)) { // never, below a failing load
                t.observer.onRemoving(TierListener.DEVICE, x);
            }
            if (x.loading != null) {
                t.loadingNodes--; // leaves the tree: no longer a load that holds reports back
            }
            t.dropDevice(x);
            t.removeNode(x);
            x.lockRef = 0;
            x.hostRef = 0;
            x.invalidated = true;
            freed += x.pageCount;
            PendingBackup pending = x.pending;
            if (pending != null) {
                t.hostPagesPending -= x.pageCount;
                pending.onInvalidated(x);
            }
            sink.onDeviceEvicted(x, arr, off, x.pageCount);
            x.pending = null;
        }
        return freed;
    }
}
