package io.hicache.cuda.simulated;

import java.util.Arrays;

/**
 * A binary min-heap of the streams whose head operation is in flight, keyed by the head's (end time,
 * sequence number): the next completion is at the top, ties in submission order. Guarded by the runtime's
 * lock; allocation-free once grown.
 */
final class StreamHeap {
    private SimStream[] heap = new SimStream[16];
    private int size;

    int size() {
        return size;
    }

    /** The head operation due first; the heap must not be empty. */
    SimOp peekOp() {
        return heap[0].queue.peekFirst();
    }

    /** When the next operation completes, or {@link Long#MAX_VALUE} when nothing is in flight. */
    long nextEndNs() {
        return size == 0 ? Long.MAX_VALUE : heap[0].queue.peekFirst().endNs;
    }

    /** True when something in flight completes at or before {@code tNs}. */
    boolean dueBy(long tNs) {
        return size > 0 && heap[0].queue.peekFirst().endNs <= tNs;
    }

    private static boolean before(SimStream a, SimStream b) {
        SimOp x = a.queue.peekFirst();
        SimOp y = b.queue.peekFirst();
        return x.endNs < y.endNs || (x.endNs == y.endNs && x.seq < y.seq);
    }

    void push(SimStream s) {
        if (size == heap.length) {
            heap = Arrays.copyOf(heap, size * 2);
        }
        int i = size++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            SimStream p = heap[parent];
            if (!before(s, p)) {
                break;
            }
            heap[i] = p;
            p.heapIndex = i;
            i = parent;
        }
        heap[i] = s;
        s.heapIndex = i;
    }

    SimStream pop() {
        SimStream top = heap[0];
        SimStream last = heap[--size];
        heap[size] = null;
        top.heapIndex = -1;
        if (size > 0) {
            int i = 0;
            while (true) {
                int child = 2 * i + 1;
                if (child >= size) {
                    break;
                }
                if (child + 1 < size && before(heap[child + 1], heap[child])) {
                    child++;
                }
                if (!before(heap[child], last)) {
                    break;
                }
                heap[i] = heap[child];
                heap[i].heapIndex = i;
                i = child;
            }
            heap[i] = last;
            last.heapIndex = i;
        }
        return top;
    }

    void clear() {
        Arrays.fill(heap, 0, size, null);
        size = 0;
    }
}
