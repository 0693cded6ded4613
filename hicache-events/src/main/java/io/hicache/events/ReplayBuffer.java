package io.hicache.events;

/**
 * The last batches sent, by sequence, for the replay endpoint: at most {@code capacity} batches and
 * {@code maxBytes} payload bytes; the oldest go first when a new one would pass either bound, and a batch larger
 * than {@code maxBytes} is not kept (nor is anything before it). The kept sequences always increase and end at the
 * newest kept (one run, but for the numbers the publisher leaves unused after lost records). Publisher thread only.
 *
 * <p>The payloads are copied back to back into one byte array used as a ring (a batch that does not fit before the
 * array's end starts again at 0); when the batches kept and a new one do not fit, the array grows by half (or to
 * what is needed), never past {@code maxBytes}, and the kept batches are compacted into it; at that size the
 * oldest batches make room instead. So keeping a batch allocates nothing once the array has grown to the stream's
 * needs or to {@code maxBytes}, whatever the batches' sizes. A payload's bytes stay unchanged for as long as it is
 * kept.
 */
final class ReplayBuffer {
    private final long[] seq;
    private final int[] offset;
    private final int[] length;
    /** The batch was put at 0 because it did not fit before the array's end. */
    private final boolean[] wrappedTo0;
    private final int maxBytes;
    private byte[] bytes;
    /** Payload bytes kept. */
    private long live;
    private int start;
    private int size;
    /** Where the next batch goes when it fits there. */
    private int writePos;
    /** The kept bytes run past the array's end and continue at 0 (up to {@link #writePos}). */
    private boolean wrapped;
    /** The last {@link #place} put the batch at 0 after the kept ones (the kept bytes now wrap). */
    private boolean placedAtZero;

    ReplayBuffer(int capacity, int maxBytes) {
        if (capacity < 1) {
            throw new IllegalArgumentException("replay buffer must hold at least 1 batch, got " + capacity);
        }
        if (maxBytes < 1 || maxBytes > KvEventsConfig.MAX_REPLAY_BYTES) {
            throw new IllegalArgumentException("replay buffer bytes must be in [1, " + KvEventsConfig.MAX_REPLAY_BYTES
                    + "], got " + maxBytes);
        }
        this.maxBytes = maxBytes;
        this.bytes = new byte[Math.min(1 << 16, maxBytes)];
        seq = new long[capacity];
        offset = new int[capacity];
        length = new int[capacity];
        wrappedTo0 = new boolean[capacity];
    }

    /**
     * Keeps a copy of {@code src[0, len)} as batch {@code s} (sequences increase with each call), dropping the oldest
     * batches as the bounds need; a batch over {@code maxBytes} empties the buffer and is not kept.
     */
    void add(long s, byte[] src, int len) {
        if (len > maxBytes) {
            while (size > 0) {
                dropOldest();
            }
            return;
        }
        int cap = seq.length;
        if (size == cap) {
            dropOldest();
        }
        while (size > 0 && live + len > maxBytes) {
            dropOldest();
        }
        int at = place(len);
        while (at < 0) {
            if (bytes.length < maxBytes) {
                at = grow(len); // compacts from 0: placedAtZero stays false, as a failed place leaves it
            } else {
                dropOldest(); // at the size bound: the oldest make room (at worst all, and it fits at 0)
                at = place(len);
            }
        }
        if (placedAtZero) {
            wrapped = true;
        }
        int i = (start + size) % cap;
        System.arraycopy(src, 0, bytes, at, len);
        seq[i] = s;
        offset[i] = at;
        length[i] = len;
        wrappedTo0[i] = placedAtZero;
        writePos = at + len;
        live += len;
        size++;
    }

    /**
     * Where a batch of {@code len} goes in the array as it is, or -1 when it does not fit; sets
     * {@link #placedAtZero}.
     */
    private int place(int len) {
        placedAtZero = false;
        if (size == 0) {
            writePos = 0;
            wrapped = false;
            return len <= bytes.length ? 0 : -1;
        }
        if (!wrapped) {
            if (writePos + len <= bytes.length) {
                return writePos;
            }
            placedAtZero = len <= offset[start];
            return placedAtZero ? 0 : -1;
        }
        return writePos + len <= offset[start] ? writePos : -1;
    }

    private void dropOldest() {
        live -= length[start];
        start = (start + 1) % seq.length;
        size--;
        if (size == 0 || wrappedTo0[start]) {
            wrapped = false; // the kept bytes no longer run past the end
            wrappedTo0[start] = false;
        }
    }

    /** A larger array with the kept batches compacted from 0; returns where a batch of {@code len} goes. */
    private int grow(int len) {
        long need = live + len; // <= maxBytes: add dropped the oldest first
        byte[] next = new byte[(int) Math.min(maxBytes, Math.max(need, bytes.length + (long) (bytes.length >> 1)))];
        int pos = 0;
        for (int k = 0; k < size; k++) {
            int j = (start + k) % seq.length;
            System.arraycopy(bytes, offset[j], next, pos, length[j]);
            offset[j] = pos;
            wrappedTo0[j] = false;
            pos += length[j];
        }
        bytes = next;
        wrapped = false;
        return pos;
    }

    int size() {
        return size;
    }

    /** The i-th oldest batch's sequence. */
    long seqAt(int i) {
        return seq[(start + i) % seq.length];
    }

    /** The array holding the i-th oldest batch's payload, at {@link #offsetAt(int)} (until the next add). */
    byte[] payloadAt(int i) {
        return bytes;
    }

    /** Where the i-th oldest batch's payload starts in {@link #payloadAt(int)}. */
    int offsetAt(int i) {
        return offset[(start + i) % seq.length];
    }

    /** The i-th oldest batch's payload length. */
    int lengthAt(int i) {
        return length[(start + i) % seq.length];
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
