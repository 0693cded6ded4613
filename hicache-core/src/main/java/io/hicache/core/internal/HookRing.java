package io.hicache.core.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The channel from the forward threads to the submitter: one single-producer, single-consumer lane of hook messages
 * per forward slot, plus the two flags a hook reads besides its slot's: whether the controller closed, and how many
 * forwards could not publish their END (lane full; the submitter then scans the slots for {@link
 * ForwardSlot#endPendingGeneration}).
 *
 * <p><b>Threads.</b> Single-producer by construction: a slot's lane is published to only by the handle that holds the
 * slot, and a slot is handed to the next forward only after its handle ended or was invalidated ({@link SlotPool}).
 * So a hook already inside {@code cudaEventRecord} when its forward's lease is revoked, which has passed its
 * revocation check and still publishes, publishes into its own slot's lane, concurrently with the next forward's
 * thread on another slot's lane: neither can disturb or delay the other (the submitter drops the stale message by its
 * generation). The engine may hand a handle to another thread with happens-before. One consumer, the submitter.
 * {@link #tryPublish} never blocks and allocates nothing: with the lane full it returns false.
 */
final class HookRing {
    private static final VarHandle PUBLISHED;
    private static final VarHandle CONSUMED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PUBLISHED = l.findVarHandle(Lane.class, "published", long.class);
            CONSUMED = l.findVarHandle(Lane.class, "consumed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final Lane[] lanes;
    private final int capacity;
    /** The submitter's scratch message, filled from a lane for each delivery. */
    private final HookEvent delivered = new HookEvent();
    private final AtomicLong pendingEnds = new AtomicLong();
    private int nextLane;
    private volatile boolean closed;

    /**
     * @param slots forward slots (lane {@code i} carries the messages of the slot of index {@code i})
     * @param capacity entries per lane, a power of two
     */
    HookRing(int slots, int capacity) {
        if (capacity < 1 || Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("hook lane capacity " + capacity + " must be a power of two");
        }
        this.capacity = capacity;
        this.lanes = new Lane[slots];
        for (int i = 0; i < slots; i++) {
            lanes[i] = new Lane(capacity);
        }
    }

    /** Lane size for forwards of {@code messagesPerForward} messages each, with room to spare. */
    static int capacityFor(int messagesPerForward) {
        long want = Math.max(4L, messagesPerForward) * 2;
        return Integer.highestOneBit((int) Math.min(1 << 30, want) * 2 - 1);
    }

    /** Entries of each slot's lane. */
    int capacity() {
        return capacity;
    }

    /** Forward thread of {@code slot}'s handle: publishes one message, or returns false at once when its lane is full. */
    boolean tryPublish(ForwardSlot slot, long generation, int kind, int layer) {
        Lane lane = lanes[slot.index];
        long seq = lane.producerNext;
        if (seq - lane.consumedCache >= capacity) {
            lane.consumedCache = (long) CONSUMED.getAcquire(lane);
            if (seq - lane.consumedCache >= capacity) {
                return false;
            }
        }
        int i = (int) seq & (capacity - 1);
        lane.generations[i] = generation;
        lane.kinds[i] = kind;
        lane.layers[i] = layer;
        lane.producerNext = seq + 1;
        PUBLISHED.setRelease(lane, seq + 1);
        return true;
    }

    /** What the submitter does with each message; return false to stop delivering for this call. */
    interface Handler {
        boolean onHook(HookEvent event);
    }

    /**
     * Submitter: delivers the published messages, each lane in its order, lanes in turn from the one after where the
     * last call stopped, until {@code handler} returns false. The event is reused: read it in {@code onHook}.
     */
    void poll(Handler handler) {
        int n = lanes.length;
        for (int k = 0; k < n; k++) {
            int li = nextLane;
            nextLane = li + 1 == n ? 0 : li + 1;
            Lane lane = lanes[li];
            long published = (long) PUBLISHED.getAcquire(lane);
            long seq = lane.consumerNext;
            while (seq < published) {
                int i = (int) seq & (capacity - 1);
                HookEvent e = delivered;
                e.slotIndex = li;
                e.generation = lane.generations[i];
                e.kind = lane.kinds[i];
                e.layer = lane.layers[i];
                seq++;
                lane.consumerNext = seq;
                CONSUMED.setRelease(lane, seq);
                if (!handler.onHook(e)) {
                    nextLane = li; // this lane may have more: start there next time
                    return;
                }
            }
        }
    }

    /** Forward thread: an END could not be published; the submitter finds it by scanning. */
    void endPending() {
        pendingEnds.incrementAndGet();
    }

    /** Submitter: count of ENDs that went through {@link #endPending} so far. */
    long pendingEnds() {
        return pendingEnds.get();
    }

    /** Scheduler at close: later hooks throw without touching CUDA. */
    void close() {
        closed = true;
    }

    boolean closed() {
        return closed;
    }

    /** One slot's messages: written by its handle's thread, read by the submitter. */
    private static final class Lane {
        final long[] generations;
        final int[] kinds;
        final int[] layers;
        /** Producer-owned: the next sequence to publish, and its last view of {@link #consumed}. */
        long producerNext;
        long consumedCache;
        /** Consumer-owned: the next sequence to deliver. */
        long consumerNext;
        /** Written with release by the producer: messages below it are published. */
        @SuppressWarnings("unused")
        volatile long published;
        /** Written with release by the consumer: entries below it may be overwritten. */
        @SuppressWarnings("unused")
        volatile long consumed;

        Lane(int capacity) {
            generations = new long[capacity];
            kinds = new int[capacity];
            layers = new int[capacity];
        }
    }
}
