package io.hicache.it.dst;

import io.hicache.core.internal.LoadOp;
import io.hicache.radix.RadixNode;

import java.util.Arrays;
import java.util.BitSet;

/**
 * One load of the {@link DstHarness} load-back model, identical id on every rank: its operation on each rank and
 * what the checks learn of it. Single-threaded; the harness's load steps own it.
 */
final class LoadRec {
    final int id;
    final LoadOp[] op;
    /** Per rank, per chain page: the host page it is loaded from, or -1 where another rank owns the page. */
    final int[][] hostOf;
    final boolean[][] draftOf;
    final boolean[] terminalSeen;
    final RadixNode[] locked;
    /** Per rank: chain pages attached to the tree when the load was agreed. */
    final BitSet[] attached;
    /** Per rank: chain pages whose bytes a forward waiting on the load saw differ from the host copy. */
    final BitSet[] badRead;
    final boolean[] computeDone;
    Batch batch;
    boolean forward;

    LoadRec(int id, LoadOp[] op, int cp) {
        this.id = id;
        this.op = op;
        int pages = op[0].pageCount();
        this.hostOf = new int[cp][pages];
        for (int[] row : hostOf) {
            Arrays.fill(row, -1);
        }
        this.draftOf = new boolean[cp][pages];
        this.terminalSeen = new boolean[cp];
        this.locked = new RadixNode[cp];
        this.attached = new BitSet[cp];
        this.badRead = new BitSet[cp];
        for (int r = 0; r < cp; r++) {
            attached[r] = new BitSet();
            badRead[r] = new BitSet();
        }
        this.computeDone = new boolean[cp];
    }
}
