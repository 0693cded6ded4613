package io.hicache.sim.engine;

import io.hicache.core.HiCache;
import io.hicache.events.KvEventPublisher;

/**
 * KV events in the simulator: the publisher of the run in progress (set by {@code replay --kv-events}), and the
 * delivery lag of the {@code kv-events} router's event stream ({@code --kv-events-lag-ms}). Every instance attaches
 * its rank-0 controller (as its data-parallel rank) when it starts running, on its own scheduler thread: to the
 * publisher, to its router index, or to both. One run at a time per process: the command line sets these before
 * the runs and clears them after.
 */
public final class SimKvEvents {
    private static volatile KvEventPublisher current;
    private static volatile long routerLagNs;

    private SimKvEvents() {
    }

    /** Makes {@code publisher} (null for none) the one instances attach to. */
    public static void set(KvEventPublisher publisher) {
        current = publisher;
    }

    /**
     * Sets the delay between an event and the {@code kv-events} router seeing it (simulated milliseconds).
     *
     * @throws IllegalArgumentException if negative or not finite
     */
    public static void routerLagMs(double ms) {
        if (!(ms >= 0) || Double.isInfinite(ms)) {
            throw new IllegalArgumentException("--kv-events-lag-ms must be a finite number >= 0, got " + ms);
        }
        routerLagNs = (long) (ms * 1e6);
    }

    static long routerLagNs() {
        return routerLagNs;
    }

    /**
     * Attaches instance {@code index}'s rank-0 cache to the publisher, if one is set, and to {@code routerIndex}
     * (null when the router does not read events). Its scheduler thread.
     */
    static void attach(int index, HiCache cache, EventIndex routerIndex) {
        KvEventPublisher p = current;
        if (p != null) {
            p.attach(cache, index);
        }
        if (routerIndex != null) {
            KvEventPublisher.observe(cache, 0, routerIndex);
        }
    }
}
