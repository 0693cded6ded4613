package io.hicache.radix;

import java.util.Arrays;

/**
 * O(log n) eviction order for every policy but LRU: an indexed binary min-heap holding exactly the
 * tier's eligible leaves, ordered by the policy. Package-private; owned by the tree's thread.
 */
final class HeapQueue extends TierQueue {

    private final EvictionPolicy policy;
    private final RadixTree tree;
    private RadixNode[] heap = new RadixNode[64];
    private int size;
    private RadixNode[] stash = new RadixNode[16];
    private int stashSize;

    HeapQueue(EvictionPolicy policy, boolean device, RadixTree tree) {
        super(device);
        this.policy = policy;
        this.tree = tree;
    }

    private int idx(RadixNode n) {
        return device ? n.devHeapIdx : n.hostHeapIdx;
    }

    private void setIdx(RadixNode n, int i) {
        if (device) {
            n.devHeapIdx = i;
        } else {
            n.hostHeapIdx = i;
        }
    }

    /** @return negative if {@code a} is evicted before {@code b} */
    private int compare(RadixNode a, RadixNode b) {
        int c;
        switch (policy) {
            case LFU -> {
                c = Integer.compare(a.hitCount, b.hitCount);
                if (c == 0) {
                    c = Long.compare(a.lastAccessTick, b.lastAccessTick);
                }
            }
            case FIFO -> c = Long.compare(a.createSeq, b.createSeq);
            case FILO -> c = Long.compare(b.createSeq, a.createSeq);
            case MRU -> c = Long.compare(b.lastAccessTick, a.lastAccessTick);
            case PRIORITY -> {
                c = Integer.compare(a.priority, b.priority);
                if (c == 0) {
                    c = Long.compare(a.lastAccessTick, b.lastAccessTick);
                }
            }
            case SLRU -> {
                c = Boolean.compare(a.hitCount >= EvictionPolicy.SLRU_PROTECTED_HITS,
                        b.hitCount >= EvictionPolicy.SLRU_PROTECTED_HITS);
                if (c == 0) {
                    c = Long.compare(a.lastAccessTick, b.lastAccessTick);
                }
            }
            default -> c = Long.compare(a.lastAccessTick, b.lastAccessTick);
        }
        return c != 0 ? c : Long.compare(a.createSeq, b.createSeq);
    }

    private void add(RadixNode n) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        heap[size] = n;
        setIdx(n, size);
        size++;
        siftUp(size - 1);
    }

    private void removeAt(int i) {
        RadixNode n = heap[i];
        setIdx(n, -1);
        size--;
        if (i != size) {
            RadixNode last = heap[size];
            heap[i] = last;
            setIdx(last, i);
            heap[size] = null;
            siftUp(i);
            siftDown(idx(last));
        } else {
            heap[size] = null;
        }
    }

    private void siftUp(int i) {
        RadixNode n = heap[i];
        while (i > 0) {
            int p = (i - 1) >>> 1;
            RadixNode pn = heap[p];
            if (compare(n, pn) >= 0) {
                break;
            }
            heap[i] = pn;
            setIdx(pn, i);
            i = p;
        }
        heap[i] = n;
        setIdx(n, i);
    }

    private void siftDown(int i) {
        RadixNode n = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int c = 2 * i + 1;
            RadixNode cn = heap[c];
            int r = c + 1;
            if (r < size && compare(heap[r], cn) < 0) {
                c = r;
                cn = heap[r];
            }
            if (compare(n, cn) <= 0) {
                break;
            }
            heap[i] = cn;
            setIdx(cn, i);
            i = c;
        }
        heap[i] = n;
        setIdx(n, i);
    }

    @Override
    void onResident(RadixNode n, boolean fixAncestors) {
        // membership follows eligibility (refresh)
    }

    @Override
    void onNonResident(RadixNode n) {
        int i = idx(n);
        if (i >= 0) {
            removeAt(i);
        }
    }

    @Override
    void touch(RadixNode n) {
        int i = idx(n);
        if (i >= 0) {
            siftUp(i);
            siftDown(idx(n));
        }
    }

    @Override
    void rekey(RadixNode n) {
        touch(n);
    }

    @Override
    void onSplit(RadixNode suffix, RadixNode prefix) {
        // the prefix has a child, so it is not a leaf
    }

    @Override
    void refresh(RadixNode n, boolean eligible) {
        int i = idx(n);
        if (eligible) {
            if (i < 0) {
                add(n);
            }
        } else if (i >= 0) {
            removeAt(i);
        }
    }

    @Override
    void beginScan() {
        stashSize = 0;
    }

    @Override
    RadixNode nextCandidate() {
        if (size == 0) {
            return null;
        }
        RadixNode n = heap[0];
        removeAt(0);
        if (stashSize == stash.length) {
            stash = Arrays.copyOf(stash, stashSize * 2);
        }
        stash[stashSize++] = n;
        return n;
    }

    @Override
    void endScan() {
        for (int i = 0; i < stashSize; i++) {
            RadixNode n = stash[i];
            stash[i] = null;
            if (idx(n) < 0 && tree.eligible(n, device)) {
                add(n);
            }
        }
        stashSize = 0;
    }

    @Override
    void check(RadixTree tree, int expectedEligible) {
        for (int i = 0; i < size; i++) {
            RadixNode n = heap[i];
            if (idx(n) != i) {
                throw new IllegalStateException("heap index of " + n + " is " + idx(n) + ", expected " + i);
            }
            if (!tree.eligible(n, device)) {
                throw new IllegalStateException((device ? "device" : "host") + " heap holds ineligible " + n);
            }
            if (i > 0 && compare(heap[(i - 1) >>> 1], n) > 0) {
                throw new IllegalStateException("heap order violated at " + i);
            }
        }
        if (size != expectedEligible) {
            throw new IllegalStateException((device ? "device" : "host") + " heap has " + size + " nodes, expected "
                    + expectedEligible + " eligible leaves");
        }
    }
}
