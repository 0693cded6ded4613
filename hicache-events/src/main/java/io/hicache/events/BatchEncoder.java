package io.hicache.events;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Encodes drained page records as one event batch in vLLM's wire format (a msgpack array
 * {@code [ts, [event, ...], data_parallel_rank]}). Consecutive records of one kind and medium become one event;
 * a stored run also needs each page's parent to be the page before it (one chain, one
 * {@code parent_block_hash}). Publisher thread only.
 *
 * <p>Writes msgpack itself, into one buffer it reuses (grown to the largest batch seen), choosing the same
 * smallest encodings as msgpack-java's packer, so encoding allocates nothing in the steady state; the strings it
 * writes are encoded once, here.
 */
final class BatchEncoder {
    private static final byte[] BLOCK_STORED = str("BlockStored");
    private static final byte[] BLOCK_REMOVED = str("BlockRemoved");
    private static final byte[] ALL_CLEARED = str("AllBlocksCleared");

    private final byte[][] media;
    private final int blockSize;
    private byte[] buf = new byte[4096];
    private int len;

    /**
     * @param storageMedium the medium name of the L3 tier ("DISK", or the store's name)
     * @param blockSize     tokens per block (the cache's page size)
     */
    BatchEncoder(String storageMedium, int blockSize) {
        this.media = new byte[][] {str("GPU"), str("CPU"), str(storageMedium)};
        this.blockSize = blockSize;
    }

    /** Records {@code [from, to)} of {@code d} as a new array holding the batch's payload (tests and tools). */
    byte[] encode(EventRing.Drained d, int from, int to, long seed, double tsSeconds, int dpRank) {
        return Arrays.copyOf(buf, encodeInto(d, from, to, seed, tsSeconds, dpRank));
    }

    /**
     * Records {@code [from, to)} of {@code d} as a batch's payload in {@link #buffer()}, valid until the next call.
     *
     * @return the payload's length
     */
    int encodeInto(EventRing.Drained d, int from, int to, long seed, double tsSeconds, int dpRank) {
        len = 0;
        arrayHeader(3);
        float64(tsSeconds);
        arrayHeader(countEvents(d, from, to));
        int i = from;
        while (i < to) {
            int end = runEnd(d, i, to);
            byte k = d.kind[i];
            if (k == EventRing.CLEARED) {
                arrayHeader(1);
                raw(ALL_CLEARED);
            } else if (k == EventRing.STORED) {
                int ps = d.pageSize;
                arrayHeader(8);
                raw(BLOCK_STORED);
                hashes(d, i, end);
                if (d.parent[i] == seed) {
                    nil();
                } else {
                    int64(d.parent[i]);
                }
                arrayHeader((end - i) * ps);
                int[] tokens = d.tokens;
                for (int t = i * ps; t < end * ps; t++) {
                    int64(Integer.toUnsignedLong(tokens[t]));
                }
                int64(blockSize);
                nil(); // lora_id: LoRA is in the hash (the extra key)
                raw(media[d.tier[i]]);
                nil(); // lora_name
            } else {
                arrayHeader(3);
                raw(BLOCK_REMOVED);
                hashes(d, i, end);
                raw(media[d.tier[i]]);
            }
            i = end;
        }
        int64(dpRank);
        return len;
    }

    /** The buffer {@link #encodeInto} writes (replaced when it grows). */
    byte[] buffer() {
        return buf;
    }

    /** Events that {@link #encode} writes for records {@code [from, to)}. */
    static int countEvents(EventRing.Drained d, int from, int to) {
        int n = 0;
        for (int i = from; i < to; i = runEnd(d, i, to)) {
            n++;
        }
        return n;
    }

    /** The end of the event that starts at record {@code i}. */
    static int runEnd(EventRing.Drained d, int i, int to) {
        byte k = d.kind[i];
        if (k == EventRing.CLEARED) {
            return i + 1;
        }
        int j = i + 1;
        while (j < to && d.kind[j] == k && d.tier[j] == d.tier[i]
                && (k == EventRing.REMOVED || d.parent[j] == d.hash[j - 1])) {
            j++;
        }
        return j;
    }

    private void hashes(EventRing.Drained d, int from, int to) {
        arrayHeader(to - from);
        for (int j = from; j < to; j++) {
            int64(d.hash[j]);
        }
    }

    // ---------------------------------------------------------------- msgpack, smallest form first (as msgpack-java)

    private void ensure(int more) {
        if (len + more > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(len + more, 2 * buf.length));
        }
    }

    private void arrayHeader(int n) {
        ensure(5);
        if (n < 16) {
            buf[len++] = (byte) (0x90 | n);
        } else if (n < 65536) {
            buf[len++] = (byte) 0xdc;
            put16(n);
        } else {
            buf[len++] = (byte) 0xdd;
            put32(n);
        }
    }

    private void nil() {
        ensure(1);
        buf[len++] = (byte) 0xc0;
    }

    private void float64(double v) {
        ensure(9);
        buf[len++] = (byte) 0xcb;
        put64(Double.doubleToRawLongBits(v));
    }

    private void int64(long v) {
        ensure(9);
        byte[] b = buf;
        if (v >= 0) {
            if (v < 128) {
                b[len++] = (byte) v;
            } else if (v < 256) {
                b[len++] = (byte) 0xcc;
                b[len++] = (byte) v;
            } else if (v < 65536) {
                b[len++] = (byte) 0xcd;
                put16((int) v);
            } else if (v < (1L << 32)) {
                b[len++] = (byte) 0xce;
                put32((int) v);
            } else {
                b[len++] = (byte) 0xcf;
                put64(v);
            }
        } else if (v >= -32) {
            b[len++] = (byte) v;
        } else if (v >= -128) {
            b[len++] = (byte) 0xd0;
            b[len++] = (byte) v;
        } else if (v >= -32768) {
            b[len++] = (byte) 0xd1;
            put16((int) v);
        } else if (v >= Integer.MIN_VALUE) {
            b[len++] = (byte) 0xd2;
            put32((int) v);
        } else {
            b[len++] = (byte) 0xd3;
            put64(v);
        }
    }

    private void raw(byte[] encoded) {
        ensure(encoded.length);
        System.arraycopy(encoded, 0, buf, len, encoded.length);
        len += encoded.length;
    }

    private void put16(int v) {
        buf[len++] = (byte) (v >>> 8);
        buf[len++] = (byte) v;
    }

    private void put32(int v) {
        buf[len++] = (byte) (v >>> 24);
        buf[len++] = (byte) (v >>> 16);
        buf[len++] = (byte) (v >>> 8);
        buf[len++] = (byte) v;
    }

    private void put64(long v) {
        put32((int) (v >>> 32));
        put32((int) v);
    }

    /** {@code s} as a msgpack string (str8 from 32 bytes, as msgpack-java writes it). */
    static byte[] str(String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        int n = u.length;
        int h = n < 32 ? 1 : n < 256 ? 2 : n < 65536 ? 3 : 5;
        byte[] out = new byte[h + n];
        if (n < 32) {
            out[0] = (byte) (0xa0 | n);
        } else if (n < 256) {
            out[0] = (byte) 0xd9;
            out[1] = (byte) n;
        } else if (n < 65536) {
            out[0] = (byte) 0xda;
            out[1] = (byte) (n >>> 8);
            out[2] = (byte) n;
        } else {
            out[0] = (byte) 0xdb;
            for (int i = 0; i < 4; i++) {
                out[1 + i] = (byte) (n >>> (24 - 8 * i));
            }
        }
        System.arraycopy(u, 0, out, h, n);
        return out;
    }
}
