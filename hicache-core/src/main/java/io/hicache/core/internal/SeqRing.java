package io.hicache.core.internal;

import java.util.Arrays;

/**
 * A growable FIFO of items in sequence order (backups, loads) with indexed access from the head, as the
 * agreement rounds need it. Power-of-two capacity; grows by doubling (off the steady state). Single-threaded:
 * owned by the scheduler thread.
 */
final class SeqRing<T> {
    private Object[] items;
    private int head;
    private int size;

    SeqRing(int initialCapacity) {
        items = new Object[Integer.highestOneBit(Math.max(2, initialCapacity) * 2 - 1)];
    }

    int size() {
        return size;
    }

    void add(T item) {
        if (size == items.length) {
            Object[] bigger = new Object[items.length * 2];
            for (int i = 0; i < size; i++) {
                bigger[i] = items[(head + i) & (items.length - 1)];
            }
            items = bigger;
            head = 0;
        }
        items[(head + size) & (items.length - 1)] = item;
        size++;
    }

    @SuppressWarnings("unchecked")
    T at(int i) {
        return (T) items[(head + i) & (items.length - 1)];
    }

    @SuppressWarnings("unchecked")
    T pop() {
        T item = (T) items[head];
        items[head] = null;
        head = (head + 1) & (items.length - 1);
        size--;
        return item;
    }

    void clear() {
        Arrays.fill(items, null);
        head = 0;
        size = 0;
    }
}
