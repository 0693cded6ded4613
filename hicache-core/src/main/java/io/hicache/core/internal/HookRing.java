package io.hicache.core.internal;

import com.lmax.disruptor.EventPoller;
import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The channel from the forward thread to the submitter: a single-producer Disruptor ring of {@link HookEvent}s,
 * plus the two flags a hook reads besides its slot's: whether the controller closed, and how many forwards could
 * not publish their END (ring full; the submitter then scans the slots for {@link
 * ForwardSlot#endPendingGeneration}).
 *
 * <p><b>Threads.</b> One producer at a time: hooks of all handles of a controller must not run concurrently (the
 * engine's forward thread, or threads that hand the forward over with happens-before). A handle whose slot was
 * revoked stops publishing at its next hook, so a stalled forward thread and its successor are ordered through the
 * slot's release and reuse. {@link #tryPublish} never blocks: with the ring full it returns false.
 */
final class HookRing {
    private final RingBuffer<HookEvent> ring;
    private final EventPoller<HookEvent> poller;
    private final AtomicLong pendingEnds = new AtomicLong();
    private volatile boolean closed;

    HookRing(int capacity) {
        this.ring = RingBuffer.createSingleProducer(HookEvent::new, capacity);
        this.poller = ring.newPoller();
        ring.addGatingSequences(poller.getSequence());
    }

    /** Ring size for {@code slots} forwards of {@code messagesPerForward} messages each, with room to spare. */
    static int capacityFor(int slots, int messagesPerForward) {
        long want = Math.max(4L, (long) slots * messagesPerForward) * 2;
        return Integer.highestOneBit((int) Math.min(1 << 30, want) * 2 - 1);
    }

    EventPoller<HookEvent> poller() {
        return poller;
    }

    int capacity() {
        return ring.getBufferSize();
    }

    /** Forward thread: publishes one message, or returns false at once when the ring is full. */
    boolean tryPublish(ForwardSlot slot, long generation, int kind, int layer) {
        long seq;
        try {
            seq = ring.tryNext();
        } catch (InsufficientCapacityException full) {
            return false; // a preallocated singleton: nothing allocated
        }
        try {
            HookEvent e = ring.get(seq);
            e.slot = slot;
            e.generation = generation;
            e.kind = kind;
            e.layer = layer;
        } finally {
            ring.publish(seq);
        }
        return true;
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
}
