package io.hicache.core.internal;

import java.util.ArrayList;
import java.util.function.Function;

/**
 * The controller's forward slots and the handles given out with them, with the slot lease: a slot taken by
 * {@link #take} returns to the free list only once it is {@linkplain ForwardSlot#reusable() reusable} — its forward
 * acknowledged ({@link #onAcked}) and its handle ended or invalidated. Slots acknowledged before their handle let
 * go wait in a retiring list that {@link #take} and {@link #onAcked} reclaim from. Handles without a slot (forwards
 * with nothing to back up) come from a pool of their own that grows on demand.
 *
 * <p>Owned by the scheduler thread; allocation-free once every slot has a handle and the empty-handle pool covers
 * the forwards open at once.
 */
final class SlotPool {
    private final ForwardSlot[] slots;
    private final ForwardSlot[] free;
    private int freeCount;
    private final ForwardSlot[] retiring;
    private int retiringCount;
    private final Function<ForwardSlot, ForwardHandle> newHandle;
    private final ArrayList<ForwardHandle> emptyHandles = new ArrayList<>();
    private long generation;

    SlotPool(ForwardSlot[] slots, Function<ForwardSlot, ForwardHandle> newHandle) {
        this.slots = slots;
        this.newHandle = newHandle;
        this.free = new ForwardSlot[slots.length];
        this.retiring = new ForwardSlot[slots.length];
        for (int i = slots.length - 1; i >= 0; i--) {
            slots[i].handle = newHandle.apply(slots[i]);
            free[freeCount++] = slots[i];
        }
    }

    ForwardSlot[] all() {
        return slots;
    }

    int capacity() {
        return slots.length;
    }

    /** A free slot reset to a new generation (its handle not yet begun), or null when every slot is leased. */
    ForwardSlot take() {
        if (freeCount == 0) {
            reclaim();
            if (freeCount == 0) {
                return null;
            }
        }
        ForwardSlot slot = free[--freeCount];
        free[freeCount] = null;
        slot.reset(++generation);
        if (slot.handle == null) {
            slot.handle = newHandle.apply(slot); // the previous one was invalidated: never handed out again
        }
        return slot;
    }

    /** The forward of {@code slot} was acknowledged; the slot is free once its handle let go too. */
    void onAcked(ForwardSlot slot) {
        slot.acked = true;
        java.util.Arrays.fill(slot.backups, 0, slot.backupCount, null);
        slot.backupCount = 0;
        if (slot.reusable()) {
            free[freeCount++] = slot;
        } else {
            retiring[retiringCount++] = slot;
        }
    }

    /**
     * Revokes the lease of {@code slot}'s forward: its handle throws at its next hook and lets go of the slot. The
     * handle object is retired with it.
     */
    void revoke(ForwardSlot slot) {
        slot.revokedGeneration = slot.generation;
        slot.handle = null;
    }

    /** Slots acknowledged whose handle has not let go yet. */
    int retiring() {
        return retiringCount;
    }

    private void reclaim() {
        int kept = 0;
        for (int i = 0; i < retiringCount; i++) {
            ForwardSlot s = retiring[i];
            retiring[i] = null;
            if (s.reusable()) {
                free[freeCount++] = s;
            } else {
                retiring[kept++] = s;
            }
        }
        retiringCount = kept;
    }

    /** A handle for a forward without backups: one that ended earlier, or a new one. */
    ForwardHandle emptyHandle(long generationOfEmpty) {
        for (int i = 0; i < emptyHandles.size(); i++) {
            ForwardHandle h = emptyHandles.get(i);
            if (h.released()) {
                h.begin(generationOfEmpty);
                return h;
            }
        }
        ForwardHandle h = newHandle.apply(null);
        emptyHandles.add(h);
        h.begin(generationOfEmpty);
        return h;
    }
}
