package io.hicache.events;

/**
 * The last {@code capacity} batches sent, by sequence, for the replay endpoint. The oldest is dropped when full.
 * Publisher thread only.
 *
 * <p>The payloads are copied back to back into one byte array used as a ring (a batch that does not fit before the
 * array's end starts again at 0); when the batches kept and a new one do not fit, the array grows by half (or to
 * what is needed) and the kept batches are compacted into it. So keeping a batch allocates nothing once the array
 * has grown to the stream's needs, whatever the batches' sizes; the array stays within about twice the largest
 * total of {@code capacity} consecutive batches seen (as the old one array per batch held at most that total). A payload's bytes stay unchanged for as long as it is kept.
 */
final class ReplayBuffer {
    private final long[] seq;
    private final int[] offset;
    private final int[] length;
    /** The batch was put at 0 because it did not fit before the array's end. */
    private final boolean[] wrappedTo0;
    private byte[] bytes = new byte[1 << 16];
    private int start;
    private int size;
    /** Where the next batch goes when it fits there. */
    private int writePos;
    /** The kept bytes run past the array's end and continue at 0 (up to {@link #writePos}). */
    private boolean wrapped;

    ReplayBuffer(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("replay buffer must hold at least 1 batch, got " + capacity);
        }
        seq = new long[capacity];
        offset = new int[capacity];
        length = new int[capacity];
        wrappedTo0 = new boolean[capacity];
    }

    /** Keeps a copy of {@code src[0, len)} as batch {@code s}, dropping the oldest when full. */
    void add(long s, byte[] src, int len) {
        int cap = seq.length;
        if (size == cap) {
            dropOldest();
        }
        int i = (start + size) % cap;
        boolean toZero = false;
        int at;
        if (size == 0) {
            writePos = 0;
            wrapped = false;
            at = len <= bytes.length ? 0 : -1;
        } else if (!wrapped) {
            if (writePos + len <= bytes.length) {
                at = writePos;
            } else if (len <= offset[start]) {
                at = 0;
                toZero = true;
            } else {
                at = -1;
            }
        } else {
            at = writePos + len <= offset[start] ? writePos : -1;
        }
        if (at < 0) {
            at = grow(len);
            toZero = false;
        }
        if (toZero) {
            wrapped = true;
        }
        System.arraycopy(src, 0, bytes, at, len);
        seq[i] = s;
        offset[i] = at;
        length[i] = len;
        wrappedTo0[i] = toZero;
        writePos = at + len;
        size++;
    }

    private void dropOldest() {
        start = (start + 1) % seq.length;
        size--;
        if (size == 0 || wrappedTo0[start]) {
            wrapped = false; // the kept bytes no longer run past the end
            wrappedTo0[start] = false;
        }
    }

    /** A larger array with the kept batches compacted from 0; returns where a batch of {@code len} goes. */
    private int grow(int len) {
        long live = 0;
        for (int k = 0; k < size; k++) {
            live += lengthAt(k);
        }
        long need = live + len;
        if (need > Integer.MAX_VALUE - 16) {
            throw new IllegalStateException("replay buffer would exceed 2 GiB (" + need + " bytes kept)");
        }
        byte[] next = new byte[(int) Math.max(need, Math.min(Integer.MAX_VALUE - 16, bytes.length + (bytes.length >> 1)))];
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
