package io.hicache.testkit;

import io.hicache.core.cp.RankAgreement;

import java.util.HashMap;
import java.util.Map;

/**
 * What the old {@code RankAgreement} javadoc invited: an all-reduce inside {@code contribute}, with a timeout so that a
 * dead peer cannot hang it. {@code contribute} posts this rank's words and waits (blocking) until every rank posted
 * the round or the timeout passed; then the rank's result is the minimum, or degraded naming the ranks still missing.
 * A rank that arrives after the others gave up finds every contribution there and decides the round normally. The
 * conformance kit must catch it ({@link NaiveAllReduceAgreementConformanceTest}). Thread-safe (one monitor).
 */
final class NaiveAllReduceAgreement implements RankAgreement {
    private final int size;
    private final long timeoutNs;
    private final Map<Long, long[][]> posted = new HashMap<>();
    private final java.util.List<Map<Long, Result>> results = new java.util.ArrayList<>();

    NaiveAllReduceAgreement(int size, long timeoutNs) {
        this.size = size;
        this.timeoutNs = timeoutNs;
        for (int r = 0; r < size; r++) {
            results.add(new HashMap<>());
        }
    }

    @Override
    public int groupSize() {
        return size;
    }

    @Override
    public synchronized void contribute(int rank, long round, Contribution contribution) {
        long[][] slot = posted.computeIfAbsent(round, k -> new long[size][]);
        slot[rank] = new long[contribution.width()];
        contribution.copyTo(slot[rank], 0);
        notifyAll();
        long deadline = System.nanoTime() + timeoutNs;
        long missing;
        while ((missing = missing(slot)) != 0 && System.nanoTime() < deadline) {
            try {
                wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        Result out = new Result();
        if (missing != 0) {
            out.setDegraded(missing);
        } else {
            long[] min = slot[0].clone();
            for (long[] words : slot) {
                for (int i = 0; i < min.length; i++) {
                    min[i] = Math.min(min[i], words[i]);
                }
            }
            out.setDecided(min, 0, min.length);
        }
        results.get(rank).put(round, out);
    }

    private long missing(long[][] slot) {
        long m = 0;
        for (int r = 0; r < size; r++) {
            if (slot[r] == null) {
                m |= 1L << r;
            }
        }
        return m;
    }

    @Override
    public synchronized boolean tryResult(int rank, long round, Result out) {
        Result r = results.get(rank).get(round);
        if (r == null) {
            return false;
        }
        if (r.decided()) {
            long[] w = new long[r.width()];
            for (int i = 0; i < w.length; i++) {
                w[i] = r.word(i);
            }
            out.setDecided(w, 0, w.length);
        } else {
            out.setDegraded(r.failedRanks());
        }
        return true;
    }

    @Override
    public void leave(int rank) {
        // a plain all-reduce has no notion of leaving: the others find out through their timeout
    }

    @Override
    public long failureDetectionNs() {
        return timeoutNs;
    }
}
