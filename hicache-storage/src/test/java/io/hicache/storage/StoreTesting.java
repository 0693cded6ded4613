package io.hicache.storage;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** Helpers shared by the backend tests: pages of known bytes, keys, bounded waits. */
public final class StoreTesting {
    private StoreTesting() {
    }

    /** {@code count} distinct keys of a chain (namespace none, one page per key). */
    public static List<PageKey> keys(int count, int salt) {
        int[] tokens = new int[count];
        for (int i = 0; i < count; i++) {
            tokens[i] = salt * 1_000_003 + i;
        }
        return List.of(PageKeys.chain(null, tokens, 1));
    }

    /** A page of {@code bytes} in 4 KiB aligned native memory of {@code arena}, filled from {@code seed}. */
    public static HostPage page(Arena arena, long bytes, long seed) {
        MemorySegment s = arena.allocate(bytes, 4096);
        fill(s, seed);
        return HostPage.of(s);
    }

    /** A page in two segments (as a two-buffer pool page), filled from {@code seed}. */
    public static HostPage twoPartPage(Arena arena, long bytesEach, long seed) {
        MemorySegment a = arena.allocate(bytesEach, 4096);
        MemorySegment b = arena.allocate(bytesEach, 4096);
        fill(a, seed);
        fill(b, seed * 31 + 1);
        return HostPage.of(a, b);
    }

    public static List<HostPage> pages(Arena arena, int count, long bytes, long seed) {
        List<HostPage> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(page(arena, bytes, seed + i));
        }
        return out;
    }

    /** Empty pages shaped like {@code like} (for gets). */
    public static List<HostPage> blanks(Arena arena, List<HostPage> like) {
        List<HostPage> out = new ArrayList<>();
        for (HostPage p : like) {
            MemorySegment[] parts = new MemorySegment[p.partCount()];
            for (int i = 0; i < parts.length; i++) {
                parts[i] = arena.allocate(p.part(i).byteSize(), 4096);
            }
            out.add(HostPage.of(parts));
        }
        return out;
    }

    public static void fill(MemorySegment s, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long n = s.byteSize();
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, i, r.nextLong());
        }
        for (; i < n; i++) {
            s.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
        }
    }

    public static boolean sameBytes(HostPage a, HostPage b) {
        if (a.byteSize() != b.byteSize()) {
            return false;
        }
        MemorySegment x = MemorySegment.ofArray(new byte[(int) a.byteSize()]);
        MemorySegment y = MemorySegment.ofArray(new byte[(int) b.byteSize()]);
        a.copyTo(x, 0);
        b.copyTo(y, 0);
        return x.mismatch(y) == -1;
    }

    public static <T> T await(StoreOp<T> op) {
        try {
            return op.await(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("store operation did not complete in 60 s", e);
        }
    }

    /** Polls {@code condition} until true or {@code timeoutMs} passes; false on timeout. */
    public static boolean pollUntil(long timeoutMs, BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.onSpinWait();
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        return condition.getAsBoolean();
    }
}
