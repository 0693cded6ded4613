package io.hicache.radix;

/**
 * The open-addressing child table of a {@link RadixNode}, keyed by the hash of the first page; a child
 * whose first-page hash collides with a sibling's is chained through {@code hashNext}. Static helpers of
 * {@link RadixTree}; single-threaded like the tree.
 */
final class ChildTable {

    private ChildTable() {
    }

    static int slotOf(int key, int mask) {
        int h = key * 0x9E3779B9;
        return (h ^ (h >>> 16)) & mask;
    }

    static int findSlot(RadixNode p, int key) {
        int[] keys = p.childKeys;
        if (keys == null) {
            return -1;
        }
        RadixNode[] vals = p.childVals;
        int mask = keys.length - 1;
        for (int i = slotOf(key, mask); ; i = (i + 1) & mask) {
            if (vals[i] == null) {
                return -1;
            }
            if (keys[i] == key) {
                return i;
            }
        }
    }

    static void addChild(RadixNode p, RadixNode c) {
        int key = c.childKey;
        int slot = findSlot(p, key);
        if (slot >= 0) {
            c.hashNext = p.childVals[slot];
            p.childVals[slot] = c;
            p.childCount++;
            return;
        }
        if (p.childKeys == null) {
            p.childKeys = new int[4];
            p.childVals = new RadixNode[4];
        } else if ((p.childSlots + 1) * 4 > p.childKeys.length * 3) {
            rehash(p, p.childKeys.length * 2);
        }
        int mask = p.childKeys.length - 1;
        int i = slotOf(key, mask);
        while (p.childVals[i] != null) {
            i = (i + 1) & mask;
        }
        p.childKeys[i] = key;
        p.childVals[i] = c;
        c.hashNext = null;
        p.childSlots++;
        p.childCount++;
    }

    static void rehash(RadixNode p, int capacity) {
        int[] oldKeys = p.childKeys;
        RadixNode[] oldVals = p.childVals;
        int[] keys = new int[capacity];
        RadixNode[] vals = new RadixNode[capacity];
        int mask = capacity - 1;
        for (int j = 0; j < oldKeys.length; j++) {
            if (oldVals[j] != null) {
                int i = slotOf(oldKeys[j], mask);
                while (vals[i] != null) {
                    i = (i + 1) & mask;
                }
                keys[i] = oldKeys[j];
                vals[i] = oldVals[j];
            }
        }
        p.childKeys = keys;
        p.childVals = vals;
    }

    static void removeChild(RadixNode p, RadixNode c) {
        int slot = findSlot(p, c.childKey);
        if (slot < 0) {
            throw new IllegalStateException("child " + c + " missing from its parent's table");
        }
        RadixNode head = p.childVals[slot];
        if (head == c) {
            if (c.hashNext != null) {
                p.childVals[slot] = c.hashNext;
                c.hashNext = null;
                p.childCount--;
                return;
            }
        } else {
            RadixNode prev = head;
            while (prev.hashNext != c) {
                prev = prev.hashNext;
                if (prev == null) {
                    throw new IllegalStateException("child " + c + " missing from its hash chain");
                }
            }
            prev.hashNext = c.hashNext;
            c.hashNext = null;
            p.childCount--;
            return;
        }
        // delete the slot, shifting back the following run (linear probing)
        int[] keys = p.childKeys;
        RadixNode[] vals = p.childVals;
        int mask = keys.length - 1;
        int i = slot;
        vals[i] = null;
        for (int j = (i + 1) & mask; vals[j] != null; j = (j + 1) & mask) {
            int home = slotOf(keys[j], mask);
            boolean stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!stays) {
                keys[i] = keys[j];
                vals[i] = vals[j];
                vals[j] = null;
                i = j;
            }
        }
        p.childSlots--;
        p.childCount--;
        if (p.childCount == 0) {
            p.childKeys = null;
            p.childVals = null;
        }
    }

    static void replaceChild(RadixNode p, RadixNode old, RadixNode neu) {
        int slot = findSlot(p, old.childKey);
        RadixNode c = p.childVals[slot];
        neu.hashNext = old.hashNext;
        old.hashNext = null;
        if (c == old) {
            p.childVals[slot] = neu;
            return;
        }
        while (c.hashNext != old) {
            c = c.hashNext;
        }
        c.hashNext = neu;
    }
}
