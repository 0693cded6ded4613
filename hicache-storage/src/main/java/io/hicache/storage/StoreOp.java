package io.hicache.storage;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * An operation in flight on a store's I/O threads. The submitting thread polls {@link #isDone()} (a
 * volatile read: never blocks, allocates nothing) and reads {@link #result()} once done; cold paths and
 * tests may {@link #await} it.
 *
 * <p><b>Memory contract.</b> Once {@code isDone()} is true no store thread touches the operation's host
 * pages again: a get's pages may then be read, a put's pages reused. Until then the caller keeps them
 * reserved and unchanged (put) or unread (get). A callers cannot complete or cancel an operation, so the
 * contract cannot be broken from outside; {@link PageStore#close()} completes every operation.
 *
 * <p>Operations never complete exceptionally: failures are per-key statuses ({@link StoreStatus}).
 *
 * @param <T> {@link StoreResult} for put/get/remove, {@link Integer} for existsPrefix
 */
public final class StoreOp<T> {
    private final CompletableFuture<T> future = new CompletableFuture<>();

    /** For backends: a new operation, completed by {@link #complete}. */
    public StoreOp() {
    }

    /** An operation already completed with {@code value}. */
    public static <T> StoreOp<T> completed(T value) {
        StoreOp<T> op = new StoreOp<>();
        op.complete(value);
        return op;
    }

    /** For backends: completes the operation (first call wins). Called after the last access to its pages. */
    public void complete(T value) {
        future.complete(value);
    }

    /** True once the operation is complete and its pages are released to the caller. Non-blocking. */
    public boolean isDone() {
        return future.isDone();
    }

    /**
     * The outcome.
     *
     * @throws IllegalStateException when not done yet
     */
    public T result() {
        if (!future.isDone()) {
            throw new IllegalStateException("store operation not complete; poll isDone() first");
        }
        return future.join();
    }

    /**
     * Waits up to {@code timeout} for the outcome (cold paths, tests, shutdown).
     *
     * @throws TimeoutException     when it is not done in time
     * @throws InterruptedException when interrupted while waiting
     */
    public T await(long timeout, TimeUnit unit) throws TimeoutException, InterruptedException {
        try {
            return future.get(timeout, unit);
        } catch (ExecutionException e) {
            throw new IllegalStateException("store operations never complete exceptionally", e.getCause());
        }
    }

    /**
     * A stage for composition; callbacks run on the store's I/O thread (keep them short) or on the caller
     * if already done. It cannot complete this operation.
     */
    public CompletionStage<T> stage() {
        return future.minimalCompletionStage();
    }

    @Override
    public String toString() {
        return future.isDone() ? "StoreOp{done: " + future.join() + "}" : "StoreOp{pending}";
    }
}
