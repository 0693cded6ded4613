package io.hicache.cuda.simulated;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The simulated device's use-after-free check: ranges retired (freed or handed to a new owner) while copies
 * issued before were still queued, and the copies that then touched them. Off by default. Guarded by the
 * runtime's lock; allocation-free unless it grows or reports.
 */
final class UseAfterFreeCheck {
    private static final int MAX_REPORTS = 16;

    private boolean enabled;
    private long[] retiredFrom = new long[64];
    private long[] retiredTo = new long[64];
    private long[] retiredSeq = new long[64];
    private int retiredCount;
    private long count;
    private final ArrayList<String> reports = new ArrayList<>();

    boolean enabled() {
        return enabled;
    }

    void enable(boolean on) {
        enabled = on;
        if (!on) {
            retiredCount = 0;
        }
    }

    /** Records {@code [address, address + bytes)} retired after op {@code lastSeq}, while copies are queued. */
    void retire(long address, long bytes, long lastSeq, long queuedCopies) {
        if (!enabled || bytes <= 0) {
            return;
        }
        if (queuedCopies == 0) {
            retiredCount = 0; // nothing issued before can run any more
            return;
        }
        if (retiredCount == retiredFrom.length) {
            int cap = retiredCount * 2;
            retiredFrom = Arrays.copyOf(retiredFrom, cap);
            retiredTo = Arrays.copyOf(retiredTo, cap);
            retiredSeq = Arrays.copyOf(retiredSeq, cap);
        }
        retiredFrom[retiredCount] = address;
        retiredTo[retiredCount] = address + bytes;
        retiredSeq[retiredCount] = lastSeq;
        retiredCount++;
    }

    /** Checks copy {@code op} completing at {@code nowNs}; {@code queuedCopies} are still queued after it. */
    void onCopyCompleted(SimOp op, long nowNs, long queuedCopies) {
        if (retiredCount > 0) {
            check(op, nowNs);
            if (queuedCopies == 0) {
                retiredCount = 0;
            }
        }
    }

    long count() {
        return count;
    }

    List<String> reports() {
        return List.copyOf(reports);
    }

    /** Reports {@code op} if any row it reads or writes lies in a range retired after it was issued. */
    private void check(SimOp op, long nowNs) {
        for (int i = 0; i < op.segCount; i++) {
            long width = op.width[i];
            for (long row = 0; row < op.height[i] && width > 0; row++) {
                long dst = op.dstAddress(i) + row * op.dstPitch[i];
                long src = op.srcAddress(i) + row * op.srcPitch[i];
                for (int r = 0; r < retiredCount; r++) {
                    if (retiredSeq[r] < op.seq) {
                        continue; // retired before the copy was issued: the issuer may own it again
                    }
                    boolean dstHit = dst < retiredTo[r] && retiredFrom[r] < dst + width;
                    boolean srcHit = src < retiredTo[r] && retiredFrom[r] < src + width;
                    if (dstHit || srcHit) {
                        count++;
                        if (reports.size() < MAX_REPORTS) {
                            reports.add("copy op " + op.seq + " " + CallChecks.kindOf(op.direction) + " ran at " + nowNs
                                    + " ns and " + (dstHit ? "wrote " + CallChecks.hex(dst) : "read " + CallChecks.hex(src))
                                    + " +" + width + " inside [" + CallChecks.hex(retiredFrom[r]) + ", "
                                    + CallChecks.hex(retiredTo[r]) + "), retired after op " + retiredSeq[r]
                                    + " while the copy was queued");
                        }
                        return;
                    }
                }
            }
        }
    }
}
