package io.hicache.events;

import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.radix.spi.PendingBackup;
import org.junit.jupiter.api.Test;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KvEventPublisherTest {
    private static final String ANY = "tcp://127.0.0.1:*";

    private static KvEventsConfig.Builder config() {
        return KvEventsConfig.builder(ANY).replayEndpoint(ANY).closeFlushMillis(200);
    }

    /** Waits for a condition the publisher's thread makes true (bounded; fails the test past 60 s, a bound only a broken publisher reaches). */
    private static void await(BooleanSupplier c) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!c.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition not met in 60 s").isLessThan(deadline);
            LockSupport.parkNanos(1_000_000);
        }
    }

    /** A replay client as {@link KvEventSubscriber} makes one (its handshake bounded: see HANDSHAKE_MILLIS). */
    private static ZMQ.Socket dealer(ZContext ctx) {
        ZMQ.Socket s = ctx.createSocket(SocketType.DEALER);
        s.setHandshakeIvl(KvEventSubscriber.HANDSHAKE_MILLIS);
        return s;
    }

    private static byte[] seq(long s) {
        return ByteBuffer.allocate(8).putLong(s).array();
    }

    /** Reads replies to one request: [seq, payload] pairs up to the end marker. */
    private static List<Long> readReplay(ZMQ.Socket dealer, List<byte[]> payloads) {
        List<Long> seqs = new ArrayList<>();
        while (true) {
            byte[] empty = dealer.recv(0);
            assertThat(empty).isEmpty();
            long s = ByteBuffer.wrap(dealer.recv(0)).getLong();
            byte[] payload = dealer.recv(0);
            assertThat(dealer.hasReceiveMore()).isFalse();
            if (s == -1) {
                assertThat(payload).isEmpty();
                return seqs;
            }
            seqs.add(s);
            payloads.add(payload);
        }
    }

    @Test
    void replayAnswersFromTheStartSequenceThenTheEndMarker() {
        try (KvEventPublisher p = KvEventPublisher.open(config().maxBlocksPerBatch(1).build());
             ZContext ctx = new ZContext()) {
            TierEventCollector c = p.collector(1, 2);
            c.onDeviceInserted(new int[] {5, 6, 7}, 0, 3, 0, null); // 3 pages, one batch each
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            assertThat(p.stats().batchesSent()).isEqualTo(3);

            ZMQ.Socket dealer = dealer(ctx);
            dealer.setReceiveTimeOut(60_000);
            dealer.connect(p.replayEndpoint());
            dealer.sendMore(new byte[0]);
            dealer.send(seq(1), 0);
            List<byte[]> payloads = new ArrayList<>();
            assertThat(readReplay(dealer, payloads)).containsExactly(1L, 2L);
            KvEventBatch b = KvEventDecoder.decode(1, payloads.get(0));
            assertThat(b.dataParallelRank()).isEqualTo(2);
            KvEvent.BlockStored s = (KvEvent.BlockStored) b.events().get(0);
            assertThat(s.tokenIds()).containsExactly(6);
            assertThat(s.parentBlockHash()).isEqualTo(BlockHasher.chain(new int[] {5}, 1, 1, 0)[0]);

            dealer.sendMore(new byte[0]);
            dealer.send(seq(99), 0); // past the end: only the end marker
            assertThat(readReplay(dealer, new ArrayList<>())).isEmpty();
            assertThat(p.stats().replayRequests()).isEqualTo(2);
        }
    }

    /**
     * flush() returns only after the batch drained last has been sent. The publisher's thread drains a record (the
     * queue reads empty) a moment before it counts the batch sent; a flush that looked then must not return.
     */
    @Test
    void flushReturnsOnlyAfterTheLastDrainedBatchIsSent() {
        try (KvEventPublisher p = KvEventPublisher.open(KvEventsConfig.builder(ANY).maxBlocksPerBatch(1).build())) {
            TierEventCollector c = p.collector(1, 0);
            int[] tokens = IntStream.range(0, 4).toArray();
            for (int round = 1; round <= 2_000; round++) {
                c.onDeviceInserted(tokens, 0, 4, 0, null); // 4 pages, one batch each
                assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
                assertThat(p.stats().batchesSent()).as("round %d", round).isEqualTo(4L * round);
            }
        }
    }

    @Test
    void malformedReplayRequestsAreCountedAndGetNoReply() {
        try (KvEventPublisher p = KvEventPublisher.open(config().build()); ZContext ctx = new ZContext()) {
            p.collector(1, 0).onDeviceInserted(new int[] {1}, 0, 1, 0, null);
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            ZMQ.Socket dealer = dealer(ctx);
            dealer.setReceiveTimeOut(60_000);
            dealer.connect(p.replayEndpoint());
            dealer.sendMore(new byte[0]);
            dealer.send(new byte[3], 0);                 // start sequence of 3 bytes
            dealer.sendMore(new byte[] {1});
            dealer.send(seq(0), 0);                      // a non-empty delimiter
            dealer.sendMore(new byte[0]);
            dealer.sendMore(seq(0));
            dealer.send(new byte[1], 0);                 // an extra frame
            dealer.sendMore(new byte[0]);
            dealer.send(seq(-5), 0);                     // a negative start
            dealer.send(seq(0), 0);                      // no delimiter at all
            await(() -> p.stats().replayMalformed() == 5);

            // the publisher still serves, and the first thing this client receives answers the good request
            dealer.sendMore(new byte[0]);
            dealer.send(seq(0), 0);
            assertThat(readReplay(dealer, new ArrayList<>())).containsExactly(0L);
            assertThat(p.stats().replayRequests()).isEqualTo(1);
        }
    }

    @Test
    void aReplayClientThatDisappearsCostsNothing() {
        try (KvEventPublisher p = KvEventPublisher.open(config().build()); ZContext ctx = new ZContext()) {
            TierEventCollector c = p.collector(1, 0);
            c.onDeviceInserted(new int[] {1, 2, 3}, 0, 3, 0, null);
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            ZMQ.Socket gone = dealer(ctx);
            gone.setReceiveTimeOut(60_000);
            gone.setLinger(0);
            gone.connect(p.replayEndpoint());
            gone.sendMore(new byte[0]);
            gone.send(seq(0), 0);
            assertThat(gone.recv(0)).isEmpty(); // the answer started
            gone.close(); // and the client goes away without reading the rest
            assertThat(p.stats().replayRequests()).isEqualTo(1);

            c.onDeviceInserted(new int[] {4}, 0, 1, 0, null);
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            ZMQ.Socket next = dealer(ctx);
            next.setReceiveTimeOut(60_000);
            next.connect(p.replayEndpoint());
            next.sendMore(new byte[0]);
            next.send(seq(0), 0);
            assertThat(readReplay(next, new ArrayList<>())).containsExactly(0L, 1L);
        }
    }

    /** A one-layer MHA layout of 8 pages of 4 tokens. */
    private static io.hicache.core.memory.DeviceKvLayout.Builder smallLayout() {
        return io.hicache.core.memory.DeviceKvLayout.builder(io.hicache.core.memory.AttentionKind.MHA).layerCount(1)
                .pageSizeTokens(4).bytesPerTokenPerBuffer(4).pageCount(8);
    }

    /** A cache in INVOKER mode on {@code gpu} over {@link #smallLayout()} packed at {@code base}. */
    private static io.hicache.core.HiCache smallCache(io.hicache.cuda.simulated.SimulatedCudaRuntime gpu, long base) {
        return io.hicache.core.HiCache.builder().runtime(gpu).targetLayout(smallLayout().packedFrom(base).build())
                .hostPages(8).threadingMode(io.hicache.core.ThreadingMode.INVOKER).clock(gpu::nowNs).leaseNs(0)
                .build();
    }

    @Test
    void aCacheMovesToANewPublisherOnceTheOldOneClosed() {
        io.hicache.cuda.simulated.SimulatedCudaRuntime gpu = new io.hicache.cuda.simulated.SimulatedCudaRuntime();
        long base = gpu.deviceMalloc(smallLayout().packedBytes());
        try (io.hicache.core.HiCache cache = smallCache(gpu, base)) {
            try (KvEventPublisher unused = KvEventPublisher.open(config().build())) {
                assertThatThrownBy(() -> unused.attach(cache, -1)).isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("rank must be >= 0, got -1");
            }
            KvEventPublisher first = KvEventPublisher.attach(cache, config().build());
            assertThatThrownBy(() -> first.attach(cache, 1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("already publishes");
            first.close();
            try (KvEventPublisher second = KvEventPublisher.attach(cache, config().dataParallelRank(3).build())) {
                cache.insert(new int[] {1, 2, 3, 4}, 0, 4, new int[] {0}, 0);
                assertThat(second.flush(10, TimeUnit.SECONDS)).isTrue();
                assertThat(second.stats().blocksSent()).isEqualTo(1);
                assertThat(first.stats().blocksSent()).isZero();
            }
        } finally {
            gpu.deviceFree(base);
            gpu.close();
        }
    }

    @Test
    void twoCachesCannotPublishAsOneDataParallelRank() {
        io.hicache.cuda.simulated.SimulatedCudaRuntime gpu = new io.hicache.cuda.simulated.SimulatedCudaRuntime();
        long bytes = smallLayout().packedBytes();
        long base = gpu.deviceMalloc(2 * bytes);
        try (io.hicache.core.HiCache a = smallCache(gpu, base);
             io.hicache.core.HiCache b = smallCache(gpu, base + bytes);
             KvEventPublisher p = KvEventPublisher.open(config().build())) {
            p.attach(a, 2);
            // one stream per data-parallel instance: a second cache as rank 2 would interleave two caches' blocks
            assertThatThrownBy(() -> p.attach(b, 2)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("data-parallel rank 2 already publishes on this publisher");
            assertThat(b.tierListener()).isNull();
            p.attach(b, 3);
            a.insert(new int[] {1, 2, 3, 4}, 0, 4, new int[] {0}, 0);
            b.insert(new int[] {5, 6, 7, 8}, 0, 4, new int[] {0}, 0);
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            assertThat(p.stats().blocksSent()).isEqualTo(2);
        } finally {
            gpu.deviceFree(base);
            gpu.close();
        }
    }

    @Test
    void anEndpointThatCannotBeBoundFailsWithOneLineNamingIt() {
        try (KvEventPublisher first = KvEventPublisher.open(config().build())) {
            String taken = first.endpoint();
            assertThatThrownBy(() -> KvEventPublisher.open(KvEventsConfig.builder(taken).build()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("KV events endpoint " + taken)
                    .hasMessageContaining("in use") // the reason in words, not JeroMQ's "Errno 48"
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n").doesNotContain("Errno"));
            assertThatThrownBy(() -> KvEventPublisher.open(config().replayEndpoint(first.replayEndpoint()).build()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("replay endpoint " + first.replayEndpoint());
            assertThatThrownBy(() -> KvEventPublisher.open(KvEventsConfig.builder("nonsense").build()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nonsense");
            for (String bad : new String[] {"tcp://127.0.0.1", "tcp://127.0.0.1:x", "tcp://127.0.0.1:70000"}) {
                assertThatThrownBy(() -> KvEventPublisher.open(KvEventsConfig.builder(bad).build()))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("cannot bind KV events endpoint " + bad
                                + ": expected tcp://HOST:PORT with PORT a number from 0 to 65535 (or * for any free port)");
            }
            // an address this host does not have (TEST-NET-1): JeroMQ calls it "in use" too
            assertThatThrownBy(() -> KvEventPublisher.open(KvEventsConfig.builder("tcp://192.0.2.1:5557").build()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tcp://192.0.2.1:5557")
                    .hasMessageNotContaining("in use");
        }
    }

    @Test
    void aFullQueueDropsAndCountsButNeverBlocksTheProducer() {
        int pages = 50_000;
        int[] tokens = IntStream.range(0, pages).toArray();
        KvEventPublisher p = KvEventPublisher.open(config().queueCapacity(4).build());
        try {
            TierEventCollector c = p.collector(1, 0);
            for (int i = 0; i < pages; i += 1000) {
                c.onDeviceInserted(tokens, i, 1000, 0, null); // returns although the queue holds 4
            }
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
        } finally {
            p.close();
        }
        KvEventStats s = p.stats();
        assertThat(s.blocksSent() + s.blocksDropped()).isEqualTo(pages);
        assertThat(s.blocksDropped()).isPositive();
    }

    @Test
    void lostRecordsLeaveASequenceGapThatNoReplayFills() {
        int pages = 8_000;
        int[] tokens = IntStream.range(0, pages).toArray();
        try (KvEventPublisher p = KvEventPublisher.open(config().queueCapacity(4).build())) {
            TierEventCollector c = p.collector(1, 0);
            for (int i = 0; i < pages; i += 1000) {
                c.onDeviceInserted(tokens, i, 1000, 0, null);
            }
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            c.onDeviceInserted(tokens, 0, 1, 0, null); // a batch after every loss: the last gap shows too
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();
            KvEventStats s = p.stats();
            assertThat(s.blocksDropped()).isPositive();

            KvEventTally tally = new KvEventTally();
            KvEventSubscriber.Result r;
            try (KvEventSubscriber sub = new KvEventSubscriber(p.endpoint(), p.replayEndpoint(), "")) {
                r = sub.run(Duration.ofMillis(300), Duration.ofSeconds(20), tally::accept);
            }
            assertThat(r.replayAnswered()).isTrue();
            assertThat(r.contiguous()).isFalse();
            assertThat(r.batches()).isEqualTo(s.batchesSent());
            assertThat(r.lastSequence()).isGreaterThan(s.batchesSent() - 1);
            assertThat(tally.stored().get("GPU")).isEqualTo(s.blocksSent());
        }
    }

    @Test
    void withoutAReplayEndpointNoBatchIsKept() {
        for (boolean replay : new boolean[] {false, true}) {
            KvEventsConfig.Builder b = KvEventsConfig.builder(ANY).closeFlushMillis(200);
            try (KvEventPublisher p = KvEventPublisher.open((replay ? b.replayEndpoint(ANY) : b).build())) {
                TierEventCollector c = p.collector(1, 0);
                c.onDeviceInserted(new int[] {1, 2, 3}, 0, 3, 0, null);
                assertThat(p.flush(60, TimeUnit.SECONDS)).isTrue();
                assertThat(p.stats().batchesSent()).isPositive();
                assertThat((long) p.batchesKept()).as("replay endpoint %s", replay)
                        .isEqualTo(replay ? p.stats().batchesSent() : 0);
            }
        }
    }

    @Test
    void closeStopsRecordingAndSendsWhatWasQueued() {
        KvEventPublisher p = KvEventPublisher.open(config().build());
        TierEventCollector c = p.collector(1, 0);
        c.onDeviceInserted(new int[] {1, 2}, 0, 2, 0, null);
        p.close();
        c.onDeviceInserted(new int[] {3}, 0, 1, 0, null); // after close: ignored
        assertThat(p.stats().blocksSent() + p.stats().blocksDropped()).isEqualTo(2);
        assertThatThrownBy(() -> p.collector(1, 0)).isInstanceOf(IllegalStateException.class);
    }

    // ---------------------------------------------------------------- end to end over tcp

    @Test
    void treeTransitionsReachASubscriberInOrderWithChainedHashes() {
        try (KvEventPublisher p = KvEventPublisher.open(config().build())) {
            RadixTree tree = RadixTree.builder().pageSize(2).build();
            tree.tierObserver(p.collector(2, 0));
            int[] a = {1, 2, 3, 4, 5, 6, 7, 8};
            int[] b = {1, 2, 3, 4, 9, 9, 8, 8};
            int[] devA = {0, 1, 2, 3};
            int[] devB = {10, 11, 12, 13};
            tree.insert(a, 0, 8, devA, 0);                  // GPU: 4 pages
            tree.insert(b, 0, 8, devB, 0);                  // splits A; GPU: 2 new pages
            RadixNode leafB = tree.lastInsertNode();
            RadixNode shared = leafB.parent();
            PendingBackup handle = (x, y) -> { };
            tree.markPending(shared, handle);
            tree.commitHost(shared, handle, new HostCopy(shared.pageCount())); // CPU: the 2 shared pages
            tree.markPending(leafB, handle);
            tree.commitHost(leafB, handle, new HostCopy(leafB.pageCount()));   // CPU: B's 2 pages
            int evicted = tree.evictDevice(8, (n, pg, off, cnt) -> { });   // leaves first, then the shared node
            tree.evictHost(8, (n, v) -> { });
            tree.tierObserver().onCleared();
            assertThat(p.flush(10, TimeUnit.SECONDS)).isTrue();

            KvEventTally tally = new KvEventTally();
            List<KvEventBatch> batches = new ArrayList<>();
            KvEventSubscriber.Result r;
            try (KvEventSubscriber sub = new KvEventSubscriber(p.endpoint(), p.replayEndpoint(), "")) {
                r = sub.run(Duration.ofMillis(300), Duration.ofSeconds(20), batch -> {
                    batches.add(batch);
                    tally.accept(batch);
                });
            }
            assertThat(r.contiguous()).isTrue();
            assertThat(r.replayAnswered()).isTrue();
            assertThat(r.lastSequence()).isEqualTo(p.stats().batchesSent() - 1);
            assertThat(tally.parentsOk()).isTrue();
            assertThat(tally.removedUnknown()).isZero();
            assertThat(tally.stored()).containsEntry("GPU", 6L).containsEntry("CPU", 4L);
            assertThat(tally.removed()).containsEntry("GPU", (long) evicted).containsEntry("CPU", 4L);
            assertThat(tally.cleared()).isEqualTo(1);
            assertThat(tally.blocksHeld()).isZero();

            // the first event is A's chain, hashed as a router hashes a request's tokens
            KvEvent.BlockStored first = (KvEvent.BlockStored) batches.get(0).events().get(0);
            assertThat(first.blockHashes()).containsExactly(BlockHasher.chain(a, 8, 2, 0));
            assertThat(first.tokenIds()).containsExactly(a);
            assertThat(first.blockSize()).isEqualTo(2);
            assertThat(first.parentBlockHash()).isNull();
            long[] chainB = BlockHasher.chain(b, 8, 2, 0);
            List<KvEvent> all = batches.stream().flatMap(x -> x.events().stream()).toList();
            KvEvent.BlockStored second = (KvEvent.BlockStored) all.get(1);
            assertThat(second.blockHashes()).containsExactly(chainB[2], chainB[3]);
            assertThat(second.parentBlockHash()).isEqualTo(chainB[1]);
        }
    }
}
