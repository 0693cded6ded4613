package io.hicache.storage.tier;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;
import io.hicache.storage.StoreStatus;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * A test store over a {@link MemoryPageStore} that injects the L3 faults of the reliability suite, seeded:
 * failed puts (nothing stored, FAILED), torn writes (part of an object written but never committed: a later read
 * is a miss, never those bytes), lost markers (put answered OK, object never visible), slow operations (completed
 * only after a number of {@link #tick()}s), failed gets, and an unavailable backend (every key REJECTED/FAILED).
 * Held operations own their pages until completed, as the SPI says; {@link #close()} completes them.
 * Thread: the test's thread.
 */
final class FaultyPageStore implements PageStore {
    final MemoryPageStore inner;
    private final Random rnd;
    double failPut;
    double tornPut;
    double lostMarker;
    double failGet;
    /** Chance a read finds its key deleted first (expired after the existence check saw it). */
    double expireGet;
    double slow;
    int slowTicks = 3;
    boolean unavailable;
    long tornWrites;
    long lostMarkers;
    /** Keys whose put answered OK with the marker lost: taken for stored by the writer, never readable. */
    final java.util.Set<PageKey> lostKeys = new java.util.HashSet<>();
    /** Keys a read found expired ({@link #expireGet}). */
    final java.util.Set<PageKey> expiredKeys = new java.util.HashSet<>();
    private final List<Held> held = new ArrayList<>();

    private record Held(Runnable complete, int[] ticksLeft) {
    }

    FaultyPageStore(long seed) {
        this.inner = new MemoryPageStore(0, 64);
        this.rnd = new Random(seed);
    }

    @Override
    public int maxBatchPages() {
        return inner.maxBatchPages();
    }

    @Override
    public StoreOp<Integer> existsPrefix(List<PageKey> keys) {
        if (unavailable) {
            return StoreOp.completed(0);
        }
        return maybeSlow(inner.existsPrefix(keys).result());
    }

    @Override
    public StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
        if (unavailable) {
            return StoreOp.completed(StoreResult.all(keys.size(), StoreStatus.FAILED));
        }
        StoreStatus[] out = new StoreStatus[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            double x = rnd.nextDouble();
            if (x < failPut) {
                out[i] = StoreStatus.FAILED;
            } else if (x < failPut + tornPut) {
                tornWrites++; // bytes landed under a staging name, never committed: invisible to readers
                out[i] = StoreStatus.FAILED;
            } else if (x < failPut + tornPut + lostMarker) {
                lostMarkers++; // object written, marker lost: readers see a miss
                lostKeys.add(keys.get(i));
                out[i] = StoreStatus.OK;
            } else {
                out[i] = inner.put(List.of(keys.get(i)), List.of(pages.get(i))).result().status(0);
            }
        }
        return maybeSlow(StoreResult.of(out));
    }

    @Override
    public StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
        if (unavailable) {
            return StoreOp.completed(StoreResult.all(keys.size(), StoreStatus.REJECTED));
        }
        StoreStatus[] out = new StoreStatus[keys.size()];
        for (int i = 0; i < keys.size(); i++) {
            if (rnd.nextDouble() < failGet) {
                // a failed read may leave garbage in the page: the tier must not publish it
                HostPage p = pages.get(i);
                for (int s = 0; s < p.partCount(); s++) {
                    p.part(s).fill((byte) 0x5A);
                }
                out[i] = StoreStatus.FAILED;
            } else {
                if (expireGet > 0 && rnd.nextDouble() < expireGet
                        && inner.existsPrefix(List.of(keys.get(i))).result() == 1) {
                    inner.remove(List.of(keys.get(i)));
                    expiredKeys.add(keys.get(i));
                }
                out[i] = inner.get(List.of(keys.get(i)), List.of(pages.get(i))).result().status(0);
            }
        }
        return maybeSlow(StoreResult.of(out));
    }

    @Override
    public StoreOp<StoreResult> remove(List<PageKey> keys) {
        return inner.remove(keys);
    }

    @Override
    public StoreStats stats() {
        return inner.stats();
    }

    /** Completes held operations whose delay ran out. */
    void tick() {
        for (int i = held.size() - 1; i >= 0; i--) {
            Held h = held.get(i);
            if (--h.ticksLeft[0] <= 0) {
                held.remove(i);
                h.complete.run();
            }
        }
    }

    /** Holds every new operation until {@link #releaseAll()} (slow = 1, forever). */
    void holdAll() {
        slow = 1;
        slowTicks = Integer.MAX_VALUE;
    }

    void releaseAll() {
        slow = 0;
        for (Held h : held) {
            h.complete.run();
        }
        held.clear();
    }

    int heldCount() {
        return held.size();
    }

    private <T> StoreOp<T> maybeSlow(T value) {
        if (slow > 0 && rnd.nextDouble() < slow) {
            StoreOp<T> op = new StoreOp<>();
            held.add(new Held(() -> op.complete(value), new int[] {slowTicks}));
            return op;
        }
        return StoreOp.completed(value);
    }

    @Override
    public void close() {
        releaseAll();
        inner.close();
    }

    /** Test helper: true when {@code key} is committed (readable), or its put answered OK with the marker lost. */
    boolean answeredStored(PageKey key) {
        return lostKeys.contains(key) || inner.existsPrefix(List.of(key)).result() == 1;
    }

    /** Test helper: the committed bytes of {@code key}, or null. */
    byte[] bytesOf(PageKey key, int size) {
        byte[] b = new byte[size];
        StoreResult r = inner.get(List.of(key), List.of(HostPage.of(MemorySegment.ofArray(b)))).result();
        return r.ok(0) ? b : null;
    }
}
