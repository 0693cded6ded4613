package io.hicache.it.dst;

import io.hicache.radix.RadixNode;

/**
 * A request of the {@link DstHarness} engine: its last node is locked on every rank until its forward's compute
 * work ran everywhere. Single-threaded; the harness's engine steps own it.
 */
final class Request {
    final RadixNode[] last;
    final boolean[] computeDone;
    final int[] newPages;
    /** The request's tokens, and the first page its forward writes (the ones before were present). */
    final int[] tokens;
    final int firstNewPage;
    boolean ended;

    Request(RadixNode[] last, int cp, int[] newPages, int[] tokens, int firstNewPage) {
        this.last = last;
        this.computeDone = new boolean[cp];
        this.newPages = newPages;
        this.tokens = tokens;
        this.firstNewPage = firstNewPage;
    }
}
