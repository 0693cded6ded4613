package io.hicache.sim.engine;

import io.hicache.core.internal.HiCacheController;
import io.hicache.events.KvEventPublisher;
import io.hicache.radix.RadixNode;
import io.hicache.radix.spi.TierObserver;

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
     * Attaches instance {@code index}'s controller to the publisher, if one is set, and to {@code routerIndex}
     * (null when the router does not read events). Its scheduler thread.
     */
    static void attach(int index, HiCacheController controller, EventIndex routerIndex) {
        KvEventPublisher p = current;
        if (p != null) {
            p.attach(controller, index);
        }
        if (routerIndex != null) {
            TierObserver own = KvEventPublisher.observer(controller.pageSize(), 0, routerIndex);
            TierObserver published = controller.tierObserver();
            controller.tierObserver(null);
            controller.tierObserver(published == null ? own : new Both(published, own));
        }
    }

    /** Tells two observers, in order. */
    private record Both(TierObserver a, TierObserver b) implements TierObserver {
        @Override
        public void onDeviceInserted(int[] tokens, int from, int len, int firstNewToken, RadixNode last) {
            a.onDeviceInserted(tokens, from, len, firstNewToken, last);
            b.onDeviceInserted(tokens, from, len, firstNewToken, last);
        }

        @Override
        public void onStored(int tier, RadixNode node) {
            a.onStored(tier, node);
            b.onStored(tier, node);
        }

        @Override
        public void onRemoving(int tier, RadixNode node) {
            a.onRemoving(tier, node);
            b.onRemoving(tier, node);
        }

        @Override
        public void onCleared() {
            a.onCleared();
            b.onCleared();
        }
    }
}
