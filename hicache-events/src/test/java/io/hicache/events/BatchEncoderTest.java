package io.hicache.events;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;

import static org.assertj.core.api.Assertions.assertThat;

class BatchEncoderTest {
    private static final long SEED = BlockHasher.root(0);
    private static final long PINNED_0 = 4084577068458281484L;
    private static final long PINNED_1 = 6629952165814774938L;

    private static void put(EventRing.Drained d, byte kind, int tier, long hash, long parent, int... tokens) {
        int n = d.count++;
        d.kind[n] = kind;
        d.tier[n] = (byte) tier;
        d.hash[n] = hash;
        d.parent[n] = parent;
        System.arraycopy(tokens, 0, d.tokens, n * d.pageSize, tokens.length);
    }

    private static String json(byte[] payload) throws Exception {
        try (MessageUnpacker u = MessagePack.newDefaultUnpacker(payload)) {
            String s = u.unpackValue().toJson();
            assertThat(u.hasNext()).as("nothing after the batch array").isFalse();
            return s;
        }
    }

    @Test
    void batchIsVllmsTaggedArraysWithChainsMergedPerMedium() throws Exception {
        EventRing.Drained d = new EventRing.Drained(16, 2);
        put(d, EventRing.STORED, 0, 11, SEED, 1, 2);
        put(d, EventRing.STORED, 0, 12, 11, 3, 4);
        put(d, EventRing.STORED, 1, 11, SEED, 1, 2);
        put(d, EventRing.REMOVED, 0, 12, 11);
        put(d, EventRing.REMOVED, 0, 11, SEED);
        put(d, EventRing.CLEARED, 0, 0, 0);
        put(d, EventRing.STORED, 2, 12, 11, 3, -1);

        byte[] payload = new BatchEncoder("DISK", 2).encode(d, 0, d.count, SEED, 12.5, 3);

        assertThat(json(payload)).isEqualTo("[12.5,["
                + "[\"BlockStored\",[11,12],null,[1,2,3,4],2,null,\"GPU\",null],"
                + "[\"BlockStored\",[11],null,[1,2],2,null,\"CPU\",null],"
                + "[\"BlockRemoved\",[12,11],\"GPU\"],"
                + "[\"AllBlocksCleared\"],"
                + "[\"BlockStored\",[12],11,[3,4294967295],2,null,\"DISK\",null]"
                + "],3]");
    }

    @Test
    void storedRunSplitsWhereTheChainBreaks() throws Exception {
        EventRing.Drained d = new EventRing.Drained(8, 1);
        put(d, EventRing.STORED, 0, 21, 20, 7);
        put(d, EventRing.STORED, 0, 31, 30, 8); // not 21's child: a second event with its own parent
        put(d, EventRing.REMOVED, 1, 21, 20);
        put(d, EventRing.REMOVED, 0, 31, 30); // another medium: another event

        byte[] payload = new BatchEncoder("redis", 1).encode(d, 0, d.count, SEED, 1.0, 0);

        assertThat(BatchEncoder.countEvents(d, 0, d.count)).isEqualTo(4);
        assertThat(json(payload)).isEqualTo("[1.0,["
                + "[\"BlockStored\",[21],20,[7],1,null,\"GPU\",null],"
                + "[\"BlockStored\",[31],30,[8],1,null,\"GPU\",null],"
                + "[\"BlockRemoved\",[21],\"CPU\"],"
                + "[\"BlockRemoved\",[31],\"GPU\"]"
                + "],0]");
    }

    @Test
    void decoderReadsWhatTheEncoderWrites() {
        EventRing.Drained d = new EventRing.Drained(4, 1);
        put(d, EventRing.STORED, 1, 5, SEED, 9);
        put(d, EventRing.REMOVED, 1, 5, SEED);
        KvEventBatch b = KvEventDecoder.decode(7, new BatchEncoder("DISK", 1).encode(d, 0, 2, SEED, 2.0, 1));

        assertThat(b.sequence()).isEqualTo(7);
        assertThat(b.dataParallelRank()).isEqualTo(1);
        assertThat(b.events()).hasSize(2);
        KvEvent.BlockStored s = (KvEvent.BlockStored) b.events().get(0);
        assertThat(s.blockHashes()).containsExactly(5L);
        assertThat(s.parentBlockHash()).isNull();
        assertThat(s.tokenIds()).containsExactly(9);
        assertThat(s.medium()).isEqualTo("CPU");
        assertThat(((KvEvent.BlockRemoved) b.events().get(1)).blockHashes()).containsExactly(5L);
    }

    @Test
    void decoderNamesTheBatchOfAMalformedPayload() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> KvEventDecoder.decode(4, new byte[] {(byte) 0x93, 1}))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("batch 4: ");
    }

    @Test
    void hashesChainAndAreNonNegativeAndStable() {
        int[] tokens = {1, 2, 3, 4, 5, 6};
        long[] chain = BlockHasher.chain(tokens, 6, 2, 0);
        assertThat(chain).hasSize(3);
        assertThat(chain[0]).isEqualTo(BlockHasher.page(BlockHasher.root(0), tokens, 0, 2));
        assertThat(chain[2]).isEqualTo(BlockHasher.page(chain[1], tokens, 4, 2));
        assertThat(java.util.Arrays.stream(chain).allMatch(h -> h >= 0)).isTrue();
        // the same page below another parent, or with another extra key (LoRA, tenant salt), hashes apart
        assertThat(BlockHasher.page(chain[0], tokens, 0, 2)).isNotEqualTo(chain[0]);
        assertThat(BlockHasher.chain(tokens, 6, 2, 42)[0]).isNotEqualTo(chain[0]);
        // pinned: the function is part of the wire contract (docs/EVENTS.md)
        assertThat(BlockHasher.chain(new int[] {0, 1, 2, 3}, 4, 2, 0)).containsExactly(PINNED_0, PINNED_1);
    }
}
