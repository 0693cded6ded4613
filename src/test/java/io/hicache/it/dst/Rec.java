package io.hicache.it.dst;

import io.hicache.core.internal.Backup;

/**
 * One reservation of the {@link DstHarness} model: the backup of one node on each rank (null on a rank whose schedule
 * skipped it), the device pages of its node and the node's place in its sequence. The sequence number is rank 0's
 * (the first rank's that reserved it); it is identical on every rank until a divergent step. Single-threaded; the
 * harness owns it.
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
