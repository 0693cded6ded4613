package io.hicache.core.internal;

import java.util.Arrays;

/**
 * (device page, host page) pairs of one copy batch, in reusable parallel arrays that grow by doubling and are
 * never shrunk, so steady-state batches allocate nothing. Owned by one thread at a time (handed off with the
 * batch it belongs to).
 */
final class PagePairs {
    int[] device;
    int[] host;
    int count;

    PagePairs(int initialCapacity) {
        device = new int[initialCapacity];
        host = new int[initialCapacity];
    }

    /** Makes room for {@code n} pairs in all, keeping those already there. */
    void ensure(int n) {
        if (n > device.length) {
            int cap = Math.max(n, device.length * 2);
            device = Arrays.copyOf(device, cap);
            host = Arrays.copyOf(host, cap);
        }
    }

    /** Appends one pair (call {@link #ensure} first). */
    void add(int devicePage, int hostPage) {
        device[count] = devicePage;
        host[count] = hostPage;
        count++;
    }

    /** Appends {@code n} pairs copied from {@code other} starting at {@code from}. */
    void addFrom(PagePairs other, int from, int n) {
        ensure(count + n);
        System.arraycopy(other.device, from, device, count, n);
        System.arraycopy(other.host, from, host, count, n);
        count += n;
    }
}
