package io.hicache.core.internal;

/**
 * One message from a forward thread to the submitter: "layer {@code layer} of kind {@code kind} of the forward on slot
 * {@code slotIndex} (generation {@code generation}) is stored", or "the forward ended". Stored in its slot's lane of
 * the {@link HookRing} as primitives and delivered to the submitter in one reused instance; never escapes the ring.
 */
final class HookEvent {
    static final int TARGET = 0;
    static final int DRAFT = 1;
    static final int END = 2;

    int slotIndex;
    long generation;
    int kind;
    int layer;
}
