package io.hicache.radix;

/**
 * O(1) LRU order: an intrusive doubly linked list of every node resident in the tier, least
 * recent first. Touching a path from leaf to root keeps each parent behind its children, so the
 * head is normally an evictable leaf; the tree skips locked, pending or protected nodes.
 * Package-private; owned by the tree's thread.
 */
final class LruQueue extends TierQueue {

    private RadixNode head;
    private RadixNode tail;
    private int size;
    private RadixNode cursor;

    LruQueue(boolean device) {
        super(device);
    }

    private RadixNode prev(RadixNode n) {
        return device ? n.devPrev : n.hostPrev;
    }

    private RadixNode next(RadixNode n) {
        return device ? n.devNext : n.hostNext;
    }

    private void setPrev(RadixNode n, RadixNode p) {
        if (device) {
            n.devPrev = p;
        } else {
            n.hostPrev = p;
        }
    }

    private void setNext(RadixNode n, RadixNode x) {
        if (device) {
            n.devNext = x;
        } else {
            n.hostNext = x;
        }
    }

    private boolean inList(RadixNode n) {
        return device ? n.inDevList : n.inHostList;
    }

    private void setInList(RadixNode n, boolean in) {
        if (device) {
            n.inDevList = in;
        } else {
            n.inHostList = in;
        }
    }

    private void append(RadixNode n) {
        setPrev(n, tail);
        setNext(n, null);
        if (tail == null) {
            head = n;
        } else {
            setNext(tail, n);
        }
        tail = n;
        setInList(n, true);
        size++;
    }

    private void unlink(RadixNode n) {
        RadixNode p = prev(n);
        RadixNode x = next(n);
        if (cursor == n) {
            cursor = x;
        }
        if (p == null) {
            head = x;
        } else {
            setNext(p, x);
        }
        if (x == null) {
            tail = p;
        } else {
            setPrev(x, p);
        }
        setPrev(n, null);
        setNext(n, null);
        setInList(n, false);
        size--;
    }

    @Override
    void onResident(RadixNode n, boolean fixAncestors) {
        if (!inList(n)) {
            append(n);
        }
        if (fixAncestors) {
            for (RadixNode a = n.parent; a != null && a.parent != null; a = a.parent) {
                if (inList(a)) {
                    touch(a);
                }
            }
        }
    }

    @Override
    void onNonResident(RadixNode n) {
        if (inList(n)) {
            unlink(n);
        }
    }

    @Override
    void touch(RadixNode n) {
        if (inList(n) && tail != n) {
            unlink(n);
            append(n);
        }
    }

    @Override
    void rekey(RadixNode n) {
        // order is recency only
    }

    @Override
    void onSplit(RadixNode suffix, RadixNode prefix) {
        if (!inList(suffix)) {
            append(prefix);
            return;
        }
        RadixNode x = next(suffix);
        setPrev(prefix, suffix);
        setNext(prefix, x);
        setNext(suffix, prefix);
        if (x == null) {
            tail = prefix;
        } else {
            setPrev(x, prefix);
        }
        setInList(prefix, true);
        size++;
    }

    @Override
    void refresh(RadixNode n, boolean eligible) {
        // membership is residency; eligibility is checked while scanning
    }

    @Override
    void beginScan() {
        cursor = head;
    }

    @Override
    RadixNode nextCandidate() {
        RadixNode c = cursor;
        if (c != null) {
            cursor = next(c);
        }
        return c;
    }

    @Override
    void endScan() {
        cursor = null;
    }

    @Override
    void check(RadixTree tree, int expectedResident) {
        int n = 0;
        RadixNode p = null;
        for (RadixNode x = head; x != null; x = next(x)) {
            if (!inList(x) || prev(x) != p) {
                throw new IllegalStateException((device ? "device" : "host") + " LRU list corrupt at " + x);
            }
            if (!x.attached || (device ? x.devPages == null : (x.devPages != null || x.hostValue == null))) {
                throw new IllegalStateException((device ? "device" : "host") + " LRU list holds non-resident " + x);
            }
            p = x;
            n++;
            if (n > size) {
                throw new IllegalStateException("LRU list longer than its size " + size);
            }
        }
        if (p != tail || n != size || n != expectedResident) {
            throw new IllegalStateException((device ? "device" : "host") + " LRU list has " + n + " nodes, size "
                    + size + ", expected " + expectedResident + " resident");
        }
    }
}
