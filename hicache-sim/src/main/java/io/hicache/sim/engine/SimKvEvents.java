package io.hicache.sim.engine;

import io.hicache.core.internal.HiCacheController;
import io.hicache.events.KvEventPublisher;

/**
 * The KV-event publisher of the run in progress (set by {@code replay --kv-events}), which every instance
 * attaches its rank-0 controller to as its data-parallel rank when it starts running, on its own scheduler
 * thread. One run at a time per process: the command line sets it before the run and clears it after.
 */
public final class SimKvEvents {
    private static volatile KvEventPublisher current;

    private SimKvEvents() {
    }

    /** Makes {@code publisher} (null for none) the one instances attach to. */
    public static void set(KvEventPublisher publisher) {
        current = publisher;
    }

    /** Attaches instance {@code index}'s controller, if a publisher is set. Its scheduler thread. */
    static void attach(int index, HiCacheController controller) {
        KvEventPublisher p = current;
        if (p != null) {
            p.attach(controller, index);
        }
    }
}
