package io.hicache.storage;

import java.util.Arrays;

/**
 * Per-key outcomes of one batch operation, in the order of the batch's keys.
 *
 * <p>Immutable once its operation has completed; thread-safe to read after {@link StoreOp#isDone()}.
 */
public final class StoreResult {
    private static final StoreStatus[] VALUES = StoreStatus.values();
    private final byte[] statuses;

    /** Backends fill {@code statuses} (ordinals of {@link StoreStatus}); the array is not copied. */
    StoreResult(byte[] statuses) {
        this.statuses = statuses;
    }

    /** A result of {@code size} keys, all {@code status}. */
    public static StoreResult all(int size, StoreStatus status) {
        byte[] s = new byte[size];
        Arrays.fill(s, (byte) status.ordinal());
        return new StoreResult(s);
    }

    /**
     * A result from per-key {@link StoreStatus} ordinals (copied; backends fill a byte array as they go).
     *
     * @throws IllegalArgumentException when a value is not an ordinal
     */
    public static StoreResult ofOrdinals(byte[] ordinals) {
        for (byte b : ordinals) {
            if (b < 0 || b >= VALUES.length) {
                throw new IllegalArgumentException("status ordinal " + b + " outside [0, " + VALUES.length + ")");
            }
        }
        return new StoreResult(ordinals.clone());
    }

    /** A result from per-key statuses. */
    public static StoreResult of(StoreStatus... statuses) {
        byte[] s = new byte[statuses.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = (byte) statuses[i].ordinal();
        }
        return new StoreResult(s);
    }

    /** Number of keys. */
    public int size() {
        return statuses.length;
    }

    /** Outcome of key {@code i}. */
    public StoreStatus status(int i) {
        return VALUES[statuses[i]];
    }

    /** True when key {@code i} is {@link StoreStatus#OK}. */
    public boolean ok(int i) {
        return statuses[i] == 0;
    }

    /** Keys with outcome {@code status}. */
    public int count(StoreStatus status) {
        int n = 0;
        for (byte b : statuses) {
            if (b == status.ordinal()) {
                n++;
            }
        }
        return n;
    }

    /** Length of the leading run of {@link StoreStatus#OK} keys (the usable prefix of a get). */
    public int leadingOk() {
        int n = 0;
        while (n < statuses.length && statuses[n] == 0) {
            n++;
        }
        return n;
    }

    /** True when every key is {@link StoreStatus#OK}. */
    public boolean allOk() {
        return leadingOk() == statuses.length;
    }

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("StoreResult{");
        for (StoreStatus s : VALUES) {
            int c = count(s);
            if (c > 0) {
                sb.append(s).append('=').append(c).append(' ');
            }
        }
        if (sb.charAt(sb.length() - 1) == ' ') {
            sb.setLength(sb.length() - 1);
        }
        return sb.append('}').toString();
    }
}
