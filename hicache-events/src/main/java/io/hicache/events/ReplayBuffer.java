package io.hicache.events;

/**
 * The last {@code capacity} batches sent, by sequence, for the replay endpoint. The oldest is dropped when full.
 * Publisher thread only.
 */
final class ReplayBuffer {
    private final long[] seq;
    private final byte[][] payload;
    private int start;
    private int size;

    ReplayBuffer(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("replay buffer must hold at least 1 batch, got " + capacity);
        }
        seq = new long[capacity];
        payload = new byte[capacity][];
    }

    void add(long s, byte[] p) {
        int cap = seq.length;
        int i;
        if (size == cap) {
            i = start;
            start = (start + 1) % cap;
        } else {
            i = (start + size) % cap;
            size++;
        }
        seq[i] = s;
        payload[i] = p;
    }

    int size() {
        return size;
    }

    /** The i-th oldest batch's sequence. */
    long seqAt(int i) {
        return seq[(start + i) % seq.length];
    }

    /** The i-th oldest batch's payload. */
    byte[] payloadAt(int i) {
        return payload[(start + i) % seq.length];
    }

    /** Index of the first batch with sequence {@code >= from} ({@link #size()} when none). */
    int indexOf(long from) {
        int lo = 0;
        int hi = size;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (seqAt(mid) < from) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
