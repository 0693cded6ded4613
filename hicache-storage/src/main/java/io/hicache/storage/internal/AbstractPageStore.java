package io.hicache.storage.internal;

import io.hicache.core.spi.DistinctErrorLog;
import io.hicache.storage.HostPage;
import io.hicache.storage.PageKey;
import io.hicache.storage.PageStore;
import io.hicache.storage.StoreConfig;
import io.hicache.storage.StoreOp;
import io.hicache.storage.StoreResult;
import io.hicache.storage.StoreStats;
import io.hicache.storage.StoreStatus;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * The part every backend shares: argument checks at the call, a bounded queue and the store's own I/O
 * threads, retries with exponential backoff, a backing-off window after a batch fails every attempt,
 * counters, a distinct-error log with redaction of registered secrets, and an orderly close.
 *
 * <p>A backend implements the {@code do*} methods, which run on I/O threads only, possibly several at
 * once (a backend is thread-safe). A {@code do*} that throws fails its whole attempt: the batch is retried
 * with backoff, then its unfinished keys become {@link StoreStatus#FAILED}. Per-key outcomes go into the
 * {@code status} array (ordinals of {@link StoreStatus}; every entry starts as FAILED).
 */
public abstract class AbstractPageStore implements PageStore {
    private static final Logger LOG = LoggerFactory.getLogger(AbstractPageStore.class);
    private static final byte OK = (byte) StoreStatus.OK.ordinal();
    private static final byte MISS = (byte) StoreStatus.MISS.ordinal();
    private static final byte FAILED = (byte) StoreStatus.FAILED.ordinal();
    private static final byte REJECTED = (byte) StoreStatus.REJECTED.ordinal();
    private static final long CLOSE_WAIT_MS = 30_000;

    protected final StoreConfig config;
    private final String kind;
    private final ThreadPoolExecutor executor;
    private final DistinctErrorLog errorLog;
    private final List<String> secrets = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger consecutiveFailures = new AtomicInteger();
    private volatile long backingOffUntilNs = System.nanoTime();

    private final LongAdder putPages = new LongAdder();
    private final LongAdder putBytes = new LongAdder();
    private final LongAdder getHitPages = new LongAdder();
    private final LongAdder getBytes = new LongAdder();
    private final LongAdder missPages = new LongAdder();
    private final LongAdder corruptPages = new LongAdder();
    private final LongAdder failedPages = new LongAdder();
    private final LongAdder rejectedPages = new LongAdder();
    private final LongAdder retries = new LongAdder();
    private final LongAdder evictedPages = new LongAdder();
    private final AtomicInteger queuedOps = new AtomicInteger();

    /**
     * @param kind  short backend name for thread names, e.g. {@code file}
     * @param label what log lines name the store by (a directory, an endpoint; never a credential)
     */
    protected AbstractPageStore(String kind, String label, StoreConfig config) {
        this.kind = kind;
        this.config = config;
        this.errorLog = new DistinctErrorLog(LoggerFactory.getLogger(getClass()), label, 1024);
        AtomicInteger threadIds = new AtomicInteger();
        this.executor = new ThreadPoolExecutor(config.ioThreads(), config.ioThreads(), 0, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(config.maxQueuedOps()), r -> {
                    Thread t = new Thread(r, "hicache-l3-" + kind + "-" + threadIds.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                });
    }

    // ---------------------------------------------------------------- backend hooks (I/O threads)

    protected abstract int doExistsPrefix(List<PageKey> keys) throws Exception;

    protected abstract void doPut(List<PageKey> keys, List<HostPage> pages, byte[] status) throws Exception;

    protected abstract void doGet(List<PageKey> keys, List<HostPage> pages, byte[] status) throws Exception;

    protected abstract void doRemove(List<PageKey> keys, byte[] status) throws Exception;

    /**
     * The backend's epoch (see {@link PageStore#epoch()}): a value kept in the store itself, created when absent, so
     * a store that lost everything answers a new one. 0 where the backend cannot tell (the default).
     */
    protected long doEpoch() throws Exception {
        return 0;
    }

    /** Releases the backend's resources; runs once, after every operation has completed. */
    protected abstract void closeBackend();

    /** Bytes held now, where the backend keeps count; -1 otherwise. */
    protected long storedBytes() {
        return -1;
    }

    /** A string that must never appear in a log line or message (a password); redacted as {@code ***}. */
    protected final void addSecret(String secret) {
        if (secret != null && !secret.isEmpty()) {
            secrets.add(secret);
        }
    }

    /** Replaces every registered secret in {@code text} with {@code ***}. */
    protected final String redact(String text) {
        if (text == null) {
            return null;
        }
        String out = text;
        for (String s : secrets) {
            out = out.replace(s, "***");
        }
        return out;
    }

    /**
     * Class and message of {@code t} and of its root cause, secrets redacted: a distinct-error key. Backends
     * override it to leave out what varies per call (file names), so one fault is one distinct error.
     */
    protected String describe(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String d = t.getClass().getSimpleName() + ": " + t.getMessage();
        if (root != t) {
            d += " (cause " + root.getClass().getSimpleName() + ": " + root.getMessage() + ")";
        }
        return redact(d);
    }

    /** Marks key {@code i} CORRUPT: counted, and logged once per distinct reason. */
    protected final void corrupt(byte[] status, int i, String reason) {
        status[i] = (byte) StoreStatus.CORRUPT.ordinal();
        reportCorrupt(reason);
    }

    /** Counts and logs (once per distinct reason) an invalid object found outside a get. */
    protected final void reportCorrupt(String reason) {
        corruptPages.increment();
        errorLog.record("invalid object: " + redact(reason));
    }

    /** Counts and logs (once per distinct description) an error the backend handled itself. */
    protected final void reportError(String description) {
        errorLog.record(redact(description));
    }

    protected final void countEvicted(long pages) {
        evictedPages.add(pages);
    }

    /** Each distinct error and its count (tests, diagnostics). */
    public final Map<String, Long> distinctErrors() {
        return errorLog.snapshot();
    }

    // ---------------------------------------------------------------- SPI

    @Override
    public final int maxBatchPages() {
        return config.maxBatchPages();
    }

    @Override
    public final StoreOp<Integer> existsPrefix(List<PageKey> keys) {
        checkKeys(keys);
        StoreOp<Integer> op = new StoreOp<>();
        if (keys.isEmpty()) {
            op.complete(0);
            return op;
        }
        submit(new Task(op, keys.size()) {
            @Override
            void run(byte[] unused) throws Exception {
                op.complete(doExistsPrefix(keys));
            }

            @Override
            void fail(byte status) {
                op.complete(0);
            }
        });
        return op;
    }

    @Override
    public final StoreOp<Long> epoch() {
        StoreOp<Long> op = new StoreOp<>();
        submit(new Task(op, 1) {
            @Override
            void run(byte[] unused) throws Exception {
                op.complete(doEpoch());
            }

            @Override
            void fail(byte status) {
                op.complete(EPOCH_UNKNOWN);
            }
        });
        return op;
    }

    @Override
    public final StoreOp<StoreResult> put(List<PageKey> keys, List<HostPage> pages) {
        checkKeys(keys);
        checkPages(keys, pages);
        return submitBatch(keys.size(), (status) -> doPut(keys, pages, status), (status) -> {
            for (int i = 0; i < status.length; i++) {
                if (status[i] == OK) {
                    putPages.increment();
                    putBytes.add(pages.get(i).byteSize());
                }
            }
        });
    }

    @Override
    public final StoreOp<StoreResult> get(List<PageKey> keys, List<HostPage> pages) {
        checkKeys(keys);
        checkPages(keys, pages);
        return submitBatch(keys.size(), (status) -> doGet(keys, pages, status), (status) -> {
            for (int i = 0; i < status.length; i++) {
                if (status[i] == OK) {
                    getHitPages.increment();
                    getBytes.add(pages.get(i).byteSize());
                } else if (status[i] == MISS) {
                    missPages.increment();
                }
            }
        });
    }

    @Override
    public final StoreOp<StoreResult> remove(List<PageKey> keys) {
        checkKeys(keys);
        return submitBatch(keys.size(), (status) -> doRemove(keys, status), (status) -> { });
    }

    @Override
    public final StoreStats stats() {
        return new StoreStats(putPages.sum(), putBytes.sum(), getHitPages.sum(), getBytes.sum(), missPages.sum(),
                corruptPages.sum(), failedPages.sum(), rejectedPages.sum(), retries.sum(), errorLog.total(),
                evictedPages.sum(), storedBytes(), queuedOps.get());
    }

    /** True once {@link #close()} has begun. */
    public final boolean isClosed() {
        return closed.get();
    }

    @Override
    public final void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        executor.shutdown();
        List<Runnable> queued = new ArrayList<>();
        executor.getQueue().drainTo(queued);
        for (Runnable r : queued) {
            queuedOps.decrementAndGet();
            ((Task) r).reject();
        }
        try {
            if (!executor.awaitTermination(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS)) {
                LOG.error("L3 {} store: operations still running {} ms after close; interrupting them", kind, CLOSE_WAIT_MS);
                executor.shutdownNow();
                executor.awaitTermination(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            executor.shutdownNow();
            Thread.currentThread().interrupt();
        } finally {
            closeBackend();
        }
    }

    // ---------------------------------------------------------------- machinery

    private interface Body {
        void run(byte[] status) throws Exception;
    }

    private interface Tally {
        void count(byte[] status);
    }

    private StoreOp<StoreResult> submitBatch(int size, Body body, Tally tally) {
        StoreOp<StoreResult> op = new StoreOp<>();
        if (size == 0) {
            op.complete(StoreResult.ofOrdinals(new byte[0]));
            return op;
        }
        submit(new Task(op, size) {
            private byte[] last;

            @Override
            void run(byte[] status) throws Exception {
                last = status;
                body.run(status);
                tally.count(status);
                countFailed(status);
                op.complete(StoreResult.ofOrdinals(status));
            }

            @Override
            void fail(byte code) {
                byte[] status = last != null && code == FAILED ? last : new byte[size];
                for (int i = 0; i < status.length; i++) {
                    if (last == null || code != FAILED || status[i] == FAILED) {
                        status[i] = code;
                    }
                }
                if (code == FAILED) {
                    tally.count(status);
                    countFailed(status);
                } else {
                    rejectedPages.add(size);
                }
                op.complete(StoreResult.ofOrdinals(status));
            }
        });
        return op;
    }

    private void countFailed(byte[] status) {
        for (byte b : status) {
            if (b == FAILED) {
                failedPages.increment();
            } else if (b == REJECTED) {
                rejectedPages.increment();
            }
        }
    }

    private void submit(Task task) {
        if (closed.get() || System.nanoTime() - backingOffUntilNs < 0) {
            task.reject();
            return;
        }
        queuedOps.incrementAndGet();
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            queuedOps.decrementAndGet();
            task.reject();
        }
    }

    private long backoffNs(int failures) {
        long ms = config.retryBackoffMinMs() << Math.min(20, Math.max(0, failures - 1));
        return TimeUnit.MILLISECONDS.toNanos(Math.min(ms, config.retryBackoffMaxMs()));
    }

    /** One queued operation: attempts with backoff, then FAILED; REJECTED when never started. */
    private abstract class Task implements Runnable {
        private final StoreOp<?> handle;
        final int size;
        private boolean started;

        Task(StoreOp<?> handle, int size) {
            this.handle = handle;
            this.size = size;
        }

        abstract void run(byte[] status) throws Exception;

        abstract void fail(byte status);

        void reject() {
            fail(REJECTED);
        }

        @Override
        public final void run() {
            started = true;
            queuedOps.decrementAndGet();
            try {
                for (int attempt = 1; ; attempt++) {
                    byte[] status = new byte[size];
                    Arrays.fill(status, FAILED);
                    try {
                        run(status);
                        consecutiveFailures.set(0);
                        return;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        fail(FAILED);
                        return;
                    } catch (Exception | LinkageError | AssertionError e) {
                        errorLog.record(describe(e));
                        if (attempt >= config.retryAttempts() || closed.get()) {
                            int failures = consecutiveFailures.incrementAndGet();
                            backingOffUntilNs = System.nanoTime() + backoffNs(failures);
                            fail(FAILED);
                            return;
                        }
                        retries.increment();
                        if (!pause(backoffNs(attempt))) {
                            fail(FAILED);
                            return;
                        }
                    }
                }
            } finally {
                if (!handle.isDone()) {
                    fail(FAILED);
                }
            }
        }

        /** Parks for {@code ns} (a retry backoff on this I/O thread); false when interrupted by close. */
        private boolean pause(long ns) {
            long deadline = System.nanoTime() + ns;
            long left;
            while ((left = deadline - System.nanoTime()) > 0) {
                LockSupport.parkNanos(this, left);
                if (Thread.currentThread().isInterrupted()) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public String toString() {
            return "L3 " + kind + " op of " + size + " keys" + (started ? " (started)" : "");
        }
    }

    private void checkKeys(List<PageKey> keys) {
        if (keys == null) {
            throw new IllegalArgumentException("keys must not be null");
        }
        if (keys.size() > config.maxBatchPages()) {
            throw new IllegalArgumentException("batch of " + keys.size() + " keys exceeds maxBatchPages "
                    + config.maxBatchPages());
        }
        for (int i = 0; i < keys.size(); i++) {
            if (keys.get(i) == null) {
                throw new IllegalArgumentException("key " + i + " of the batch is null");
            }
        }
    }

    private static void checkPages(List<PageKey> keys, List<HostPage> pages) {
        if (pages == null || pages.size() != keys.size()) {
            throw new IllegalArgumentException((pages == null ? "null" : pages.size()) + " host pages for "
                    + keys.size() + " keys; give one page per key");
        }
        for (int i = 0; i < pages.size(); i++) {
            if (pages.get(i) == null) {
                throw new IllegalArgumentException("host page " + i + " of the batch is null");
            }
        }
    }
}
