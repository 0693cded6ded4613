package io.hicache.sim.engine;

import io.hicache.events.BlockEventSink;
import io.hicache.events.BlockHasher;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.function.LongSupplier;

/**
 * What the {@code kv-events} router knows about one instance: an index of block hashes per tier built only from
 * the KV events that instance published, each applied {@code lagNs} of simulated time after it happened (the
 * delivery delay of a real event stream), as NVIDIA Dynamo's KV router keeps one. The instance's scheduler thread
 * appends events ({@link BlockEventSink}); the router thread reads between phases, while that thread is parked.
 */
final class EventIndex implements BlockEventSink {
    private static final byte STORED = 1;
    private static final byte REMOVED = 2;
    private static final byte CLEARED = 3;

    private record Event(long atNs, byte kind, int tier, long hash) {
    }

    private final LongSupplier clock;
    private final long lagNs;
    private final ArrayDeque<Event> inFlight = new ArrayDeque<>();
    /** Block hash to a bit set of the tiers holding it (bit = 1 << tier). */
    private final HashMap<Long, Integer> held = new HashMap<>();
    long eventsApplied;

    EventIndex(LongSupplier clock, long lagNs) {
        this.clock = clock;
        this.lagNs = lagNs;
    }

    @Override
    public void stored(int tier, long hash, long parent) {
        inFlight.add(new Event(clock.getAsLong(), STORED, tier, hash));
    }

    @Override
    public void removed(int tier, long hash) {
        inFlight.add(new Event(clock.getAsLong(), REMOVED, tier, hash));
    }

    @Override
    public void cleared() {
        inFlight.add(new Event(clock.getAsLong(), CLEARED, 0, 0));
    }

    /** Applies the events delivered by {@code nowNs}, those that happened at or before {@code nowNs - lag}. */
    void deliverUntil(long nowNs) {
        long cutoff = nowNs - lagNs;
        Event e;
        while ((e = inFlight.peek()) != null && e.atNs() <= cutoff) {
            inFlight.poll();
            eventsApplied++;
            switch (e.kind()) {
                case STORED -> held.merge(e.hash(), 1 << e.tier(), (a, b) -> a | b);
                case REMOVED -> {
                    Integer was = held.get(e.hash());
                    if (was != null) {
                        int now = was & ~(1 << e.tier());
                        if (now == 0) {
                            held.remove(e.hash());
                        } else {
                            held.put(e.hash(), now);
                        }
                    }
                }
                default -> held.clear();
            }
        }
    }

    /**
     * Leading blocks of {@code keys} (one key per simulated page) the index holds on any tier, as the
     * tree-reading router counts device plus committed host pages.
     */
    int overlapPages(int[] keys) {
        long h = BlockHasher.root(0);
        for (int i = 0; i < keys.length; i++) {
            h = BlockHasher.page(h, keys, i, 1);
            if (!held.containsKey(h)) {
                return i;
            }
        }
        return keys.length;
    }

    /**
     * The leading blocks of {@code keys} the index holds on any tier (as {@link #overlapPages}), each counted at the
     * best weight of the tiers it is held on.
     */
    double weightedOverlapPages(int[] keys, io.hicache.sim.TierWeights weights) {
        long h = BlockHasher.root(0);
        double sum = 0;
        for (int i = 0; i < keys.length; i++) {
            h = BlockHasher.page(h, keys, i, 1);
            Integer tiers = held.get(h);
            if (tiers == null) {
                break;
            }
            sum += weights.ofMask(tiers);
        }
        return sum;
    }
}
