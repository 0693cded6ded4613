package io.hicache.events;

/**
 * Receives a cache's block events directly, in process, without encoding or sockets (see
 * {@link KvEventPublisher#observer(int, long, BlockEventSink)}): what a router colocated with the engine, or the
 * simulator's event-driven router, consumes. Called on the cache's scheduler thread, synchronously, once per
 * block; implementations must be quick and must not call back into the cache.
 */
public interface BlockEventSink {
    /** Tier codes: {@code 0} GPU, {@code 1} CPU, {@code 2} the L3 tier. */
    int GPU = 0;
    /** The host tier. */
    int CPU = 1;
    /** The L3 tier. */
    int L3 = 2;

    /**
     * A block is now on {@code tier}.
     *
     * @param parent its parent's hash, or -1 for a first block
     */
    void stored(int tier, long hash, long parent);

    /** A block left {@code tier}. */
    void removed(int tier, long hash);

    /** Every block left every tier. */
    void cleared();
}
