package io.hicache.events;

import io.hicache.radix.TierListener;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * What recording one page event costs the scheduler thread, with nothing else around it: the collector's tier
 * hooks called directly on a 1-page node of a bare tree, into a ring nobody drains (a full ring overwrites its
 * oldest records, as with a publisher that fell behind). Per call, one page record each:
 * <ul>
 *   <li>{@code inserted}: a device insert's record (the page's 16 tokens hashed, the record and its tokens
 *   written);</li>
 *   <li>{@code stored}: a host commit's (the page's hash from the collector's cache, the record and its
 *   tokens written);</li>
 *   <li>{@code removed}: an L3 removal's (the cached hash, a record without tokens).</li>
 * </ul>
 * {@code queue} is the ring's capacity in records: 65536 is the publisher's default. {@link Conversations} records
 * host commits of many nodes of any size, each below the turn before it. In the events package (on the class
 * path) to reach the package-private collector and ring.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
public class KvEventsRecordBenchmark {
    static final int PAGE_SIZE = 16;

    @Param({"1024", "65536"})
    public int queue;

    private TierEventCollector collector;
    private RadixNode node;
    private final int[] tokens = new int[PAGE_SIZE];

    @Setup(Level.Trial)
    public void build() {
        RadixTree tree = RadixTree.builder().pageSize(PAGE_SIZE).build();
        for (int i = 0; i < PAGE_SIZE; i++) {
            tokens[i] = 1000 + i;
        }
        tree.insert(tokens, 0, PAGE_SIZE, new int[] {0}, 0);
        node = tree.lastInsertNode();
        collector = new TierEventCollector(new EventRing(queue, PAGE_SIZE, false), 0, 0);
        collector.onDeviceInserted(tokens, 0, PAGE_SIZE, 0, node); // caches the node's page hash
    }

    /** A device insert of one new page. */
    @Benchmark
    public void inserted() {
        collector.onDeviceInserted(tokens, 0, PAGE_SIZE, 0, node);
    }

    /** A host commit of a 1-page node. */
    @Benchmark
    public void stored() {
        collector.onStored(TierListener.HOST, node);
    }

    /** An L3 removal of a 1-page node (the node stays in the tree). */
    @Benchmark
    public void removed() {
        collector.onRemoving(TierListener.STORAGE, node);
    }

    /**
     * A host commit's record ({@code onStored(HOST, node)}) of each of {@value #NODES} nodes in turn, {@code pages}
     * pages each, in conversations {@code turns} deep (a node's parent is the turn before: the hash its record
     * chains from), by the {@code collect}or (a ring of the default 65536 records nobody drains) or an
     * {@code empty} listener (the call alone); per call. Nodes of 2 or more pages are one run record each.
     */
    @State(Scope.Thread)
    @BenchmarkMode(Mode.AverageTime)
    @OutputTimeUnit(TimeUnit.NANOSECONDS)
    @Warmup(iterations = 3, time = 1)
    @Measurement(iterations = 5, time = 1)
    @Fork(value = 1, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"})
    public static class Conversations {
        static final int NODES = 1024;

        @Param({"empty", "collect"})
        public String listener;

        /** Pages of each node. */
        @Param({"1", "8"})
        public int pages;

        /** Turns of each conversation (the depth of its last node). */
        @Param({"8"})
        public int turns;

        private TierListener target;
        private final RadixNode[] nodes = new RadixNode[NODES];
        private int next;

        @Setup(Level.Trial)
        public void build() {
            RadixTree tree = RadixTree.builder().pageSize(PAGE_SIZE).build();
            if (listener.equals("collect")) {
                target = new TierEventCollector(new EventRing(1 << 16, PAGE_SIZE, false), 0, 0);
            } else {
                target = new TierListener() {
                    @Override
                    public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
                    }

                    @Override
                    public void onStored(int tier, RadixNode node) {
                    }

                    @Override
                    public void onRemoving(int tier, RadixNode node) {
                    }
                };
            }
            int turnTokens = pages * PAGE_SIZE;
            int[] tokens = new int[turns * turnTokens];
            int[] devicePages = new int[turns * pages];
            int token = 0;
            for (int n = 0; n < NODES; n++) {
                int turn = n % turns;
                for (int k = turn * turnTokens; k < (turn + 1) * turnTokens; k++) {
                    tokens[k] = token++;
                }
                for (int k = 0; k < pages; k++) {
                    devicePages[turn * pages + k] = n * pages + k;
                }
                int len = (turn + 1) * turnTokens;
                tree.insert(tokens, 0, len, devicePages, 0);
                nodes[n] = tree.lastInsertNode();
                // as the tree reports an insert to the cache's listener: the collector hashes and keeps the pages
                target.onDeviceInserted(tokens, 0, len, turn * turnTokens, nodes[n]);
            }
        }

        /** The host tier's store of the next node, as its commit reports it; per call. */
        @Benchmark
        public void stored() {
            target.onStored(TierListener.HOST, nodes[next++ & (NODES - 1)]);
        }
    }
}
