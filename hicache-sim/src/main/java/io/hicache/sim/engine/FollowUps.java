package io.hicache.sim.engine;

import io.hicache.sim.trace.Request;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Closed-loop turns ({@code ServingConfig.closedLoop}): a request whose trace names the request it follows
 * ({@link Request#parentId()}) is held until that one has finished, as a chat client sends its next question once it
 * has read the answer. Knows the requests served so far by trace id (finished ones are pruned now and then: a turn
 * that names one of them no longer waits) and the held requests in trace order. Owned by the replay's thread; it
 * reads {@link ServedRequest#finishNs} between the fleet's phases, which order the instances' writes before.
 */
final class FollowUps {
    /** A request by trace id: held (no {@code served} yet) or routed. */
    private static final class Turn {
        ServedRequest served;
    }

    private static final int PRUNE_EVERY = 4096;

    private final Map<Long, Turn> byId = new HashMap<>();
    private final List<Request> held = new ArrayList<>();
    private final List<Request> released = new ArrayList<>();
    private int sincePrune;
    private long heldTotal;

    /** True when {@code r} follows a request that has not finished: hold it ({@link #hold}). */
    boolean mustWait(Request r) {
        if (r.parentId() < 0) {
            return false;
        }
        Turn parent = byId.get(r.parentId());
        return parent != null && (parent.served == null || parent.served.finishNs < 0);
    }

    /** Holds {@code r} until the request it follows has finished. */
    void hold(Request r) {
        byId.put(r.id(), new Turn());
        held.add(r);
        heldTotal++;
    }

    /** {@code r} was routed as {@code q}: requests that follow it wait for {@code q}. */
    void served(Request r, ServedRequest q) {
        byId.computeIfAbsent(r.id(), k -> new Turn()).served = q;
        if (++sincePrune >= PRUNE_EVERY) {
            sincePrune = 0;
            byId.values().removeIf(t -> t.served != null && t.served.finishNs >= 0);
        }
    }

    /** Whether any request is held. */
    boolean waiting() {
        return !held.isEmpty();
    }

    /**
     * Takes the held requests whose predecessor has finished, in trace order (the list is reused: read it before the
     * next call).
     */
    List<Request> releasable() {
        released.clear();
        for (Iterator<Request> it = held.iterator(); it.hasNext(); ) {
            Request r = it.next();
            if (!mustWait(r)) {
                released.add(r);
                it.remove();
            }
        }
        return released;
    }

    /** Requests held so far (they arrived later than their trace time). */
    long heldTotal() {
        return heldTotal;
    }

    /** Requests held now. */
    int heldNow() {
        return held.size();
    }
}
