package io.hicache.bench;

import io.hicache.radix.spi.DeviceEvictionListener;
import io.hicache.radix.EvictionPolicy;
import io.hicache.radix.MatchResult;
import io.hicache.radix.RadixNode;
import io.hicache.radix.RadixTree;
import io.hicache.sim.trace.Request;
import io.hicache.sim.trace.TokenExpander;
import io.hicache.sim.trace.TraceReader;
import io.hicache.sim.trace.TraceSource;
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

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Token-mode replay of the first {@value #REQUESTS} requests of the bundled Mooncake conversation trace
 * through the radix tree with page size {@value #PAGE_SIZE}: each 512-token block id becomes 512 distinct
 * tokens (ids remapped densely by {@link TokenExpander}, which changes no hit), cut to the request's
 * {@code input_length}; the whole pages are matched and inserted. Per request: match, insert, lock, evict
 * down to the capacity, unlock, as {@link RadixReplayBenchmark} does in block mode. One operation is one
 * request; the {@code tokens} counter reports tokens/s (all input tokens of the request, the partial last
 * page included). Capacity 0 means unlimited. The tree is rebuilt when the replay wraps.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RadixTokenReplayBenchmark implements DeviceEvictionListener {
    static final int REQUESTS = 2_000;
    static final int PAGE_SIZE = 16;

    /** Tokens processed; JMH reports it as a rate. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.OPERATIONS)
    public static class Counters {
        public long tokens;
        public long hitTokens;
    }

    @Param({"3000000", "0"})
    public long capacityTokens;

    private int[][] trace;
    private RadixTree tree;
    private final MatchResult match = new MatchResult(1024);
    private int[] pages = new int[1024];
    private int nextPage;
    private int next;
    private long capacityPages;

    @Setup(Level.Trial)
    public void load() {
        trace = loadTokens();
        tree = newTree();
        capacityPages = capacityTokens / PAGE_SIZE;
    }

    private RadixTree newTree() {
        nextPage = 0;
        return RadixTree.builder().pageSize(PAGE_SIZE).devicePolicy(EvictionPolicy.LRU).build();
    }

    @Benchmark
    public int request(Counters counters) {
        if (next == trace.length) {
            next = 0;
            tree = newTree();
        }
        int[] tokens = trace[next++];
        int len = tokens.length - tokens.length % PAGE_SIZE;
        int pageCount = len / PAGE_SIZE;
        tree.match(tokens, 0, len, match);
        int hitPages = match.devicePageCount();
        if (pages.length < pageCount) {
            pages = new int[Math.max(pageCount, pages.length * 2)];
        }
        for (int i = hitPages; i < pageCount; i++) {
            pages[i] = nextPage++;
        }
        tree.insert(tokens, 0, len, pages, 0);
        if (capacityPages > 0 && tree.devicePagesCached() > capacityPages) {
            RadixNode last = tree.lastInsertNode();
            tree.lock(last);
            tree.evictDevice((int) (tree.devicePagesCached() - capacityPages), this);
            tree.unlock(last);
        }
        counters.tokens += tokens.length;
        counters.hitTokens += (long) hitPages * PAGE_SIZE;
        return hitPages;
    }

    @Override
    public void onDeviceEvicted(RadixNode node, int[] evicted, int offset, int count) {
    }

    static int[][] loadTokens() {
        Path root = RadixReplayBenchmark.locateTrace().getParent().getParent();
        TraceSource source = TraceSource.parse(TraceSource.BUNDLED_TRACE, root, root, REQUESTS);
        TokenExpander expander = new TokenExpander(512);
        List<int[]> out = new ArrayList<>();
        try (TraceReader reader = source.open()) {
            Request r;
            while ((r = reader.next()) != null && out.size() < REQUESTS) {
                out.add(expander.expand(r));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toArray(new int[0][]);
    }
}
