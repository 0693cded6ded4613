package io.hicache.storage;

/**
 * Configuration of an {@link L3Tier} (the L3 storage tier of a {@link io.hicache.core.HiCache}). Immutable; thread-safe. The compact constructor checks every value and
 * names the bad one.
 *
 * @param writePolicy             when committed host pages go to storage
 * @param hitThreshold            hit count that makes a node eligible under write_through_selective (>= 1)
 * @param prefetchThresholdTokens a prefetch starts only when storage may extend a match by more than this many
 *                                tokens (>= 0; SGLang's default 256)
 * @param prefetchPolicy          when a prefetch's request may run
 * @param timeoutBaseNs           timeout policy: base allowance (>= 0)
 * @param timeoutPer1kTokensNs    timeout policy: allowance per 1,024 prefetched tokens (>= 0)
 * @param prefetchHostShare       share of the host pool prefetches may hold at once, in (0, 1] (default 0.5)
 * @param writeBackStagingPages   pages write-back may hold copied off evicted host pages, awaiting their put (>= 0)
 * @param knownKeysMaxAgeNs       how long (cache clock) a key the tier learnt is stored is taken on its word, so a
 *                                write skips it without asking the store; older ones are asked again (>= 0, default
 *                                60 s): the store may have lost them (restart, flush, its own eviction)
 * @param storeEpochCheckNs       how often (cache clock) the tier asks the store for its epoch
 *                                ({@link PageStore#epoch()}); a new one (restarted empty, flushed) drops every
 *                                remembered key at once (>= 0, default 1 s; 0: whenever the last check answered)
 */
public record StorageTierConfig(StorageWritePolicy writePolicy, int hitThreshold, int prefetchThresholdTokens,
                                PrefetchPolicy prefetchPolicy, long timeoutBaseNs, long timeoutPer1kTokensNs,
                                double prefetchHostShare, int writeBackStagingPages, long knownKeysMaxAgeNs,
                                long storeEpochCheckNs) {

    /**
     * Defaults: write_through, threshold 2, prefetch above 256 tokens, timeout (a request waits for its prefetch to
     * end, at most 1 s + 0.1 s per 1,024 prefetched tokens: under best effort the documented admission pattern
     * {@code if (p == null || p.mayRun())} schedules the request at once and the prefetch never pays), half the pool,
     * remembered keys trusted 60 s, the store's epoch checked every second.
     */
    public static final StorageTierConfig DEFAULT = new StorageTierConfig(StorageWritePolicy.WRITE_THROUGH, 2, 256,
            PrefetchPolicy.TIMEOUT, 1_000_000_000L, 100_000_000L, 0.5, 4096, 60_000_000_000L, 1_000_000_000L);

    /** The configuration of the eight settings before remembered keys aged, with their defaults for the rest. */
    public StorageTierConfig(StorageWritePolicy writePolicy, int hitThreshold, int prefetchThresholdTokens,
                             PrefetchPolicy prefetchPolicy, long timeoutBaseNs, long timeoutPer1kTokensNs,
                             double prefetchHostShare, int writeBackStagingPages) {
        this(writePolicy, hitThreshold, prefetchThresholdTokens, prefetchPolicy, timeoutBaseNs, timeoutPer1kTokensNs,
                prefetchHostShare, writeBackStagingPages, 60_000_000_000L, 1_000_000_000L);
    }

    /** Checks every value. */
    public StorageTierConfig {
        if (writePolicy == null || prefetchPolicy == null) {
            throw new IllegalArgumentException("writePolicy and prefetchPolicy must not be null");
        }
        if (hitThreshold < 1) {
            throw new IllegalArgumentException("hitThreshold must be >= 1, got " + hitThreshold);
        }
        if (prefetchThresholdTokens < 0) {
            throw new IllegalArgumentException("prefetchThresholdTokens must be >= 0, got " + prefetchThresholdTokens);
        }
        if (timeoutBaseNs < 0 || timeoutPer1kTokensNs < 0) {
            throw new IllegalArgumentException("prefetch timeouts must be >= 0 ns, got " + timeoutBaseNs + " and "
                    + timeoutPer1kTokensNs);
        }
        if (!(prefetchHostShare > 0 && prefetchHostShare <= 1)) {
            throw new IllegalArgumentException("prefetchHostShare must be in (0, 1], got " + prefetchHostShare);
        }
        if (writeBackStagingPages < 0) {
            throw new IllegalArgumentException("writeBackStagingPages must be >= 0, got " + writeBackStagingPages);
        }
        if (knownKeysMaxAgeNs < 0 || storeEpochCheckNs < 0) {
            throw new IllegalArgumentException("knownKeysMaxAgeNs and storeEpochCheckNs must be >= 0 ns, got "
                    + knownKeysMaxAgeNs + " and " + storeEpochCheckNs);
        }
    }

    /** This configuration with another write policy. */
    public StorageTierConfig withWritePolicy(StorageWritePolicy p) {
        return new StorageTierConfig(p, hitThreshold, prefetchThresholdTokens, prefetchPolicy, timeoutBaseNs,
                timeoutPer1kTokensNs, prefetchHostShare, writeBackStagingPages, knownKeysMaxAgeNs, storeEpochCheckNs);
    }

    /** This configuration with another prefetch policy. */
    public StorageTierConfig withPrefetchPolicy(PrefetchPolicy p) {
        return new StorageTierConfig(writePolicy, hitThreshold, prefetchThresholdTokens, p, timeoutBaseNs,
                timeoutPer1kTokensNs, prefetchHostShare, writeBackStagingPages, knownKeysMaxAgeNs, storeEpochCheckNs);
    }

    /** This configuration with another prefetch threshold. */
    public StorageTierConfig withPrefetchThresholdTokens(int tokens) {
        return new StorageTierConfig(writePolicy, hitThreshold, tokens, prefetchPolicy, timeoutBaseNs,
                timeoutPer1kTokensNs, prefetchHostShare, writeBackStagingPages, knownKeysMaxAgeNs, storeEpochCheckNs);
    }

    /** This configuration with another host share. */
    public StorageTierConfig withPrefetchHostShare(double share) {
        return new StorageTierConfig(writePolicy, hitThreshold, prefetchThresholdTokens, prefetchPolicy, timeoutBaseNs,
                timeoutPer1kTokensNs, share, writeBackStagingPages, knownKeysMaxAgeNs, storeEpochCheckNs);
    }

    /** This configuration with other bounds on remembered keys: their age, and how often the store's epoch is asked. */
    public StorageTierConfig withKnownKeys(long maxAgeNs, long epochCheckNs) {
        return new StorageTierConfig(writePolicy, hitThreshold, prefetchThresholdTokens, prefetchPolicy, timeoutBaseNs,
                timeoutPer1kTokensNs, prefetchHostShare, writeBackStagingPages, maxAgeNs, epochCheckNs);
    }

    /** The timeout policy's deadline for a prefetch of {@code tokens} tokens, relative to its start. */
    public long timeoutNs(long tokens) {
        return timeoutBaseNs + (tokens * timeoutPer1kTokensNs + 1023) / 1024;
    }
}
