package io.hicache.events;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The preallocated ring of block records between one cache's scheduler thread (the only producer) and the
 * publisher's thread (the only consumer). A record is one page: its kind, tier, hash, parent hash and (stored
 * pages only) tokens, all in primitive arrays, so producing allocates nothing and takes no lock.
 *
 * <p>When the ring is full the producer either overwrites the oldest record ({@link KvEventsConfig.Overflow#DROP_OLDEST}:
 * the consumer notices it was lapped and counts what it lost) or waits for the consumer
 * ({@link KvEventsConfig.Overflow#WAIT}, for offline tools only). Each slot carries a stamp, the sequence of the
 * record in it, written last with release semantics and set to -1 while the slot is rewritten: the consumer
 * copies a record out and keeps it only if the stamp was the expected one before and after the copy (a
 * per-slot seqlock).
 */
final class EventRing {
    static final byte STORED = 1;
    static final byte REMOVED = 2;
    static final byte CLEARED = 3;
    private static final VarHandle STAMP = MethodHandles.arrayElementVarHandle(long[].class);

    final int capacity;
    final int pageSize;
    private final int mask;
    private final boolean wait;
    private final long[] stamp;
    private final byte[] kind;
    private final byte[] tier;
    private final long[] hash;
    private final long[] parent;
    private final int[] tokens;

    /** Producer-owned: the next sequence to write. */
    private long tail;
    /** The producer's tail as the consumer may read it. */
    private final AtomicLong published = new AtomicLong();
    /** The consumer's next sequence (read by a WAIT producer). */
    private final AtomicLong head = new AtomicLong();
    private volatile boolean closed;

    EventRing(int capacityPow2, int pageSize, boolean waitWhenFull) {
        if (capacityPow2 < 2 || Integer.bitCount(capacityPow2) != 1) {
            throw new IllegalArgumentException("ring capacity must be a power of two >= 2, got " + capacityPow2);
        }
        this.capacity = capacityPow2;
        this.mask = capacityPow2 - 1;
        this.pageSize = pageSize;
        this.wait = waitWhenFull;
        this.stamp = new long[capacityPow2];
        java.util.Arrays.fill(stamp, Long.MIN_VALUE);
        this.kind = new byte[capacityPow2];
        this.tier = new byte[capacityPow2];
        this.hash = new long[capacityPow2];
        this.parent = new long[capacityPow2];
        this.tokens = new int[Math.multiplyExact(capacityPow2, pageSize)];
    }

    // ---------------------------------------------------------------- producer (one thread)

    /**
     * Claims the next slot and marks it being written; returns its index. Fill it with the setters, then
     * {@link #publish}. A WAIT ring parks here while full (until the consumer frees a slot or the ring closes).
     */
    int claim() {
        long t = tail;
        if (wait && t - head.get() >= capacity) {
            flush(); // the consumer can only free slots it can see
            while (t - head.get() >= capacity && !closed) {
                LockSupport.parkNanos(20_000);
            }
        }
        int i = (int) (t & mask);
        STAMP.setOpaque(stamp, i, -1L);
        VarHandle.storeStoreFence();
        return i;
    }

    void set(int i, byte k, int t, long h, long p) {
        kind[i] = k;
        tier[i] = (byte) t;
        hash[i] = h;
        parent[i] = p;
    }

    /** The token array the producer writes slot {@code i}'s tokens into, at {@code i * pageSize}. */
    int[] tokens() {
        return tokens;
    }

    /** Marks slot {@code i} written; the consumer sees it after the next {@link #flush()}. */
    void publish(int i) {
        long t = tail;
        STAMP.setRelease(stamp, i, t);
        tail = t + 1;
    }

    /**
     * Makes every record published so far visible to the consumer: one shared write per hook call rather than per
     * record, so the two threads do not trade the cache line on every page.
     */
    void flush() {
        published.setRelease(tail);
    }

    // ---------------------------------------------------------------- consumer (one thread)

    /** The records one {@link #drain} copied out, in primitive arrays the consumer owns. */
    static final class Drained {
        final byte[] kind;
        final byte[] tier;
        final long[] hash;
        final long[] parent;
        final int[] tokens;
        final int pageSize;
        int count;
        long lost;

        Drained(int max, int pageSize) {
            this.kind = new byte[max];
            this.tier = new byte[max];
            this.hash = new long[max];
            this.parent = new long[max];
            this.tokens = new int[max * pageSize];
            this.pageSize = pageSize;
        }
    }

    private long next;

    /**
     * Copies up to {@code out.kind.length} records into {@code out}; {@code out.lost} is set to the records the
     * producer overwrote before they were read.
     *
     * @return records copied
     */
    int drain(Drained out) {
        int n = 0;
        long lost = 0;
        int max = out.kind.length;
        while (n < max) {
            long h = next;
            int i = (int) (h & mask);
            long pt = published.getAcquire(); // first: a record published before this read has its stamp set
            if (pt <= h) {
                break; // nothing new
            }
            if (pt - h > capacity) {
                long skip = pt - capacity - h;
                lost += skip;
                next = h + skip;
                continue;
            }
            long s = (long) STAMP.getAcquire(stamp, i);
            if (s != h) {
                lost++; // being overwritten by a later lap
                next = h + 1;
                continue;
            }
            byte k = kind[i];
            out.kind[n] = k;
            out.tier[n] = tier[i];
            out.hash[n] = hash[i];
            out.parent[n] = parent[i];
            if (k == STORED) { // only a stored block's tokens are published
                System.arraycopy(tokens, i * pageSize, out.tokens, n * pageSize, pageSize);
            }
            VarHandle.loadLoadFence();
            if ((long) STAMP.getOpaque(stamp, i) != h) {
                lost++;
                next = h + 1;
                continue;
            }
            n++;
            next = h + 1;
        }
        head.setRelease(next);
        out.count = n;
        out.lost = lost;
        return n;
    }

    /** True when the consumer has read everything published. */
    boolean empty() {
        return published.getAcquire() <= next;
    }

    /** Releases a producer parked in {@link #claim} (the publisher is closing). */
    void close() {
        closed = true;
    }
}
