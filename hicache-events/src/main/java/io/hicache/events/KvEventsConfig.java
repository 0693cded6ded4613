package io.hicache.events;

import java.util.Objects;

/**
 * Settings of a {@link KvEventPublisher}: where it binds, its topic, and the bounds of its queue, replay buffer
 * and send high-water mark. Immutable; build with {@link #builder(String)}.
 *
 * @param endpoint            the PUB socket's ZeroMQ endpoint, e.g. {@code tcp://*:5557}
 * @param replayEndpoint      the replay ROUTER socket's endpoint, or null for none
 * @param topic               the first frame of every message ("" by default, as vLLM's)
 * @param dataParallelRank    the rank a cache attached with {@link KvEventPublisher#attach(io.hicache.core.HiCache, KvEventsConfig)}
 *                            publishes as
 * @param queueCapacity       records each attached cache's queue holds (a power of two); a record is a page, or
 *                            two or more pages of one node stored or removed together
 * @param overflow            what a full queue does
 * @param replayBufferBatches batches kept for replay (only with a replay endpoint: without one nothing is kept)
 * @param replayBufferBytes   payload bytes kept for replay at most (the oldest batches go first when a new one
 *                            would pass it; a batch larger than it is sent but not kept)
 * @param sendHighWaterMark   the PUB socket's send high-water mark (messages a slow subscriber may queue)
 * @param maxBlocksPerBatch   page records one batch carries at most
 * @param storageMedium       the medium name of the L3 tier's events ("DISK", or the store's name)
 * @param extraKey            hashed into every block hash (a LoRA id or tenant salt; vLLM's extra_keys)
 * @param closeFlushMillis    how long {@link KvEventPublisher#close()} keeps sending what is queued
 */
public record KvEventsConfig(String endpoint, String replayEndpoint, String topic, int dataParallelRank,
                             int queueCapacity, Overflow overflow, int replayBufferBatches, int replayBufferBytes,
                             int sendHighWaterMark,
                             int maxBlocksPerBatch, String storageMedium, long extraKey, long closeFlushMillis) {

    /** The largest {@link #replayBufferBytes()}: 1 GiB. */
    public static final int MAX_REPLAY_BYTES = 1 << 30;

    /** What a full queue does. */
    public enum Overflow {
        /** Overwrite the oldest queued records and count them (engines: never block the scheduler). */
        DROP_OLDEST,
        /** The scheduler thread waits for the publisher (offline tools such as the simulator only). */
        WAIT
    }

    /**
     * @throws IllegalArgumentException naming the first bad setting
     */
    public KvEventsConfig {
        Objects.requireNonNull(endpoint, "endpoint");
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(overflow, "overflow");
        Objects.requireNonNull(storageMedium, "storageMedium");
        if (endpoint.isBlank()) {
            throw new IllegalArgumentException("KV events endpoint must not be blank");
        }
        if (queueCapacity < 2 || Integer.bitCount(queueCapacity) != 1) {
            throw new IllegalArgumentException("KV events queue capacity must be a power of two >= 2, got " + queueCapacity);
        }
        if (replayBufferBatches < 1) {
            throw new IllegalArgumentException("KV events replay buffer must hold >= 1 batch, got " + replayBufferBatches);
        }
        if (replayBufferBytes < 1 || replayBufferBytes > MAX_REPLAY_BYTES) {
            throw new IllegalArgumentException("KV events replay buffer bytes must be in [1, " + MAX_REPLAY_BYTES
                    + "], got " + replayBufferBytes);
        }
        if (sendHighWaterMark < 0) {
            throw new IllegalArgumentException("KV events send high-water mark must be >= 0, got " + sendHighWaterMark);
        }
        if (maxBlocksPerBatch < 1) {
            throw new IllegalArgumentException("KV events batches must carry >= 1 block, got " + maxBlocksPerBatch);
        }
        if (dataParallelRank < 0) {
            throw new IllegalArgumentException("data-parallel rank must be >= 0, got " + dataParallelRank);
        }
        if (closeFlushMillis < 0) {
            throw new IllegalArgumentException("close flush time must be >= 0 ms, got " + closeFlushMillis);
        }
    }

    /** Defaults (vLLM's where it has one) publishing on {@code endpoint}. */
    public static Builder builder(String endpoint) {
        return new Builder(endpoint);
    }

    /** Fluent construction of a {@link KvEventsConfig}. Not thread-safe. */
    public static final class Builder {
        private final String endpoint;
        private String replayEndpoint;
        private String topic = "";
        private int dataParallelRank;
        private int queueCapacity = 1 << 16;
        private Overflow overflow = Overflow.DROP_OLDEST;
        private int replayBufferBatches = 10_000;
        private int replayBufferBytes = 64 << 20;
        private int sendHighWaterMark = 100_000;
        private int maxBlocksPerBatch = 1024;
        private String storageMedium = "DISK";
        private long extraKey;
        private long closeFlushMillis = 1000;

        private Builder(String endpoint) {
            this.endpoint = endpoint;
        }

        /** The replay endpoint (ROUTER), or null for none (the default). */
        public Builder replayEndpoint(String e) {
            this.replayEndpoint = e;
            return this;
        }

        /** The topic frame (default ""). */
        public Builder topic(String t) {
            this.topic = t;
            return this;
        }

        /** The data-parallel rank of a cache attached in one call (default 0). */
        public Builder dataParallelRank(int r) {
            this.dataParallelRank = r;
            return this;
        }

        /** Page records each cache's queue holds, a power of two (default 65536). */
        public Builder queueCapacity(int c) {
            this.queueCapacity = c;
            return this;
        }

        /** What a full queue does (default {@link Overflow#DROP_OLDEST}). */
        public Builder overflow(Overflow o) {
            this.overflow = o;
            return this;
        }

        /** Batches kept for replay (default 10000, as vLLM's buffer_steps). */
        public Builder replayBufferBatches(int n) {
            this.replayBufferBatches = n;
            return this;
        }

        /**
         * Payload bytes kept for replay at most, in [1, {@link #MAX_REPLAY_BYTES}] (default 64 MiB: 10,000 batches of
         * up to 6.7 KB, or fewer larger ones).
         */
        public Builder replayBufferBytes(int n) {
            this.replayBufferBytes = n;
            return this;
        }

        /** PUB send high-water mark (default 100000, as vLLM's hwm). */
        public Builder sendHighWaterMark(int n) {
            this.sendHighWaterMark = n;
            return this;
        }

        /** Page records per batch at most (default 1024). */
        public Builder maxBlocksPerBatch(int n) {
            this.maxBlocksPerBatch = n;
            return this;
        }

        /** The L3 tier's medium name (default "DISK"). */
        public Builder storageMedium(String m) {
            this.storageMedium = m;
            return this;
        }

        /** The extra key hashed into every block hash (default 0: none). */
        public Builder extraKey(long k) {
            this.extraKey = k;
            return this;
        }

        /** How long close keeps sending what is queued (default 1000 ms). */
        public Builder closeFlushMillis(long ms) {
            this.closeFlushMillis = ms;
            return this;
        }

        /** @throws IllegalArgumentException naming the first bad setting */
        public KvEventsConfig build() {
            return new KvEventsConfig(endpoint, replayEndpoint, topic, dataParallelRank, queueCapacity, overflow,
                    replayBufferBatches, replayBufferBytes, sendHighWaterMark, maxBlocksPerBatch, storageMedium, extraKey, closeFlushMillis);
        }
    }
}
