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
            if (t.eligible(n, true)) {
                devEligible++;
            }
            if (t.eligible(n, false)) {
                hostEligible++;
            }
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
}
