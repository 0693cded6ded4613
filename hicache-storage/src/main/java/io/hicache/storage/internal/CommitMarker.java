package io.hicache.storage.internal;

import io.hicache.storage.PageKey;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The 64-byte commit marker every backend appends to a page's data, written last: magic {@code HCL3PAGE},
 * data length (8 bytes), CRC-32C of the data (4), padding length (4: zero bytes between the data and the
 * marker, so an O_DIRECT writer can end the object on a block boundary), the 32-byte page key, end magic
 * {@code HCL3END\0}; integers little-endian. An object is {@code data ‖ padding ‖ marker}; it is valid
 * only with a marker whose magics match, whose key is the object's key, whose lengths add up to the
 * object's size, and whose CRC matches the data. Stateless; thread-safe.
 */
public final class CommitMarker {
    /** Bytes of a marker. */
    public static final int BYTES = 64;
    private static final long MAGIC = 0x4547_4150_334C_4348L; // "HCL3PAGE" little-endian
    private static final long END_MAGIC = 0x0044_4E45_334C_4348L; // "HCL3END\0" little-endian

    private CommitMarker() {
    }

    /** Writes a marker without padding at {@code dst}'s position (advancing it). */
    public static void write(ByteBuffer dst, PageKey key, long dataBytes, int crc32c) {
        write(dst, key, dataBytes, crc32c, 0);
    }

    /** Writes a marker at {@code dst}'s position (advancing it), recording {@code padBytes} of padding before it. */
    public static void write(ByteBuffer dst, PageKey key, long dataBytes, int crc32c, int padBytes) {
        ByteBuffer b = dst.order() == ByteOrder.LITTLE_ENDIAN ? dst : dst.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int start = b.position();
        b.putLong(MAGIC).putLong(dataBytes).putInt(crc32c).putInt(padBytes);
        for (int i = 0; i < PageKey.BYTES; i++) {
            b.put(key.byteAt(i));
        }
        b.putLong(END_MAGIC);
        if (b != dst) {
            dst.position(start + BYTES);
        }
    }

    /**
     * Checks the marker at absolute offset {@code at} of {@code m} for an object of {@code objectBytes}
     * (data plus marker). Returns null when valid, else why not. {@code expectedDataBytes < 0} accepts any
     * data length consistent with the object's size. The CRC is checked by the caller ({@link #crc}).
     */
    public static String check(ByteBuffer m, int at, PageKey key, long objectBytes, long expectedDataBytes) {
        if (objectBytes < BYTES) {
            return "truncated object (" + objectBytes + " bytes, no commit marker)";
        }
        ByteBuffer b = m.order() == ByteOrder.LITTLE_ENDIAN ? m : m.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.getLong(at) != MAGIC || b.getLong(at + 56) != END_MAGIC) {
            return "object without a valid commit marker (truncated or foreign)";
        }
        for (int i = 0; i < PageKey.BYTES; i++) {
            if (b.get(at + 24 + i) != key.byteAt(i)) {
                return "object whose marker names another key";
            }
        }
        long data = b.getLong(at + 8);
        int pad = b.getInt(at + 20);
        if (pad < 0 || data < 0 || data + pad + BYTES != objectBytes) {
            return "object whose size (" + objectBytes + " bytes) disagrees with its marker (" + data + " data bytes)";
        }
        if (expectedDataBytes >= 0 && data != expectedDataBytes) {
            return "object of " + data + " data bytes where a page of " + expectedDataBytes + " was expected";
        }
        return null;
    }

    /** The CRC-32C recorded in the marker at absolute offset {@code at}. */
    public static int crc(ByteBuffer m, int at) {
        ByteBuffer b = m.order() == ByteOrder.LITTLE_ENDIAN ? m : m.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        return b.getInt(at + 16);
    }
}
