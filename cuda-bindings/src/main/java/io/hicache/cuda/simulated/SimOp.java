package io.hicache.cuda.simulated;

import java.util.Arrays;

/**
 * One queued operation of the simulated device: a copy (one or more ranges), a kernel, an event record, a
 * stream wait or a host function. Pooled by {@link VirtualClockDriver}: copy ranges live in parallel arrays
 * that grow and are kept, so a steady state allocates nothing. Guarded by the runtime's lock.
 */
final class SimOp {
    int type;
    long seq;
    int engine = -1;
    long durationNs;
    long startNs;
    long endNs;
    int failCode;
    /** The copy's direction, a {@link io.hicache.cuda.CopyKind#value()} 0 to 3. */
    int direction;
    long bytes;
    SimStream stream;
    SimEvent event;
    SimStream waitStream;
    long waitSeq;
    Runnable fn;
    int segCount;
    MemoryRange[] dst = new MemoryRange[1];
    long[] dstOff = new long[1];
    long[] dstPitch = new long[1];
    MemoryRange[] src = new MemoryRange[1];
    long[] srcOff = new long[1];
    long[] srcPitch = new long[1];
    long[] width = new long[1];
    long[] height = new long[1];

    void ensureSegments(int n) {
        if (dst.length < n) {
            int cap = Math.max(n, dst.length * 2);
            dst = Arrays.copyOf(dst, cap);
            dstOff = Arrays.copyOf(dstOff, cap);
            dstPitch = Arrays.copyOf(dstPitch, cap);
            src = Arrays.copyOf(src, cap);
            srcOff = Arrays.copyOf(srcOff, cap);
            srcPitch = Arrays.copyOf(srcPitch, cap);
            width = Arrays.copyOf(width, cap);
            height = Arrays.copyOf(height, cap);
        }
    }

    void copySegmentFrom(SimOp other, int from, int to) {
        dst[to] = other.dst[from];
        dstOff[to] = other.dstOff[from];
        dstPitch[to] = other.dstPitch[from];
        src[to] = other.src[from];
        srcOff[to] = other.srcOff[from];
        srcPitch[to] = other.srcPitch[from];
        width[to] = other.width[from];
        height[to] = other.height[from];
    }

    /** Device address of range {@code i}'s first destination byte. */
    long dstAddress(int i) {
        return dst[i].base + dstOff[i];
    }

    /** Device address of range {@code i}'s first source byte. */
    long srcAddress(int i) {
        return src[i].base + srcOff[i];
    }

    void reset() {
        for (int i = 0; i < segCount; i++) {
            dst[i] = null;
            src[i] = null;
        }
        segCount = 0;
        stream = null;
        event = null;
        waitStream = null;
        fn = null;
        failCode = 0;
        bytes = 0;
        waitSeq = 0;
        durationNs = 0;
    }
}
