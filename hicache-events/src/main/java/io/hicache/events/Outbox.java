package io.hicache.events;

import org.zeromq.ZMQ;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The publisher thread's last step for each batch: numbers it (from 0, +1 per batch), keeps a copy for replay and
 * sends {@code [topic, sequence, payload]} on the PUB socket without waiting. Publisher thread only.
 *
 * <p>The payload comes from the encoder's reused buffer and the replay copy goes into a reused slot, so the only
 * allocation left per batch is ZeroMQ's: JeroMQ copies each frame it is given with an offset into a message of its
 * own (it has no send that tells when it is done with the caller's bytes, so handing it a buffer that is reused
 * later could corrupt a message still queued for a slow subscriber). Those copies die young, where the
 * earlier one array per batch, kept for replay, lived long enough to be copied by every young collection.
 */
final class Outbox {
    private static final VarHandle BIG_ENDIAN_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    /** The batches kept for the replay endpoint, or null without one (nobody could ask for them). */
    final ReplayBuffer replay;
    private final ZMQ.Socket pub;
    private final byte[] topic;
    private final byte[] seqBytes = new byte[8];
    private long nextSeq;

    /**
     * @param pub           the PUB socket (used by this thread only)
     * @param topic         the first frame of every message (sent as is: never changed)
     * @param keep          whether to keep batches for replay (there is a replay endpoint)
     * @param replayBatches batches kept for replay
     * @param replayBytes   payload bytes kept for replay at most
     */
    Outbox(ZMQ.Socket pub, byte[] topic, boolean keep, int replayBatches, int replayBytes) {
        this.pub = pub;
        this.topic = topic;
        this.replay = keep ? new ReplayBuffer(replayBatches, replayBytes) : null;
    }

    /** Writes {@code v} into {@code dst[0, 8)} big-endian, as the wire carries sequences. */
    static void putLong(byte[] dst, long v) {
        BIG_ENDIAN_LONG.set(dst, 0, v);
    }

    /**
     * Leaves one sequence number unused: neither sent nor kept, so every subscriber sees a gap after it that no
     * replay fills (the records a full queue overwrote are gone; the gap tells routers their view may be stale).
     */
    void skip() {
        nextSeq++;
    }

    /**
     * Numbers, keeps (with a replay endpoint) and sends the payload {@code payload[0, len)}.
     *
     * @return false if ZeroMQ refused a frame (the batch is still numbered, and kept with a replay endpoint)
     */
    boolean send(byte[] payload, int len) {
        long seq = nextSeq++;
        if (replay != null) {
            replay.add(seq, payload, len);
        }
        putLong(seqBytes, seq);
        return pub.sendMore(topic)
                && pub.send(seqBytes, 0, 8, ZMQ.SNDMORE)
                && pub.send(payload, 0, len, ZMQ.DONTWAIT);
    }
}
