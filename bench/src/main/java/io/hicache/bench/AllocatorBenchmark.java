package io.hicache.bench;

import io.hicache.core.internal.memory.HostPageAllocator;
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
 * Host page allocator: one {@code allocate(pages)} and the matching {@code free} per operation, on an
 * allocator of 65,536 pages of which half stay allocated (so the free list is not trivially full). ns per
 * pair; must be 0 B/op.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class AllocatorBenchmark {
    static final int CAPACITY = 65_536;

    @Param({"1", "64"})
    public int pages;

    private HostPageAllocator allocator;
    private int[] out;
    private long holder;

    @Setup(Level.Trial)
    public void build() {
        allocator = new HostPageAllocator(CAPACITY);
        int[] held = new int[CAPACITY / 2];
        allocator.allocate(held.length, held, 0, 0L);
        out = new int[pages];
    }

    @Benchmark
    public int allocateFreePair() {
        int n = allocator.allocate(pages, out, 0, ++holder);
        allocator.free(out, 0, pages);
        return n;
    }
}
