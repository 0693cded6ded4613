package io.hicache.events;

import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * Encodes drained page records as one event batch in vLLM's wire format (a msgpack array
 * {@code [ts, [event, ...], data_parallel_rank]}). Consecutive records of one kind and medium become one event;
 * a stored run also needs each page's parent to be the page before it (one chain, one
 * {@code parent_block_hash}). Publisher thread only.
 */
final class BatchEncoder {
    private final MessageBufferPacker packer = MessagePack.newDefaultBufferPacker();
    private final String[] media;
    private final int blockSize;

    /**
     * @param storageMedium the medium name of the L3 tier ("DISK", or the store's name)
     * @param blockSize     tokens per block (the cache's page size)
     */
    BatchEncoder(String storageMedium, int blockSize) {
        this.media = new String[] {"GPU", "CPU", storageMedium};
        this.blockSize = blockSize;
    }

    /** Records {@code [from, to)} of {@code d} as a batch's payload. */
    byte[] encode(EventRing.Drained d, int from, int to, long seed, double tsSeconds, int dpRank) {
        try {
            packer.clear();
            packer.packArrayHeader(3);
            packer.packDouble(tsSeconds);
            packer.packArrayHeader(countEvents(d, from, to));
            int i = from;
            while (i < to) {
                int end = runEnd(d, i, to);
                byte k = d.kind[i];
                if (k == EventRing.CLEARED) {
                    packer.packArrayHeader(1);
                    packer.packString("AllBlocksCleared");
                } else if (k == EventRing.STORED) {
                    packer.packArrayHeader(8);
                    packer.packString("BlockStored");
                    packHashes(d, i, end);
                    if (d.parent[i] == seed) {
                        packer.packNil();
                    } else {
                        packer.packLong(d.parent[i]);
                    }
                    int ps = d.pageSize;
                    packer.packArrayHeader((end - i) * ps);
                    for (int t = i * ps; t < end * ps; t++) {
                        packer.packLong(Integer.toUnsignedLong(d.tokens[t]));
                    }
                    packer.packInt(blockSize);
                    packer.packNil(); // lora_id: LoRA is in the hash (the extra key)
                    packer.packString(media[d.tier[i]]);
                    packer.packNil(); // lora_name
                } else {
                    packer.packArrayHeader(3);
                    packer.packString("BlockRemoved");
                    packHashes(d, i, end);
                    packer.packString(media[d.tier[i]]);
                }
                i = end;
            }
            packer.packInt(dpRank);
            return packer.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException("msgpack encoding into memory failed", e);
        }
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

    private void packHashes(EventRing.Drained d, int from, int to) throws IOException {
        packer.packArrayHeader(to - from);
        for (int j = from; j < to; j++) {
            packer.packLong(d.hash[j]);
        }
    }
}
