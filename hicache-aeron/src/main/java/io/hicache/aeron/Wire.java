package io.hicache.aeron;

import io.hicache.core.cp.RankAgreement;
import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * The agreement's messages: one little-endian frame per message, a 64-byte header and {@code width} words.
 *
 * <pre>
 *  0 int  magic "HCAG"      4 byte version   5 byte type   6 byte channel   7 byte unused
 *  8 long group id         16 long token     24 int sender rank             28 int width (words that follow)
 * 32 long epoch            40 long round     48 long failed-rank mask       56 long first degraded round
 * 64 long words[width]     (a contribution, or the decided result of {@code round})
 * </pre>
 *
 * What the round, mask, first degraded round and words hold depends on the type (see {@link AgreementCore}); a frame
 * is at most {@link #MAX_LENGTH} bytes, below one Aeron MTU. Stateless; thread-safe.
 */
final class Wire {
    static final int MAGIC = 0x47414348; // "HCAG" read little-endian
    static final byte VERSION = 2;
    static final int HEADER = 64;
    static final int MAX_LENGTH = HEADER + 8 * RankAgreement.MAX_WORDS;

    static final byte CONTRIBUTION = 1;
    static final byte RESULT = 2;
    static final byte PREPARE = 3;
    static final byte PROMISE = 4;
    static final byte NEW_EPOCH = 5;
    static final byte LEAVE = 6;

    static final int MAGIC_OFFSET = 0;
    static final int VERSION_OFFSET = 4;
    static final int TYPE_OFFSET = 5;
    static final int CHANNEL_OFFSET = 6;
    static final int GROUP_OFFSET = 8;
    static final int TOKEN_OFFSET = 16;
    static final int SENDER_OFFSET = 24;
    static final int WIDTH_OFFSET = 28;
    static final int EPOCH_OFFSET = 32;
    static final int ROUND_OFFSET = 40;
    static final int MASK_OFFSET = 48;
    static final int FROM_OFFSET = 56;

    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private Wire() {
    }

    /** Encodes a frame with {@code words[0, width)}; returns its length. */
    static int encode(MutableDirectBuffer buf, byte type, int channel, long groupId, long token, int sender,
                      long epoch, long round, long mask, long from, long[] words, int width) {
        buf.putInt(MAGIC_OFFSET, MAGIC, LE);
        buf.putByte(VERSION_OFFSET, VERSION);
        buf.putByte(TYPE_OFFSET, type);
        buf.putByte(CHANNEL_OFFSET, (byte) channel);
        buf.putByte(7, (byte) 0);
        buf.putLong(GROUP_OFFSET, groupId, LE);
        buf.putLong(TOKEN_OFFSET, token, LE);
        buf.putInt(SENDER_OFFSET, sender, LE);
        buf.putInt(WIDTH_OFFSET, width, LE);
        buf.putLong(EPOCH_OFFSET, epoch, LE);
        buf.putLong(ROUND_OFFSET, round, LE);
        buf.putLong(MASK_OFFSET, mask, LE);
        buf.putLong(FROM_OFFSET, from, LE);
        for (int i = 0; i < width; i++) {
            buf.putLong(HEADER + 8 * i, words[i], LE);
        }
        return HEADER + 8 * width;
    }

    static boolean wellFormed(DirectBuffer buf, int offset, int length) {
        if (length < HEADER || buf.getInt(offset + MAGIC_OFFSET, LE) != MAGIC
            || buf.getByte(offset + VERSION_OFFSET) != VERSION) {
            return false;
        }
        int width = buf.getInt(offset + WIDTH_OFFSET, LE);
        return width >= 0 && width <= RankAgreement.MAX_WORDS && length == HEADER + 8 * width;
    }

    static byte type(DirectBuffer buf, int offset) {
        return buf.getByte(offset + TYPE_OFFSET);
    }

    static int channel(DirectBuffer buf, int offset) {
        return buf.getByte(offset + CHANNEL_OFFSET);
    }

    static int sender(DirectBuffer buf, int offset) {
        return buf.getInt(offset + SENDER_OFFSET, LE);
    }

    static int width(DirectBuffer buf, int offset) {
        return buf.getInt(offset + WIDTH_OFFSET, LE);
    }

    static long getLong(DirectBuffer buf, int offset, int field) {
        return buf.getLong(offset + field, LE);
    }

    /** Copies the frame's words into {@code dst[0, width)}. */
    static void words(DirectBuffer buf, int offset, long[] dst, int width) {
        for (int i = 0; i < width; i++) {
            dst[i] = buf.getLong(offset + HEADER + 8 * i, LE);
        }
    }
}
