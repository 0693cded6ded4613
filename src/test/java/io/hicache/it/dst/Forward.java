package io.hicache.it.dst;

import io.hicache.core.internal.ForwardHandle;

import java.util.List;

/**
 * A forward of the {@link DstHarness} engine in progress: its hooks and writes, in plan order, identical on every
 * rank. Single-threaded; the harness's engine steps own it.
 */
final class Forward {
    static final int TARGET = 1;
    static final int TARGET_NO_HOOK = 2;
    static final int DRAFT = 3;
    static final int DRAFT_NO_HOOK = 4;
    static final int END = 5;

    final ForwardHandle[] h;
    final List<Rec> recs;
    final Request req;
    final int[] plan;
    final int id;
    /** Per rank: a hook threw because the forward's lease expired. */
    final boolean[] revoked;
    int pos;

    /** Per rank: backups its handle carries. */
    final int[] backupCounts;

    Forward(ForwardHandle[] h, List<Rec> recs, Request req, int[] plan, int id, int[] backupCounts) {
        this.backupCounts = backupCounts;
        this.h = h;
        this.recs = recs;
        this.req = req;
        this.plan = plan;
        this.id = id;
        this.revoked = new boolean[h.length];
    }
}
