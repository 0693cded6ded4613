package io.hicache.sim;

import io.hicache.storage.PageStores;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

/**
 * The L3 storage tier of a simulated run. {@link Kind#MODEL} keeps pages in memory with a capacity and models the
 * transfer time (latency + bytes / bandwidth, in simulated time); {@link Kind#FILE} and {@link Kind#REDIS} run the
 * real backends under the trace (real I/O, wall-clock bandwidth reported) and use the same model for simulated time.
 * Immutable and thread-safe. {@link #toString()} and {@link #displayName()} never show credentials; only
 * {@link #location()} holds them.
 *
 * @param kind                     which store
 * @param location                 {@code file:DIR} or {@code redis://...} (may carry credentials); null for the model
 * @param capacityTokens           model: simulated tokens the store keeps (0 = unlimited)
 * @param bandwidthBytesPerSecond  modelled transfer bandwidth in true bytes per second (> 0)
 * @param latencyNs                modelled latency of one prefetch (>= 0)
 * @param writePolicy              when committed host pages are written to storage
 * @param prefetchPolicy           how long a request waits for its prefetch
 * @param prefetchThresholdTokens  prefetch only when storage may add more than this many simulated tokens
 */
public record StorageOptions(Kind kind, String location, long capacityTokens, double bandwidthBytesPerSecond,
                             long latencyNs, StorageWritePolicy writePolicy, PrefetchPolicy prefetchPolicy,
                             int prefetchThresholdTokens) {

    /** Default modelled bandwidth: 10 GB/s (a local NVMe array or a fast remote pool). */
    public static final double DEFAULT_BANDWIDTH_BYTES_PER_SECOND = 10e9;
    /** Default modelled latency of one prefetch: 200 us. */
    public static final long DEFAULT_LATENCY_NS = 200_000;

    /** The store kinds. */
    public enum Kind {
        /** In memory, modelled capacity, bandwidth and latency. */
        MODEL,
        /** The file backend in a directory. */
        FILE,
        /** A Redis/Valkey server or cluster. */
        REDIS
    }

    /** Checks every value. */
    public StorageOptions {
        if (kind == null || writePolicy == null || prefetchPolicy == null) {
            throw new IllegalArgumentException("storage kind and policies must not be null");
        }
        if ((kind == Kind.MODEL) != (location == null)) {
            throw new IllegalArgumentException("a storage location is needed exactly for file and redis stores");
        }
        if (capacityTokens < 0) {
            throw new IllegalArgumentException("storage capacity must be >= 0 tokens (0 = unlimited), got "
                    + capacityTokens);
        }
        if (!(bandwidthBytesPerSecond > 0) || Double.isInfinite(bandwidthBytesPerSecond)) {
            throw new IllegalArgumentException("storage bandwidth must be a finite number > 0, got "
                    + bandwidthBytesPerSecond);
        }
        if (latencyNs < 0) {
            throw new IllegalArgumentException("storage latency must be >= 0, got " + latencyNs);
        }
        if (prefetchThresholdTokens < 0) {
            throw new IllegalArgumentException("prefetch threshold must be >= 0 tokens, got " + prefetchThresholdTokens);
        }
    }

    /**
     * The kind a {@code --storage} value names: {@code model}, {@code file:DIR}, {@code redis://...} or
     * {@code rediss://...}.
     *
     * @throws IllegalArgumentException for anything else (the message never repeats a credential)
     */
    public static Kind kindOf(String spec) {
        if (spec == null || spec.isEmpty()) {
            throw new IllegalArgumentException("--storage needs model, file:DIR or redis://[user:pass@]HOST:PORT");
        }
        if (spec.equals("model")) {
            return Kind.MODEL;
        }
        if (spec.startsWith("file:")) {
            if (spec.length() == "file:".length()) {
                throw new IllegalArgumentException("--storage file: needs a directory, e.g. file:/tmp/l3");
            }
            return Kind.FILE;
        }
        if (spec.startsWith("redis://") || spec.startsWith("rediss://")) {
            return Kind.REDIS;
        }
        throw new IllegalArgumentException("--storage must be model, file:DIR or redis://[user:pass@]HOST:PORT, got '"
                + PageStores.redact(spec) + "'");
    }

    /** What reports show: {@code model}, or the location with any password replaced by {@code ***}. */
    public String displayName() {
        return kind == Kind.MODEL ? "model" : PageStores.redact(location);
    }

    @Override
    public String toString() {
        return "StorageOptions{" + displayName() + ", capacityTokens=" + capacityTokens + ", bandwidth="
                + bandwidthBytesPerSecond + " B/s, latencyNs=" + latencyNs + ", write=" + writePolicy.cliName()
                + ", prefetch=" + prefetchPolicy.cliName() + ", threshold=" + prefetchThresholdTokens + '}';
    }
}
