package io.hicache.it.dst;

import java.util.Arrays;
import java.util.List;

/**
 * The loads one startLoading of the {@link DstHarness} load-back model issued, with per rank its token and the
 * timing of its load-stream operations. Single-threaded; the harness's load steps own it.
 */
final class Batch {
    final List<LoadRec> recs;
    final long[] token;
    final long[] pollsAtIssue;
    final long[] seqFrom;
    final long[] seqTo;
    final long[][] recordEndNs;
    final long[][] copiesDoneNs;
    final int[] nextRecord;
    final long[] maxCopyEndNs;

    Batch(List<LoadRec> recs, int cp, int records) {
        this.recs = recs;
        this.token = new long[cp];
        this.pollsAtIssue = new long[cp];
        this.seqFrom = new long[cp];
        this.seqTo = new long[cp];
        this.recordEndNs = new long[cp][records];
        this.copiesDoneNs = new long[cp][records];
        for (long[] row : recordEndNs) {
            Arrays.fill(row, -1);
        }
        this.nextRecord = new int[cp];
        this.maxCopyEndNs = new long[cp];
    }

    /** True when every load of the batch is loaded or failed on rank {@code r} (its event set is free there). */
    boolean terminalOn(int r) {
        for (LoadRec rec : recs) {
            if (DstHarness.loadClass(rec.op[r].state()) == 0) {
                return false;
            }
        }
        return true;
    }

    /** True when no load of the batch is still in {@code loadRecs} (the loads not yet finished). */
    boolean finished(List<LoadRec> loadRecs) {
        for (LoadRec rec : recs) {
            if (loadRecs.contains(rec)) {
                return false;
            }
        }
        return true;
    }

    String ids() {
        StringBuilder sb = new StringBuilder("[");
        for (LoadRec rec : recs) {
            sb.append(sb.length() > 1 ? "," : "").append(rec.id);
        }
        return sb.append(']').toString();
    }
}
