package io.hicache.storage;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The L3 store SPI: batch, zero-copy, per-key results. A key names one page's object ({@link PageKey});
 * the bytes move directly between the store and the pinned host pool's segments ({@link HostPage}).
 *
 * <p><b>Visibility.</b> A put publishes each page with the store write protocol: the object is written
 * under a staging name (or in a staged state), then committed by a marker written last (or an atomic
 * rename of the complete object). A key without its commit is a {@link StoreStatus#MISS}; a get never
 * returns a partially written page; two writers of one key both succeed and leave one valid object; an
 * interrupted write is rolled back or garbage-collected when the store next opens. A put whose status is
 * {@link StoreStatus#OK} is committed.
 *
 * <p><b>Threads.</b> Every method is thread-safe and returns without doing I/O: the work runs on the
 * store's own I/O threads, never on the caller's (the scheduler or forward thread). The caller polls the
 * returned {@link StoreOp} with {@link StoreOp#isDone()} and reads its result, without blocking. Host
 * pages handed to an operation belong to the store until that operation is done (see {@link StoreOp}).
 * Operations of one store may run concurrently and complete in any order; the caller orders dependent
 * operations (e.g. a get after the put of the same key is done).
 *
 * <p><b>Failures.</b> Operations never complete exceptionally. A backend error is retried with backoff,
 * counted and logged once per distinct error (with a count); keys that still fail are
 * {@link StoreStatus#FAILED}, and while the backend is backing off new operations complete at once with
 * {@link StoreStatus#REJECTED} (existsPrefix: 0), so the cache keeps serving from L1/L2. Invalid objects
 * are {@link StoreStatus#CORRUPT} (a miss, counted). Programming errors (mismatched list sizes, a batch
 * over {@link #maxBatchPages()}, null elements) throw {@link IllegalArgumentException} at the call.
 * Error messages, logs, {@code toString()} and {@link #stats()} never contain credentials.
 *
 * <p>Implementations: {@code file:DIR} and {@code redis://} / {@code rediss://} (single server or
 * cluster) through {@link PageStores#open}.
 */
public interface PageStore extends AutoCloseable {

    /** The largest batch (keys per call) this store accepts. */
    int maxBatchPages();

    /**
     * How many leading keys of {@code keys} are committed: {@code n} means keys {@code 0..n-1} all are and
     * key {@code n} is not (or its state could not be read). Stops at the first miss.
     */
    StoreOp<Integer> existsPrefix(List<PageKey> keys);

    /**
     * Writes and commits {@code pages.get(i)} under {@code keys.get(i)}. A key already committed is
     * overwritten with an equal-size object (same key, same bytes by construction).
     */
    StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages);

    /**
     * Reads each committed object into {@code pages.get(i)}; a key whose object is absent, uncommitted or
     * not exactly {@code pages.get(i).byteSize()} bytes is a miss. The bytes of a page whose status is not
     * OK are undefined (it may have been partly written) and must not be used.
     */
    StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages);

    /** Removes each key's object and marker ({@link StoreStatus#MISS} when there was none). */
    StoreOp<StoreResult> remove(List<PageKey> keys);

    /** What {@link #epoch()} answers when the store could not be asked (down, backing off, closed). */
    long EPOCH_UNKNOWN = -1;

    /**
     * The store's epoch: a value that stays the same while the store keeps what it holds and changes when it loses
     * everything at once (a server restarted without its data, a flush, a directory emptied), so a client that
     * remembers which keys are stored knows to forget them all. {@link #EPOCH_UNKNOWN} when the store could not be
     * asked; 0 from a backend that cannot tell (its epoch never changes). Like every operation it never completes
     * exceptionally. The default answers 0.
     */
    default StoreOp<Long> epoch() {
        return StoreOp.completed(0L);
    }

    /**
     * Registers a whole region of host memory (the host pool's segment) with the backend once, as
     * Mooncake's {@code register_buffer} does, so later transfers from pages inside it need no per-call
     * registration. Optional: returns false when the backend has nothing to register. Call before the
     * first operation on pages of the region; the region stays registered until {@link #close()}.
     */
    default boolean registerHostMemory(MemorySegment region) {
        return false;
    }

    /** A snapshot of the store's counters. Thread-safe. */
    StoreStats stats();

    /**
     * Stops accepting operations, completes queued ones as {@link StoreStatus#REJECTED}, waits for those
     * in flight (bounded), then releases connections and files. Idempotent; after it returns no store
     * thread touches a host page. Operations submitted afterwards complete at once as REJECTED.
     */
    @Override
    void close();
}
