package io.hicache.aeron;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * The agreement's messages: one fixed 80-byte little-endian frame per message.
 *
 * <pre>
 *  0 int  magic "HCAG"      4 byte version   5 byte type   6 byte channel   7 byte unused
 *  8 long group id         16 long token     24 int sender rank             28 int unused
 * 32 long epoch            40 long round     48 long a     56 long b     64 long c     72 long d
 * </pre>
 *
 * What a, b, c and d hold depends on the type (see {@link AgreementCore}). Stateless; thread-safe.
 */
final class Wire {
    static final int MAGIC = 0x47414348; // "HCAG" read little-endian
    static final byte VERSION = 1;
    static final int LENGTH = 80;

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
    static final int EPOCH_OFFSET = 32;
    static final int ROUND_OFFSET = 40;
    static final int A_OFFSET = 48;
    static final int B_OFFSET = 56;
    static final int C_OFFSET = 64;
    static final int D_OFFSET = 72;

    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private Wire() {
    }

    static void encode(MutableDirectBuffer buf, byte type, int channel, long groupId, long token, int sender,
                       long epoch, long round, long a, long b, long c, long d) {
        buf.putInt(MAGIC_OFFSET, MAGIC, LE);
        buf.putByte(VERSION_OFFSET, VERSION);
        buf.putByte(TYPE_OFFSET, type);
        buf.putByte(CHANNEL_OFFSET, (byte) channel);
        buf.putByte(7, (byte) 0);
        buf.putLong(GROUP_OFFSET, groupId, LE);
        buf.putLong(TOKEN_OFFSET, token, LE);
        buf.putInt(SENDER_OFFSET, sender, LE);
        buf.putInt(28, 0, LE);
        buf.putLong(EPOCH_OFFSET, epoch, LE);
        buf.putLong(ROUND_OFFSET, round, LE);
        buf.putLong(A_OFFSET, a, LE);
        buf.putLong(B_OFFSET, b, LE);
        buf.putLong(C_OFFSET, c, LE);
        buf.putLong(D_OFFSET, d, LE);
    }

    static boolean wellFormed(DirectBuffer buf, int offset, int length) {
        return length == LENGTH && buf.getInt(offset + MAGIC_OFFSET, LE) == MAGIC
            && buf.getByte(offset + VERSION_OFFSET) == VERSION;
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

    static long getLong(DirectBuffer buf, int offset, int field) {
        return buf.getLong(offset + field, LE);
    }
}
