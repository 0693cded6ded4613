package io.hicache.storage;

import java.nio.file.Path;

/**
 * Settings of a page store, common and per backend, with defaults. Build with {@link #builder()};
 * {@link Builder#build()} validates every value. Immutable; thread-safe. Holds no credentials except
 * {@link #redisPassword()}, which {@link #toString()} never prints.
 */
public final class StoreConfig {
    /** Default {@link #maxBatchPages()}. */
    public static final int DEFAULT_MAX_BATCH_PAGES = 128;

    private final int maxBatchPages;
    private final int ioThreads;
    private final int maxQueuedOps;
    private final int retryAttempts;
    private final long retryBackoffMinMs;
    private final long retryBackoffMaxMs;
    private final long fileCapacityBytes;
    private final long fileQuotaBytes;
    private final boolean fileDirectIo;
    private final boolean fileFsync;
    private final long redisTimeoutMs;
    private final String redisUser;
    private final String redisPassword;
    private final Path redisTlsCaCertificate;
    private final int redisConnections;
    private final long redisTtlSeconds;

    private StoreConfig(Builder b) {
        maxBatchPages = b.maxBatchPages;
        ioThreads = b.ioThreads;
        maxQueuedOps = b.maxQueuedOps;
        retryAttempts = b.retryAttempts;
        retryBackoffMinMs = b.retryBackoffMinMs;
        retryBackoffMaxMs = b.retryBackoffMaxMs;
        fileCapacityBytes = b.fileCapacityBytes;
        fileQuotaBytes = b.fileQuotaBytes;
        fileDirectIo = b.fileDirectIo;
        fileFsync = b.fileFsync;
        redisTimeoutMs = b.redisTimeoutMs;
        redisUser = b.redisUser;
        redisPassword = b.redisPassword;
        redisTlsCaCertificate = b.redisTlsCaCertificate;
        redisConnections = b.redisConnections;
        redisTtlSeconds = b.redisTtlSeconds;
    }

    /** Defaults everywhere. */
    public static StoreConfig defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Keys per call at most (default 128). */
    public int maxBatchPages() {
        return maxBatchPages;
    }

    /** I/O threads of the store (default 2). */
    public int ioThreads() {
        return ioThreads;
    }

    /** Operations queued beyond the running ones before new ones are REJECTED (default 1024). */
    public int maxQueuedOps() {
        return maxQueuedOps;
    }

    /** Attempts of a batch on backend errors, the first included (default 3). */
    public int retryAttempts() {
        return retryAttempts;
    }

    /** First backoff after a backend error (default 20 ms); doubles per failure up to the max. */
    public long retryBackoffMinMs() {
        return retryBackoffMinMs;
    }

    /** Longest backoff (default 2000 ms). */
    public long retryBackoffMaxMs() {
        return retryBackoffMaxMs;
    }

    /** File backend: bytes kept at most, evicting least recently used pages (0 = unlimited, default). */
    public long fileCapacityBytes() {
        return fileCapacityBytes;
    }

    /**
     * File backend: bytes the store's objects may hold before a write fails as on a full disk (0 = no quota,
     * default). Unlike {@link #fileCapacityBytes()} nothing is evicted: a write that would pass the quota fails
     * with the {@code IOException} a full file system gives ({@code "No space left on device"}), so the store's
     * retry, backoff and {@code FAILED} handling of a full disk can be exercised without root (a small file
     * system needs a mount). Counted over the objects this store knows (found at open, plus its own puts, less
     * its evictions and removals): several processes sharing a directory each count their own view.
     */
    public long fileQuotaBytes() {
        return fileQuotaBytes;
    }

    /** File backend: read and write page data with {@code O_DIRECT} where sizes allow (default false). */
    public boolean fileDirectIo() {
        return fileDirectIo;
    }

    /** File backend: fsync each object before publishing it (survives power loss; default false). */
    public boolean fileFsync() {
        return fileFsync;
    }

    /** Redis: connect and socket timeout (default 5000 ms). */
    public long redisTimeoutMs() {
        return redisTimeoutMs;
    }

    /** Redis: ACL user overriding the URL's, or null. */
    public String redisUser() {
        return redisUser;
    }

    /** Redis: password overriding the URL's, or null. Never printed. */
    public String redisPassword() {
        return redisPassword;
    }

    /** Redis over TLS: a PEM CA certificate to trust instead of the JVM's default trust store, or null. */
    public Path redisTlsCaCertificate() {
        return redisTlsCaCertificate;
    }

    /** Redis: pooled connections per server (default: I/O threads). */
    public int redisConnections() {
        return redisConnections;
    }

    /**
     * Redis: the time to live every put gives its value ({@code SET ... EX}), so a shared server under its default
     * {@code maxmemory-policy noeviction} sheds pages nobody rewrote instead of refusing writes once full; 0 (the
     * default): none. A page that expired is a miss (a read that finds it gone announces its removal); each write
     * of a page restarts its time.
     */
    public long redisTtlSeconds() {
        return redisTtlSeconds;
    }

    @Override
    public String toString() {
        return "StoreConfig{maxBatchPages=" + maxBatchPages + ", ioThreads=" + ioThreads + ", maxQueuedOps="
                + maxQueuedOps + ", retryAttempts=" + retryAttempts + ", retryBackoffMs=" + retryBackoffMinMs
                + ".." + retryBackoffMaxMs + ", fileCapacityBytes=" + fileCapacityBytes
                + ", fileQuotaBytes=" + fileQuotaBytes
                + ", fileDirectIo="
                + fileDirectIo + ", fileFsync=" + fileFsync + ", redisTimeoutMs=" + redisTimeoutMs
                + ", redisUser=" + (redisUser == null ? "-" : "set") + ", redisPassword="
                + (redisPassword == null ? "-" : "***") + ", redisTlsCaCertificate=" + redisTlsCaCertificate
                + ", redisConnections=" + redisConnections + ", redisTtlSeconds=" + redisTtlSeconds + "}";
    }

    /** Builds a {@link StoreConfig}; not thread-safe. */
    public static final class Builder {
        private int maxBatchPages = DEFAULT_MAX_BATCH_PAGES;
        private int ioThreads = 2;
        private int maxQueuedOps = 1024;
        private int retryAttempts = 3;
        private long retryBackoffMinMs = 20;
        private long retryBackoffMaxMs = 2000;
        private long fileCapacityBytes;
        private long fileQuotaBytes;
        private boolean fileDirectIo;
        private boolean fileFsync;
        private long redisTimeoutMs = 5000;
        private String redisUser;
        private String redisPassword;
        private Path redisTlsCaCertificate;
        private int redisConnections;
        private long redisTtlSeconds;

        private Builder() {
        }

        public Builder maxBatchPages(int v) {
            maxBatchPages = v;
            return this;
        }

        public Builder ioThreads(int v) {
            ioThreads = v;
            return this;
        }

        public Builder maxQueuedOps(int v) {
            maxQueuedOps = v;
            return this;
        }

        public Builder retryAttempts(int v) {
            retryAttempts = v;
            return this;
        }

        public Builder retryBackoffMs(long minMs, long maxMs) {
            retryBackoffMinMs = minMs;
            retryBackoffMaxMs = maxMs;
            return this;
        }

        public Builder fileCapacityBytes(long v) {
            fileCapacityBytes = v;
            return this;
        }

        /** See {@link StoreConfig#fileQuotaBytes()}. */
        public Builder fileQuotaBytes(long v) {
            fileQuotaBytes = v;
            return this;
        }

        public Builder fileDirectIo(boolean v) {
            fileDirectIo = v;
            return this;
        }

        public Builder fileFsync(boolean v) {
            fileFsync = v;
            return this;
        }

        public Builder redisTimeoutMs(long v) {
            redisTimeoutMs = v;
            return this;
        }

        /** ACL user and password (either may be null to keep the URL's). */
        public Builder redisCredentials(String user, String password) {
            redisUser = user;
            redisPassword = password;
            return this;
        }

        public Builder redisTlsCaCertificate(Path v) {
            redisTlsCaCertificate = v;
            return this;
        }

        public Builder redisConnections(int v) {
            redisConnections = v;
            return this;
        }

        /** See {@link StoreConfig#redisTtlSeconds()}. */
        public Builder redisTtlSeconds(long v) {
            redisTtlSeconds = v;
            return this;
        }

        /**
         * Validates and builds.
         *
         * @throws IllegalArgumentException naming the setting and its valid range
         */
        public StoreConfig build() {
            check(maxBatchPages >= 1 && maxBatchPages <= 65536, "maxBatchPages must be in [1, 65536], was " + maxBatchPages);
            check(ioThreads >= 1 && ioThreads <= 256, "ioThreads must be in [1, 256], was " + ioThreads);
            check(maxQueuedOps >= 1, "maxQueuedOps must be >= 1, was " + maxQueuedOps);
            check(retryAttempts >= 1 && retryAttempts <= 100, "retryAttempts must be in [1, 100], was " + retryAttempts);
            check(retryBackoffMinMs >= 0 && retryBackoffMaxMs >= retryBackoffMinMs,
                    "retry backoff must satisfy 0 <= min <= max, was " + retryBackoffMinMs + ".." + retryBackoffMaxMs + " ms");
            check(fileCapacityBytes >= 0, "fileCapacityBytes must be >= 0 (0 = unlimited), was " + fileCapacityBytes);
            check(fileQuotaBytes >= 0, "fileQuotaBytes must be >= 0 (0 = no quota), was " + fileQuotaBytes);
            check(redisTimeoutMs >= 1 && redisTimeoutMs <= Integer.MAX_VALUE,
                    "redisTimeoutMs must be in [1, " + Integer.MAX_VALUE + "], was " + redisTimeoutMs);
            if (redisConnections == 0) {
                redisConnections = ioThreads;
            }
            check(redisConnections >= 1, "redisConnections must be >= 1, was " + redisConnections);
            check(redisTtlSeconds >= 0, "redisTtlSeconds must be >= 0 (0 = none), was " + redisTtlSeconds);
            return new StoreConfig(this);
        }

        private static void check(boolean ok, String message) {
            if (!ok) {
                throw new IllegalArgumentException(message);
            }
        }
    }
}
