package io.hicache.aeron;

import org.agrona.DirectBuffer;

/**
 * Where an {@link AgreementCore} sends its frames: to every other rank of the group. Best effort: a frame may be
 * lost, delayed, duplicated or reordered; the protocol retransmits. Called on the core's owning thread.
 */
@FunctionalInterface
public interface Outbox {
    /**
     * Offers one frame to every other rank.
     *
     * @return true if the frame was handed to the transport (it may still be lost); false if it was refused now
     *     (back pressure, not connected), which the protocol treats as a loss
     */
    boolean send(DirectBuffer buffer, int offset, int length);
}
