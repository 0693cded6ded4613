package io.hicache.events;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * The preallocated ring of block records between one cache's scheduler thread (the only producer) and the
 * publisher's thread (the only consumer), in arrays preallocated for every slot, so producing allocates nothing
 * and takes no lock. A record is either one page (its kind, tier, hash, parent hash and, stored pages only, its
 * tokens copied into the ring) or a <em>run</em>: consecutive pages of one node, as the hash before its first page,
 * the node's token array (never written after the node was made, see {@code RadixNode}), the offset of the run's
 * first token in it, and its page count. The consumer hashes a run's pages itself while it drains, so a node's
 * commit or removal costs the producer one record whatever the node's size. The consumer clears a run's array
 * reference once it has read it, so the ring keeps no evicted node's tokens reachable.
 *
 * <p>When the ring is full the producer either overwrites the oldest record ({@link KvEventsConfig.Overflow#DROP_OLDEST}:
 * the consumer notices it was lapped and counts what it lost) or waits for the consumer
 * ({@link KvEventsConfig.Overflow#WAIT}, for offline tools only). Each slot carries a stamp, the sequence of the
 * record in it, written last with release semantics and set to -1 while the slot is rewritten: the consumer
 * copies a record out and keeps it only if the stamp was the expected one before and after the copy (a
 * per-slot seqlock).
 *
 * <p>The two threads write no cache line in common outside the slots: the producer's cursor, the sequence it
 * publishes and the consumer's cursor are 128 bytes apart in one array, and the consumer's cursor and the run it is
 * expanding live in a padded object of their own. Without that, the consumer's per-page writes would take the
 * line holding the producer's cursor and the ring's array references on every page.
 */
final class EventRing {
    static final byte STORED = 1;
    static final byte REMOVED = 2;
    static final byte CLEARED = 3;
    /** A run of stored pages (expanded into {@link #STORED} pages by {@link #drain}). */
    static final byte STORED_RUN = 4;
    /** A run of removed pages (expanded into {@link #REMOVED} pages by {@link #drain}). */
    static final byte REMOVED_RUN = 5;
    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle REF = MethodHandles.arrayElementVarHandle(Object[].class);

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
    /** A run's token array (null otherwise), its first token's offset in it and its page count. */
    private final Object[] runTokens;
    private final int[] runOff;
    private final int[] runPages;

    /** Longs between two cursors in {@link #cursors}: 128 bytes, so no two share a line or its prefetched pair. */
    private static final int PAD = 16;
    /** Producer-owned: the next sequence to write. */
    private static final int TAIL = PAD;
    /** The producer's tail as the consumer may read it. */
    private static final int PUBLISHED = 2 * PAD;
    /** The consumer's next sequence, less one while a run is still being expanded (read by a WAIT producer). */
    private static final int HEAD = 3 * PAD;
    private final long[] cursors = new long[4 * PAD];
    /** Consumer-owned. */
    private final Reader reader = new Reader();
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
        this.runTokens = new Object[capacityPow2];
        this.runOff = new int[capacityPow2];
        this.runPages = new int[capacityPow2];
    }

    // ---------------------------------------------------------------- producer (one thread)

    /**
     * Claims the next slot and marks it being written; returns its index. Fill it with the setters, then
     * {@link #publish}. A WAIT ring parks here while full (until the consumer frees a slot or the ring closes).
     */
    int claim() {
        long t = cursors[TAIL];
        if (wait && t - head() >= capacity) {
            flush(); // the consumer can only free slots it can see
            while (t - head() >= capacity && !closed) {
                LockSupport.parkNanos(20_000);
            }
        }
        int i = (int) (t & mask);
        LONGS.setOpaque(stamp, i, -1L);
        VarHandle.storeStoreFence();
        return i;
    }

    void set(int i, byte k, int t, long h, long p) {
        kind[i] = k;
        tier[i] = (byte) t;
        hash[i] = h;
        parent[i] = p;
    }

    /**
     * Makes slot {@code i} a run of {@code pages} pages ({@link #STORED_RUN} or {@link #REMOVED_RUN}) whose
     * tokens are {@code nodeTokens[off, off + pages * pageSize)}, an array nobody writes again, hashed from
     * {@code before} (the hash of the page before the run's first, the seed for a first page).
     */
    void setRun(int i, byte k, int t, long before, int[] nodeTokens, int off, int pages) {
        kind[i] = k;
        tier[i] = (byte) t;
        parent[i] = before;
        runTokens[i] = nodeTokens;
        runOff[i] = off;
        runPages[i] = pages;
    }

    /** The token array the producer writes slot {@code i}'s tokens into, at {@code i * pageSize}. */
    int[] tokens() {
        return tokens;
    }

    /** Marks slot {@code i} written; the consumer sees it after the next {@link #flush()}. */
    void publish(int i) {
        long t = cursors[TAIL];
        LONGS.setRelease(stamp, i, t);
        cursors[TAIL] = t + 1;
    }

    /**
     * Makes every record published so far visible to the consumer: one shared write per hook call rather than per
     * record, so the two threads do not trade the cache line on every page.
     */
    void flush() {
        LONGS.setRelease(cursors, PUBLISHED, cursors[TAIL]);
    }

    private long head() {
        return (long) LONGS.getVolatile(cursors, HEAD);
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

    /** 64 bytes laid out before a subclass's fields, keeping them off the line of the object before in memory. */
    @SuppressWarnings("unused")
    abstract static class PadBefore {
        long p0, p1, p2, p3, p4, p5, p6, p7;
    }

    /** The consumer's next sequence and the run it is expanding: its kind, tier, tokens, next offset, pages left. */
    abstract static class ReaderFields extends PadBefore {
        long next;
        long pendingHash;
        int[] pendingTokens;
        int pendingOff;
        int pendingLeft;
        byte pendingKind;
        byte pendingTier;
    }

    /** {@link ReaderFields} with 64 bytes after them too (subclass fields are laid out after a superclass's). */
    @SuppressWarnings("unused")
    static final class Reader extends ReaderFields {
        long q0, q1, q2, q3, q4, q5, q6, q7;
    }

    /**
     * Copies up to {@code out.kind.length} page records into {@code out}, expanding runs into their pages (hashed
     * here); a run larger than the room left continues in the next call. {@code out.lost} is set to the records
     * the producer overwrote before they were read (a lost run counts once).
     *
     * @return page records copied
     */
    int drain(Drained out) {
        Reader r = reader;
        int n = expand(r, out, 0);
        long lost = 0;
        int max = out.kind.length;
        while (n < max) {
            long h = r.next;
            int i = (int) (h & mask);
            // first: a record published before this read has its stamp set
            long pt = (long) LONGS.getAcquire(cursors, PUBLISHED);
            if (pt <= h) {
                break; // nothing new
            }
            if (pt - h > capacity) {
                long skip = pt - capacity - h;
                lost += skip;
                r.next = h + skip;
                continue;
            }
            long s = (long) LONGS.getAcquire(stamp, i);
            if (s != h) {
                lost++; // being overwritten by a later lap
                r.next = h + 1;
                continue;
            }
            byte k = kind[i];
            byte t = tier[i];
            long p = parent[i];
            if (k == STORED_RUN || k == REMOVED_RUN) {
                Object ref = runTokens[i];
                int off = runOff[i];
                int pages = runPages[i];
                VarHandle.loadLoadFence();
                r.next = h + 1;
                if ((long) LONGS.getOpaque(stamp, i) != h || ref == null) {
                    lost++; // overwritten while read, or its reference cleared by an earlier lap's read
                    continue;
                }
                REF.compareAndSet(runTokens, i, ref, null); // keep no node's tokens reachable once read
                r.pendingKind = k == STORED_RUN ? STORED : REMOVED;
                r.pendingTier = t;
                r.pendingTokens = (int[]) ref;
                r.pendingOff = off;
                r.pendingLeft = pages;
                r.pendingHash = p;
                n = expand(r, out, n);
                continue;
            }
            out.kind[n] = k;
            out.tier[n] = t;
            out.hash[n] = hash[i];
            out.parent[n] = p;
            if (k == STORED) { // only a stored block's tokens are published
                System.arraycopy(tokens, i * pageSize, out.tokens, n * pageSize, pageSize);
            }
            VarHandle.loadLoadFence();
            r.next = h + 1;
            if ((long) LONGS.getOpaque(stamp, i) != h) {
                lost++;
                continue;
            }
            n++;
        }
        // a run being expanded is not yet read
        LONGS.setRelease(cursors, HEAD, r.pendingLeft > 0 ? r.next - 1 : r.next);
        out.count = n;
        out.lost = lost;
        return n;
    }

    /** Expands the pending run's pages into {@code out} from index {@code n} while there is room; the new count. */
    private int expand(Reader r, Drained out, int n) {
        int left = r.pendingLeft;
        if (left == 0) {
            return n;
        }
        int max = out.kind.length;
        int ps = pageSize;
        byte k = r.pendingKind;
        byte t = r.pendingTier;
        int[] src = r.pendingTokens;
        int off = r.pendingOff;
        long before = r.pendingHash;
        while (left > 0 && n < max) {
            long h = BlockHasher.page(before, src, off, ps);
            out.kind[n] = k;
            out.tier[n] = t;
            out.hash[n] = h;
            out.parent[n] = before;
            if (k == STORED) {
                System.arraycopy(src, off, out.tokens, n * ps, ps);
            }
            before = h;
            off += ps;
            left--;
            n++;
        }
        r.pendingHash = before;
        r.pendingOff = off;
        r.pendingLeft = left;
        if (left == 0) {
            r.pendingTokens = null;
        }
        return n;
    }

    /** True when the consumer has read everything published (a run's pages included). Any thread. */
    boolean empty() {
        return (long) LONGS.getAcquire(cursors, PUBLISHED) <= head();
    }

    /** Slots still holding a run's token array (tests: read runs must keep none). */
    int runReferences() {
        int n = 0;
        for (int i = 0; i < capacity; i++) {
            if (REF.getVolatile(runTokens, i) != null) {
                n++;
            }
        }
        return n;
    }

    /** Releases a producer parked in {@link #claim} (the publisher is closing). */
    void close() {
        closed = true;
    }
}
