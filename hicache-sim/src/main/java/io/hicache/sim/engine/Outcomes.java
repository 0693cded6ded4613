package io.hicache.sim.engine;

import java.util.Arrays;

/**
 * Per-request outcomes gathered by one instance (TTFT, TPOT, end to end, queueing and arrival, in ns) and merged by the
 * replay at the end. Owned by the instance's thread until the run ends.
 */
final class Outcomes {
    int count;
    long[] ttftNs = new long[256];
    long[] tpotNs = new long[256];
    long[] e2eNs = new long[256];
    long[] queueNs = new long[256];
    long[] arrivalNs = new long[256];
    boolean[] tpotValid = new boolean[256];
    long lastFinishNs;
    /**
     * Prefill time of the requests admitted with a host hit: from the step that issued their load to the end of
     * their prefill (the queueing before that step is the same in both load modes and excluded).
     */
    int hostHitCount;
    long[] hostHitPrefillNs = new long[64];

    void add(ServedRequest q) {
        if (count == ttftNs.length) {
            int n = count * 2;
            ttftNs = Arrays.copyOf(ttftNs, n);
            tpotNs = Arrays.copyOf(tpotNs, n);
            e2eNs = Arrays.copyOf(e2eNs, n);
            queueNs = Arrays.copyOf(queueNs, n);
            arrivalNs = Arrays.copyOf(arrivalNs, n);
            tpotValid = Arrays.copyOf(tpotValid, n);
        }
        int out = Math.max(1, q.request.outputLength());
        ttftNs[count] = q.firstTokenNs - q.arrivalNs;
        e2eNs[count] = q.finishNs - q.arrivalNs;
        queueNs[count] = q.firstScheduledNs - q.arrivalNs;
        arrivalNs[count] = q.arrivalNs;
        tpotValid[count] = out > 1;
        tpotNs[count] = out > 1 ? (q.finishNs - q.firstTokenNs) / (out - 1) : 0;
        if (q.hostHitPages > 0) {
            if (hostHitCount == hostHitPrefillNs.length) {
                hostHitPrefillNs = Arrays.copyOf(hostHitPrefillNs, hostHitCount * 2);
            }
            hostHitPrefillNs[hostHitCount++] = q.firstTokenNs - q.hostHitStartNs;
        }
        count++;
        lastFinishNs = Math.max(lastFinishNs, q.finishNs);
    }
}
