package io.hicache.bench;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.EvictionPolicy;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.AuxCounters;
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

/**
 * Block-mode replay of the bundled Mooncake conversation trace through the radix tree: per request
 * match, insert, lock, evict down to the device capacity, unlock. One benchmark operation is one
 * request; the {@code blocks} counter reports blocks/s. Run with {@code -prof gc} for B/op.
 * Capacity 0 means unlimited. The tree is rebuilt when the trace wraps.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RadixReplayBenchmark implements DeviceEvictionListener {

    /** Blocks processed; JMH reports it as a rate. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Counters {
        public long blocks;
        public long hitBlocks;
    }

    @Param({"5859", "0"})
    public long capacityBlocks;

    @Param({"LRU"})
    public EvictionPolicy policy;

    private int[][] trace;
    private RadixTree tree;
    private final MatchResult match = new MatchResult(512);
    private int[] pages = new int[512];
    private int nextPage;
    private int next;
    private long freedPages;

    @Setup(Level.Trial)
    public void load() {
        trace = loadTrace();
        tree = newTree();
    }

    private RadixTree newTree() {
        return RadixTree.builder().pageSize(1).devicePolicy(policy).build();
    }

    @Benchmark
    public int request(Counters counters) {
        if (next == trace.length) {
            next = 0;
            tree = newTree();
        }
        int[] blocks = trace[next++];
        tree.match(blocks, 0, blocks.length, match);
        int hit = match.devicePageCount();
        if (pages.length < blocks.length) {
            pages = new int[Math.max(blocks.length, pages.length * 2)];
        }
        for (int i = hit; i < blocks.length; i++) {
            pages[i] = nextPage++;
        }
        tree.insert(blocks, 0, blocks.length, pages, 0);
        if (capacityBlocks > 0 && tree.devicePagesCached() > capacityBlocks) {
            RadixNode last = tree.lastInsertNode();
            tree.lock(last);
            tree.evictDevice((int) (tree.devicePagesCached() - capacityBlocks), this);
            tree.unlock(last);
        }
        counters.blocks += blocks.length;
        counters.hitBlocks += hit;
        return hit;
    }

    @Override
    public void onDeviceEvicted(RadixNode node, int[] evicted, int offset, int count) {
        freedPages += count;
    }

    static Path locateTrace() {
        String rel = "traces/conversation_trace.jsonl";
        String root = System.getProperty("hicache.repo.root");
        if (root != null && Files.isRegularFile(Paths.get(root).resolve(rel))) {
            return Paths.get(root).resolve(rel);
        }
        for (Path d = Paths.get(System.getProperty("user.dir")).toAbsolutePath(); d != null; d = d.getParent()) {
            if (Files.isRegularFile(d.resolve(rel))) {
                return d.resolve(rel);
            }
        }
        throw new IllegalStateException("cannot find " + rel + " above " + System.getProperty("user.dir")
                + "; set -Dhicache.repo.root");
    }

    static int[][] loadTrace() {
        List<int[]> out = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(locateTrace())) {
                int k = line.indexOf("\"hash_ids\"");
                if (k < 0) {
                    continue;
                }
                int open = line.indexOf('[', k);
                int close = line.indexOf(']', open);
                String body = line.substring(open + 1, close).trim();
                if (body.isEmpty()) {
                    out.add(new int[0]);
                    continue;
                }
                String[] parts = body.split(",");
                int[] ids = new int[parts.length];
                for (int i = 0; i < parts.length; i++) {
                    ids[i] = Integer.parseInt(parts[i].trim());
                }
                out.add(ids);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toArray(new int[0][]);
    }

    @Override
    public String toString() {
        return "RadixReplayBenchmark" + Arrays.toString(new long[] {capacityBlocks, freedPages});
    }
}
