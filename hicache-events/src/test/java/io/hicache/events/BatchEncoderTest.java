package io.hicache.events;

import org.junit.jupiter.api.Test;
import org.msgpack.core.MessageBufferPacker;
import org.msgpack.core.MessagePack;
import org.msgpack.core.MessageUnpacker;

import java.lang.management.ManagementFactory;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

    /** Every msgpack integer width, both signs, as hashes, parents, tokens and the rank. */
    private static final long[] EDGES = {0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295L, 4294967296L,
        Long.MAX_VALUE, -1, -32, -33, -128, -129, -32768, -32769, Integer.MIN_VALUE, Integer.MIN_VALUE - 1L,
        Long.MIN_VALUE};

    @Test
    void bytesAreMsgpackJavasSmallestEncodings() throws Exception {
        String longMedium = "x".repeat(40); // a str8 name
        EventRing.Drained d = new EventRing.Drained(2 * EDGES.length + 1, 1);
        for (long v : EDGES) {
            put(d, EventRing.STORED, 2, v, v + 2, (int) v); // parents never chain: one event per record
        }
        for (long v : EDGES) {
            put(d, EventRing.REMOVED, 1, v, 0);
        }
        put(d, EventRing.CLEARED, 0, 0, 0);

        byte[] ours = new BatchEncoder(longMedium, 1).encode(d, 0, d.count, SEED, 1.5e9, 70_000);

        MessageBufferPacker p = MessagePack.newDefaultBufferPacker();
        p.packArrayHeader(3).packDouble(1.5e9).packArrayHeader(EDGES.length + 2);
        for (long v : EDGES) {
            p.packArrayHeader(8).packString("BlockStored").packArrayHeader(1).packLong(v).packLong(v + 2);
            p.packArrayHeader(1).packLong(Integer.toUnsignedLong((int) v)).packInt(1).packNil();
            p.packString(longMedium).packNil();
        }
        p.packArrayHeader(3).packString("BlockRemoved").packArrayHeader(EDGES.length);
        for (long v : EDGES) {
            p.packLong(v);
        }
        p.packString("CPU");
        p.packArrayHeader(1).packString("AllBlocksCleared");
        p.packInt(70_000);
        assertThat(ours).isEqualTo(p.toByteArray());
    }

    @Test
    void encodingIntoTheReusedBufferAndKeepingForReplayAllocateNothingOnceWarm() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        EventRing.Drained d = new EventRing.Drained(64, 16);
        for (int i = 0; i < 64; i++) {
            int[] tokens = new int[16];
            java.util.Arrays.fill(tokens, i * 1000);
            put(d, i % 4 == 3 ? EventRing.REMOVED : EventRing.STORED, i % 3, 1000 + i, 999 + i, tokens);
        }
        BatchEncoder e = new BatchEncoder("DISK", 16);
        ReplayBuffer replay = new ReplayBuffer(100, KvEventsConfig.MAX_REPLAY_BYTES);
        Runnable batch = () -> {
            for (int to = 8; to <= 64; to += 8) { // batches of 8 to 64 records, as a drain hands them out
                int len = e.encodeInto(d, 0, to, SEED, 1.0, 0);
                replay.add(to, e.buffer(), len);
            }
        };
        for (int i = 0; i < 5_000; i++) {
            batch.run(); // warm up: JIT, the buffer's and the slots' growth
        }
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < 2_000; i++) {
            batch.run();
        }
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated).as("bytes allocated by 16,000 batches encoded and kept").isLessThan(1024);
    }

    @Test
    void replayKeepsExactlyTheLastBatchesWhateverTheirSizes() {
        java.util.Random rnd = new java.util.Random(42);
        int cap = 7;
        ReplayBuffer r = new ReplayBuffer(cap, KvEventsConfig.MAX_REPLAY_BYTES);
        java.util.ArrayDeque<byte[]> model = new java.util.ArrayDeque<>();
        for (int k = 0; k < 2_000; k++) {
            // mostly small batches, now and then one larger than the whole array so far, some empty
            int len = k % 97 == 0 ? 70_000 + rnd.nextInt(200_000) : k % 13 == 0 ? 0 : rnd.nextInt(20_000);
            byte[] batch = new byte[len];
            rnd.nextBytes(batch);
            byte[] src = java.util.Arrays.copyOf(batch, len + 3); // longer than the batch: only [0, len) is kept
            r.add(k, src, len);
            model.addLast(batch);
            if (model.size() > cap) {
                model.removeFirst();
            }
            assertThat(r.size()).isEqualTo(model.size());
            int i = 0;
            for (byte[] expected : model) {
                assertThat(r.seqAt(i)).isEqualTo(k - model.size() + 1 + i);
                assertThat(java.util.Arrays.copyOfRange(r.payloadAt(i), r.offsetAt(i), r.offsetAt(i) + r.lengthAt(i)))
                        .as("batch %d after add %d", k - model.size() + 1 + i, k).isEqualTo(expected);
                i++;
            }
        }
    }

    @Test
    void replayKeepsAtMostItsByteBoundAsOneRunOfTheNewestBatches() {
        java.util.Random rnd = new java.util.Random(7);
        int cap = 50;
        int maxBytes = 100_000;
        ReplayBuffer r = new ReplayBuffer(cap, maxBytes);
        java.util.List<byte[]> sent = new java.util.ArrayList<>();
        for (int k = 0; k < 3_000; k++) {
            // mostly small batches; now and then one near the bound, or past it (sent, not kept)
            int len = k % 101 == 0 ? maxBytes + 1 + rnd.nextInt(1000) : k % 17 == 0 ? 60_000 + rnd.nextInt(40_000)
                    : rnd.nextInt(8_000);
            byte[] batch = new byte[len];
            rnd.nextBytes(batch);
            sent.add(batch);
            r.add(k, batch, len);
            if (len > maxBytes) {
                assertThat(r.size()).as("after a batch over the bound").isZero();
                continue;
            }
            assertThat(r.size()).isBetween(1, cap);
            assertThat(r.seqAt(r.size() - 1)).as("the newest batch is kept").isEqualTo(k);
            long kept = 0;
            for (int i = 0; i < r.size(); i++) {
                long s = r.seqAt(i);
                assertThat(s).as("one run of sequences").isEqualTo(k - r.size() + 1 + i);
                kept += r.lengthAt(i);
                assertThat(r.payloadAt(i).length).isLessThanOrEqualTo(maxBytes);
                assertThat(java.util.Arrays.copyOfRange(r.payloadAt(i), r.offsetAt(i), r.offsetAt(i) + r.lengthAt(i)))
                        .as("batch %d after add %d", s, k).isEqualTo(sent.get((int) s));
            }
            assertThat(kept).isLessThanOrEqualTo(maxBytes);
        }
    }

    @Test
    void replayBoundsAreCheckedWhenBuilt() {
        assertThatThrownBy(() -> new ReplayBuffer(1, 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("replay buffer bytes");
        assertThatThrownBy(() -> KvEventsConfig.builder("tcp://*:1").replayBufferBytes(KvEventsConfig.MAX_REPLAY_BYTES + 1)
                .build()).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("replay buffer bytes");
        assertThat(KvEventsConfig.builder("tcp://*:1").build().replayBufferBytes()).isEqualTo(64 << 20);
    }
}
