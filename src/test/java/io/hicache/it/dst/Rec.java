package io.hicache.it.dst;

import io.hicache.core.internal.Backup;

/**
 * One reservation of the {@link DstHarness} model, identical sequence number on every rank: its backup on each
 * rank, the device pages of its node and the node's place in its sequence. Single-threaded; the harness owns it.
 */
final class Rec {
    final long seq;
    final Backup[] b;
    final int[] allDev;
    final boolean withDraft;
    final int startPage;
    final int pageCount;
    final int group;

    Rec(long seq, Backup[] b, int[] allDev, boolean withDraft, int startPage, int pageCount, int group) {
        this.seq = seq;
        this.b = b;
        this.allDev = allDev;
        this.withDraft = withDraft;
        this.startPage = startPage;
        this.pageCount = pageCount;
        this.group = group;
    }
}
