package io.hicache.core.internal;

/**
 * One message on the hook ring from the forward thread to the submitter: "layer {@code layer} of kind
 * {@code kind} of forward {@code slot} (generation {@code generation}) is stored", or "the forward ended".
 * Preallocated by the Disruptor ring and overwritten in place; never escapes the ring.
 */
final class HookEvent {
    static final int TARGET = 0;
    static final int DRAFT = 1;
    static final int END = 2;

    ForwardSlot slot;
    long generation;
    int kind;
    int layer;
}
