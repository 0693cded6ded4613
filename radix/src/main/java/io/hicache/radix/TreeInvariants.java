package io.hicache.radix;

import java.util.ArrayDeque;

/**
 * The invariant checker of a {@link RadixTree} ({@link RadixTree#checkInvariants()}): walks the whole
 * tree and verifies structure, invariants, queues and counters. O(n); for tests and debugging.
 */
final class TreeInvariants {

    private TreeInvariants() {
    }

    static void check(RadixTree t) {
        long cached = 0;
        long locked = 0;
        long unevictable = 0;
        long committed = 0;
        long pendingPages = 0;
        int nodes = 0;
        int loading = 0;
        int devResident = 0;
        int hostResident = 0;
        int devEligible = 0;
        int hostEligible = 0;
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        stack.push(t.root);
        while (!stack.isEmpty()) {
            RadixNode n = stack.pop();
            int children = 0;
            int deviceChildren = 0;
            if (n.childVals != null) {
                int slots = 0;
                for (int s = 0; s < n.childVals.length; s++) {
                    RadixNode c = n.childVals[s];
                    if (c != null) {
                        slots++;
                    }
                    for (; c != null; c = c.hashNext) {
                        children++;
                        if (c.parent != n || !c.attached) {
                            throw new IllegalStateException("child " + c + " does not point back to its parent");
                        }
                        if (c.childKey != n.childKeys[s] || c.childKey != t.pageKey(c.keyTokens, c.keyOff)) {
                            throw new IllegalStateException("child " + c + " filed under a stale first-page key");
                        }
                        if (t.findChild(n, c.keyTokens, c.keyOff) != c) {
                            throw new IllegalStateException("child " + c + " not found by its first page");
                        }
                        if (c.devPages != null) {
                            deviceChildren++;
                        }
                        stack.push(c);
                    }
                }
                if (slots != n.childSlots) {
                    throw new IllegalStateException("child table of " + n + " has " + slots + " slots, recorded "
                            + n.childSlots);
                }
            }
            if (children != n.childCount || deviceChildren != n.deviceChildCount) {
                throw new IllegalStateException(n + " counts " + n.childCount + " children (" + n.deviceChildCount
                        + " on device) but has " + children + " (" + deviceChildren + ")");
            }
            if (n == t.root) {
                if (n.devPages != null || n.hostValue != null || n.pending != null || n.lockRef != 0 || n.hostRef != 0) {
                    throw new IllegalStateException("root must hold no value or refs");
                }
                continue;
            }
            nodes++;
            if (n.pageCount < 1 || n.keyLen != n.pageCount << t.pageShift) {
                throw new IllegalStateException(n + " key of " + n.keyLen + " tokens is not " + n.pageCount
                        + " whole pages");
            }
            if (n.devPages == null && n.hostValue == null) {
                throw new IllegalStateException(n + " holds neither device pages nor a committed host value");
            }
            if (n.pending != null && (n.devPages == null || n.hostValue != null)) {
                throw new IllegalStateException("pending " + n + " must hold device pages and no host value");
            }
            if (n.loading != null && (n.devPages == null || n.hostValue == null || n.pending != null)) {
                throw new IllegalStateException("loading " + n + " must hold device pages and a host value, and no"
                        + " pending backup");
            }
            if (n.invalidated) {
                throw new IllegalStateException("invalidated " + n + " still in the tree");
            }
            if (n.devPages != null && n.parent != t.root && n.parent.devPages == null) {
                throw new IllegalStateException("device-resident " + n + " under device-evicted parent");
            }
            if (n.hostValue != null && n.hostValue.pageCount() != n.pageCount) {
                throw new IllegalStateException(n + " host value covers " + n.hostValue.pageCount() + " pages");
            }
            if (n.lockRef < 0 || n.hostRef < 0 || n.lockRef > n.parent.lockRef && n.parent != t.root
                    || n.hostRef > n.parent.hostRef && n.parent != t.root) {
                throw new IllegalStateException(n + " refs inconsistent with parent " + n.parent);
            }
            if (n.devPages != null) {
                cached += n.pageCount;
                devResident++;
            } else {
                hostResident++;
            }
            locked += RadixTree.lockedPages(n);
            unevictable += RadixTree.unevictablePages(n);
            if (n.hostValue != null) {
                committed += n.pageCount;
            }
            if (n.pending != null) {
                pendingPages += n.pageCount;
            }
            if (n.loading != null) {
                loading++;
            }
            if (t.eligible(n, true)) {
                devEligible++;
            }
            if (t.eligible(n, false)) {
                hostEligible++;
            }
        }
        if (loading != t.loadingNodes) {
            throw new IllegalStateException("loading nodes drifted: " + t.loadingNodes + " recorded, " + loading
                    + " actual");
        }
        if (cached != t.devicePagesCached || locked != t.devicePagesLocked || unevictable != t.devicePagesUnevictable
                || committed != t.hostPagesCommitted || pendingPages != t.hostPagesPending || nodes != t.nodeCount) {
            throw new IllegalStateException("counters drifted: cached " + t.devicePagesCached + "/" + cached
                    + ", locked " + t.devicePagesLocked + "/" + locked + ", unevictable " + t.devicePagesUnevictable + "/"
                    + unevictable + ", host committed " + t.hostPagesCommitted + "/" + committed + ", pending "
                    + t.hostPagesPending + "/" + pendingPages + ", nodes " + t.nodeCount + "/" + nodes
                    + " (recorded/actual)");
        }
        t.deviceQueue.check(t, t.deviceQueue instanceof LruQueue ? devResident : devEligible);
        t.hostQueue.check(t, t.hostQueue instanceof LruQueue ? hostResident : hostEligible);
    }

    /** See {@link RadixTree#checkHostContiguity()}. */
    static void checkHostContiguity(RadixTree t) {
        // children after their parents in the list, so a reverse walk sees every child before its parent
        java.util.ArrayList<RadixNode> order = new java.util.ArrayList<>();
        ArrayDeque<RadixNode> stack = new ArrayDeque<>();
        stack.push(t.root);
        while (!stack.isEmpty()) {
            RadixNode n = stack.pop();
            if (n != t.root) {
                order.add(n);
                if (n.hostValue != null && n.parent != t.root && n.parent.hostValue == null) {
                    throw new IllegalStateException("host copy of " + n + " under " + n.parent + ", which has none:"
                            + " host copies are not contiguous from the root");
                }
            }
            if (n.childVals != null) {
                for (RadixNode head : n.childVals) {
                    for (RadixNode c = head; c != null; c = c.hashNext) {
                        stack.push(c);
                    }
                }
            }
        }
        // the nodes repeated device eviction frees, each mapped to whether that removes it (it has no host copy)
        java.util.IdentityHashMap<RadixNode, Boolean> removed = new java.util.IdentityHashMap<>();
        long freeable = 0;
        for (int i = order.size() - 1; i >= 0; i--) {
            RadixNode n = order.get(i);
            if (n.devPages == null || n.lockRef > 0 || n.pending != null || n.loading != null) {
                continue;
            }
            boolean childrenGo = true;
            boolean childrenRemoved = true;
            if (n.childVals != null) {
                for (RadixNode head : n.childVals) {
                    for (RadixNode c = head; c != null; c = c.hashNext) {
                        Boolean r = removed.get(c);
                        childrenGo &= c.devPages == null || r != null;
                        childrenRemoved &= r != null && r;
                    }
                }
            }
            if (!childrenGo || n.hostValue == null && (!childrenRemoved || n.hostRef > 0)) {
                continue;
            }
            removed.put(n, n.hostValue == null);
            freeable += n.pageCount;
        }
        if (freeable != t.devicePagesEvictable()) {
            throw new IllegalStateException("devicePagesEvictable() says " + t.devicePagesEvictable()
                    + " pages but device eviction could free " + freeable);
        }
    }
}
