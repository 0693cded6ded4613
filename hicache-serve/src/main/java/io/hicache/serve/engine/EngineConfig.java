package io.hicache.serve.engine;

import io.hicache.core.LoadOverlap;
import io.hicache.core.WritePolicy;
import io.hicache.serve.model.ModelSpec;
import io.hicache.storage.PrefetchPolicy;
import io.hicache.storage.StorageWritePolicy;

/**
 * The engine's settings, validated by the compact constructor (each message names the flag). Immutable.
 *
 * @param model                    the seeded model
 * @param radixCache               false: no prefix cache at all (every prompt is computed; SGLang's
 *                                 {@code --disable-radix-cache})
 * @param deviceTokens             the device KV pool, in tokens (a multiple of the page size)
 * @param hostTokens               the host tier, in tokens; 0 for none (device only)
 * @param pageSize                 tokens per KV page
 * @param chunkTokens              prefill chunk (a multiple of the page size)
 * @param maxRunning               requests admitted at once (prefilling or decoding)
 * @param maxQueued                requests waiting beyond those; one more gets 503
 * @param writePolicy              the cache's write policy (device to host)
 * @param loadOverlap              how host hits are loaded back
 * @param storage                  the L3 store's location ({@code file:DIR}, {@code redis://...}) or null
 * @param storageWritePolicy       host to L3
 * @param prefetchPolicy           when a request waits for its L3 prefetch
 * @param prefetchThresholdTokens  a prefetch starts only when L3 may add more than this many tokens
 * @param kvEvents                 the KV event endpoint (ZeroMQ, vLLM's format) or null
 * @param seed                     the engine's sampling seed (requests without their own)
 */
public record EngineConfig(ModelSpec model, boolean radixCache, int deviceTokens, int hostTokens, int pageSize,
                           int chunkTokens, int maxRunning, int maxQueued, WritePolicy writePolicy,
                           LoadOverlap loadOverlap, String storage, StorageWritePolicy storageWritePolicy,
                           PrefetchPolicy prefetchPolicy, int prefetchThresholdTokens, String kvEvents, long seed) {
    public EngineConfig {
        if (pageSize < 1 || pageSize > 1024 || Integer.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("--page-size must be a power of two in 1..1024, got " + pageSize);
        }
        if (chunkTokens < pageSize || chunkTokens % pageSize != 0 || chunkTokens > model.contextTokens()) {
            throw new IllegalArgumentException("--chunk-tokens must be a multiple of the page size " + pageSize
                + " between " + pageSize + " and the context " + model.contextTokens() + ", got " + chunkTokens);
        }
        if (radixCache && (deviceTokens < pageSize || deviceTokens % pageSize != 0)) {
            throw new IllegalArgumentException("--device-tokens must be a positive multiple of the page size " + pageSize
                + ", got " + deviceTokens);
        }
        if (hostTokens < 0 || hostTokens % pageSize != 0) {
            throw new IllegalArgumentException("--host-tokens must be 0 or a multiple of the page size " + pageSize
                + ", got " + hostTokens);
        }
        if (maxRunning < 1 || maxRunning > 4096) {
            throw new IllegalArgumentException("--max-running must be in 1..4096, got " + maxRunning);
        }
        if (maxQueued < 0 || maxQueued > 1 << 20) {
            throw new IllegalArgumentException("--max-queued must be in 0..1048576, got " + maxQueued);
        }
        if (storage != null && (!radixCache || hostTokens == 0)) {
            throw new IllegalArgumentException("--storage needs the prefix cache and a host tier (--host-tokens > 0)");
        }
        if (prefetchThresholdTokens < 0) {
            throw new IllegalArgumentException("--prefetch-threshold-tokens must be >= 0, got " + prefetchThresholdTokens);
        }
        if (writePolicy == null || loadOverlap == null || storageWritePolicy == null || prefetchPolicy == null) {
            throw new IllegalArgumentException("policies must not be null");
        }
    }

    /** Whether the host tier is on. */
    public boolean hostTier() {
        return radixCache && hostTokens > 0;
    }

    /** Device pages. */
    public int devicePages() {
        return deviceTokens / pageSize;
    }
}
