package io.hicache.sim.engine;

import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;

/**
 * The run's store as one instance's simulated timeline sees it: the storage tiers of the instance's ranks use this
 * view, whose operations run on the real store (its own threads, in wall-clock time), but the simulated clock decides
 * when each one's completion becomes visible to the tier, never how fast the real I/O happened to be:
 * <ul>
 *   <li>an existence check or a read is visible at the first {@link #advance} after it was submitted, which waits
 *     (wall clock) for it: the tier sees it done at the same point of the simulated timeline every run (the time a
 *     request waits for its prefetch is modelled by {@link StorageSim});</li>
 *   <li>a put (or remove) is held and runs on the real store at its modelled completion time: the instance's puts
 *     queue one after another on its write link, each taking true bytes / bandwidth on it, and complete the modelled
 *     latency after leaving it. The first {@link #advance} or read at or after that time submits it, waits for it and
 *     makes it visible (the tier drops the node's host protection then).</li>
 * </ul>
 * A read therefore sees exactly the puts that completed, in simulated time, by the time it was submitted: no read of
 * the fleet is running on the real store while held puts run ({@link Backend}), and no put runs before its time.
 * What a run finds in the store and when the tier learns of it thus depend only on the simulated timeline.
 *
 * <p>Owned by the instance's thread (the tiers' scheduler thread); the instances of a fleet with a store run on one
 * thread ({@link Replay}), so the order of their operations on the shared store is the same every run. A real
 * operation still running after {@link #IO_DEADLINE_NS} of wall-clock time fails the run
 * ({@link IllegalStateException}); operations never complete exceptionally otherwise (failures are per-key statuses).
 */
final class TimedStore implements PageStore {
    /** How long the replay waits (wall clock) for one real store operation before failing the run. */
    static final long IO_DEADLINE_NS = TimeUnit.SECONDS.toNanos(120);

    /** The fleet's real store and the reads of every instance running on it. Used by one thread at a time. */
    static final class Backend {
        final PageStore store;
        private final ArrayList<StoreOp<?>> reads = new ArrayList<>();

        Backend(PageStore store) {
            if (store == null) {
                throw new IllegalArgumentException("store must not be null");
            }
            this.store = store;
        }

        private void reading(StoreOp<?> op) {
            if (reads.size() >= 256) {
                reads.removeIf(StoreOp::isDone);
            }
            reads.add(op);
        }

        /** Waits for every read of the fleet still running on the real store. */
        private void awaitReads() {
            for (StoreOp<?> op : reads) {
                await(op);
            }
            reads.clear();
        }
    }

    private final Backend backend;
    private final LongSupplier clockNs;
    private final long latencyNs;
    private final double bytesPerSecond;
    private final double trueBytesPerSimByte;
    /** Puts and removes not yet run on the real store, in order of their completion times (non-decreasing). */
    private final ArrayDeque<Held> held = new ArrayDeque<>();
    /** Reads running on the real store whose completion the tier has not seen yet. */
    private final ArrayList<Read<?>> reads = new ArrayList<>();
    /** Simulated time the instance's write link is free again. */
    private long linkFreeNs = Long.MIN_VALUE;
    private boolean closed;

    /**
     * @param clockNs             the instance's simulated clock
     * @param latencyNs           modelled latency of one put
     * @param bytesPerSecond      modelled write bandwidth in true bytes per second
     * @param trueBytesPerSimByte true KV bytes one simulated byte (of a host page) stands for
     */
    TimedStore(Backend backend, LongSupplier clockNs, long latencyNs, double bytesPerSecond,
               double trueBytesPerSimByte) {
        this.backend = backend;
        this.clockNs = clockNs;
        this.latencyNs = latencyNs;
        this.bytesPerSecond = bytesPerSecond;
        this.trueBytesPerSimByte = trueBytesPerSimByte;
    }

    // ------------------------------------------------------------------ the tiers' calls

    @Override
    public int maxBatchPages() {
        return backend.store.maxBatchPages();
    }

    @Override
    public StoreOp<Integer> existsPrefix(List<PageKey> keys) {
        catchUp(clockNs.getAsLong());
        return read(backend.store.existsPrefix(keys));
    }

    @Override
    public StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
        catchUp(clockNs.getAsLong());
        return read(backend.store.get(keys, pages));
    }

    @Override
    public StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
        check(keys, pages);
        long simBytes = 0;
        for (HostPage p : pages) {
            simBytes += p.byteSize();
        }
        long transferNs = (long) Math.ceil(simBytes * trueBytesPerSimByte / bytesPerSecond * 1e9);
        return hold(List.copyOf(keys), List.copyOf(pages), transferNs);
    }

    @Override
    public StoreOp<StoreResult> remove(List<PageKey> keys) {
        check(keys, null);
        return hold(List.copyOf(keys), null, 0);
    }

    @Override
    public boolean registerHostMemory(MemorySegment region) {
        return backend.store.registerHostMemory(region);
    }

    @Override
    public StoreStats stats() {
        return backend.store.stats();
    }

    /** Runs and completes everything held or running (the end of the run); the real store stays open. Idempotent. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            advance(Long.MAX_VALUE);
        }
    }

    // ------------------------------------------------------------------ the replay's calls

    /**
     * Makes visible what is due at simulated time {@code nowNs}: runs the puts whose completion time has come and
     * waits for them, and waits for every read submitted since the last call. Call before the caches' polls.
     *
     * @return operations that became visible
     */
    int advance(long nowNs) {
        int done = catchUp(nowNs);
        for (Read<?> r : reads) {
            r.complete();
        }
        done += reads.size();
        reads.clear();
        return done;
    }

    /** Whether {@link #advance} at {@code nowNs} would make something visible. */
    boolean due(long nowNs) {
        return !reads.isEmpty() || (!held.isEmpty() && held.peekFirst().dueNs <= nowNs);
    }

    /** The completion time of the next held put, or {@code Long.MAX_VALUE} when none is held. */
    long nextDueNs() {
        return held.isEmpty() ? Long.MAX_VALUE : held.peekFirst().dueNs;
    }

    // ------------------------------------------------------------------ inside

    private <T> StoreOp<T> read(StoreOp<T> real) {
        backend.reading(real);
        Read<T> r = new Read<>(real);
        reads.add(r);
        return r.visible;
    }

    private StoreOp<StoreResult> hold(List<PageKey> keys, List<HostPage> pages, long transferNs) {
        if (closed) { // the tiers are closing: nothing is modelled any more
            return pages == null ? backend.store.remove(keys) : backend.store.put(keys, pages);
        }
        long start = Math.max(clockNs.getAsLong(), linkFreeNs);
        linkFreeNs = start + transferNs;
        Held h = new Held(keys, pages, linkFreeNs + latencyNs);
        held.add(h);
        return h.visible;
    }

    /** Runs the held operations due at {@code nowNs} on the real store, after the fleet's reads; waits for them. */
    private int catchUp(long nowNs) {
        if (held.isEmpty() || held.peekFirst().dueNs > nowNs) {
            return 0;
        }
        backend.awaitReads(); // no read submitted before these puts may see them
        for (Held h : held) {
            if (h.dueNs > nowNs) {
                break;
            }
            h.real = h.pages == null ? backend.store.remove(h.keys) : backend.store.put(h.keys, h.pages);
        }
        int done = 0;
        while (!held.isEmpty() && held.peekFirst().dueNs <= nowNs) {
            Held h = held.pollFirst();
            h.visible.complete(await(h.real));
            done++;
        }
        return done;
    }

    private void check(List<PageKey> keys, List<HostPage> pages) {
        if (keys == null || (pages != null && pages.size() != keys.size())) {
            throw new IllegalArgumentException("keys and pages must be non-null lists of the same size");
        }
        if (keys.size() > maxBatchPages()) {
            throw new IllegalArgumentException("a batch of " + keys.size() + " keys exceeds the store's "
                    + maxBatchPages());
        }
    }

    private static <T> T await(StoreOp<T> op) {
        try {
            return op.await(IO_DEADLINE_NS, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new IllegalStateException("storage I/O still running after "
                    + TimeUnit.NANOSECONDS.toSeconds(IO_DEADLINE_NS) + " s of wall-clock time", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for storage I/O", e);
        }
    }

    /** A read running on the real store and the operation the tier polls, completed by {@link #advance}. */
    private static final class Read<T> {
        final StoreOp<T> real;
        final StoreOp<T> visible = new StoreOp<>();

        Read(StoreOp<T> real) {
            this.real = real;
        }

        void complete() {
            visible.complete(await(real));
        }
    }

    /** A put (pages) or remove (no pages) held until its completion time. */
    private static final class Held {
        final List<PageKey> keys;
        final List<HostPage> pages;
        final long dueNs;
        final StoreOp<StoreResult> visible = new StoreOp<>();
        StoreOp<StoreResult> real;

        Held(List<PageKey> keys, List<HostPage> pages, long dueNs) {
            this.keys = keys;
            this.pages = pages;
            this.dueNs = dueNs;
        }
    }
}
