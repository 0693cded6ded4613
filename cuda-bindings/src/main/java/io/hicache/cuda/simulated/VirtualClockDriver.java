package io.hicache.cuda.simulated;

import io.hicache.cuda.CudaError;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;

import static io.hicache.cuda.simulated.SimulatedCudaRuntime.OP_COPY;
import static io.hicache.cuda.simulated.SimulatedCudaRuntime.OP_HOST_FUNC;
import static io.hicache.cuda.simulated.SimulatedCudaRuntime.OP_KERNEL;
import static io.hicache.cuda.simulated.SimulatedCudaRuntime.OP_RECORD;
import static io.hicache.cuda.simulated.SimulatedCudaRuntime.OP_WAIT;

/**
 * The simulated device's discrete-event driver: the virtual clock, the stream FIFOs and their heads, the
 * copy and compute engines, and completion in (end time, submission order). It times and queues validated
 * operations, completes them as the clock moves (moving the real bytes, completing events, running host
 * functions, failing what the {@link FaultInjector} decided) and drops all queued work on a sticky error.
 *
 * <p>Guarded by the runtime's lock: every method runs under it. Operation records are pooled, so submitting,
 * completing and advancing allocate nothing in steady state.
 */
final class VirtualClockDriver {
    static final int ENGINE_COMPUTE = 0;
    private static final int ENGINE_H2D = 1;
    private static final int ENGINE_D2H = 2;
    private static final int ENGINE_D2D = 3;

    private final SimulatedCudaConfig config;
    /** {@link SimulatedCudaConfig#moveBytes()}, read on every copy completion. */
    private final boolean moveBytes;
    private final FaultInjector faults;
    private final UseAfterFreeCheck useAfterFree;
    private final SimCounters counters;
    /** Streams with queued work or live handles (the default stream, live ones, destroyed ones draining). */
    private final ArrayList<SimStream> activeStreams = new ArrayList<>();
    private final Engine[] engines = new Engine[4];
    private final ArrayDeque<SimOp> opPool = new ArrayDeque<>();
    private final StreamHeap heap = new StreamHeap();
    private long nowNs;
    private int stickyCode;
    private boolean inHostFunc;
    private SimulatedCudaRuntime.OpListener listener;

    VirtualClockDriver(SimulatedCudaConfig config, FaultInjector faults, UseAfterFreeCheck useAfterFree,
                       SimCounters counters) {
        this.config = config;
        this.moveBytes = config.moveBytes();
        this.faults = faults;
        this.useAfterFree = useAfterFree;
        this.counters = counters;
        for (int i = 0; i < engines.length; i++) {
            engines[i] = new Engine();
        }
    }

    long nowNs() {
        return nowNs;
    }

    /** The sticky error poisoning the context, or 0. */
    int stickyCode() {
        return stickyCode;
    }

    /** True while a host function runs (it must not call the runtime). */
    boolean inHostFunc() {
        return inHostFunc;
    }

    void setListener(SimulatedCudaRuntime.OpListener listener) {
        this.listener = listener;
    }

    /** Starts tracking a stream (the default one, or one just created). */
    void track(SimStream s) {
        activeStreams.add(s);
    }

    /** Marks {@code s} destroyed; its queued work still runs, as in CUDA, and it is forgotten once drained. */
    void destroy(SimStream s) {
        s.destroyed = true;
        if (s.queue.isEmpty()) {
            activeStreams.remove(s);
        }
    }

    // ------------------------------------------------------------------ submission

    SimOp obtainOp(int type) {
        SimOp op = opPool.pollFirst();
        if (op == null) {
            op = new SimOp();
        }
        op.type = type;
        op.engine = -1;
        return op;
    }

    void recycle(SimOp op) {
        op.reset();
        opPool.addFirst(op);
    }

    /** Queues a kernel of {@code nanos} on the compute engine. */
    void submitKernel(SimStream s, long nanos) {
        SimOp op = obtainOp(OP_KERNEL);
        op.engine = ENGINE_COMPUTE;
        op.durationNs = nanos;
        op.failCode = faults.workOpFault(counters.increment(SimCounter.WORK_OPS_ISSUED));
        submit(s, op);
    }

    /** Times, fault-decides and queues a validated copy. Only now does state change. */
    void submitCopy(SimStream s, SimOp op) {
        long bytes = 0;
        for (int i = 0; i < op.segCount; i++) {
            bytes += op.width[i] * op.height[i];
        }
        op.bytes = bytes;
        long bandwidth;
        switch (op.direction) {
            case CallChecks.HOST_TO_DEVICE -> {
                op.engine = ENGINE_H2D;
                bandwidth = config.hostToDeviceBytesPerSecond();
            }
            case CallChecks.DEVICE_TO_HOST -> {
                op.engine = config.sharedPcieLink() ? ENGINE_H2D : ENGINE_D2H;
                bandwidth = config.deviceToHostBytesPerSecond();
            }
            default -> {
                op.engine = ENGINE_D2D;
                bandwidth = config.deviceToDeviceBytesPerSecond();
            }
        }
        long durationNs = saturatingAdd(config.copyLaunchLatencyNs(), transferNs(bytes, bandwidth));
        int failCode = faults.copyFault(op, faults.workOpFault(counters.increment(SimCounter.WORK_OPS_ISSUED)));
        op.durationNs = faults.delayed(durationNs);
        op.failCode = failCode;
        for (int i = 0; i < op.segCount; i++) {
            op.dst[i].pendingOps++;
            op.src[i].pendingOps++;
        }
        submit(s, op);
    }

    void submit(SimStream s, SimOp op) {
        op.seq = counters.increment(SimCounter.OPS_ISSUED);
        if (op.type == OP_COPY) {
            counters.increment(SimCounter.QUEUED_COPIES);
        }
        op.stream = s;
        s.queue.addLast(op);
        if (s.queue.size() == 1) {
            kick(s);
        }
    }

    /** Exact {@code ceil(bytes * 1e9 / bytesPerSecond)}. */
    static long transferNs(long bytes, long bytesPerSecond) {
        if (bytes <= Long.MAX_VALUE / 1_000_000_000L) {
            return Math.ceilDiv(bytes * 1_000_000_000L, bytesPerSecond);
        }
        double ns = Math.ceil(bytes * 1.0e9 / bytesPerSecond);
        return ns >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) ns;
    }

    static long saturatingAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    // ------------------------------------------------------------------ the clock

    /** When the next queued operation completes, or {@link Long#MAX_VALUE} when nothing is running. */
    long nextEventTimeNs() {
        return heap.nextEndNs();
    }

    /** Completes everything due at or before {@code tNs}, then sets the clock there. */
    void advanceTo(long tNs) {
        if (tNs < nowNs) {
            throw new IllegalArgumentException("advanceTo(" + tNs + "): the clock only moves forward; now is " + nowNs);
        }
        while (heap.dueBy(tNs)) {
            completeNext();
        }
        nowNs = tNs;
    }

    /** Advances to the next completion and completes what is due then; false when nothing was running. */
    boolean advanceToNextEvent() {
        if (heap.size() == 0) {
            return false;
        }
        long t = heap.nextEndNs();
        while (heap.dueBy(t)) {
            completeNext();
        }
        nowNs = t;
        return true;
    }

    /** Completes everything; true when any operation completed. */
    boolean runUntilIdle() {
        boolean any = false;
        while (heap.size() > 0) {
            completeNext();
            any = true;
        }
        return any;
    }

    /** Completes what is due next, for a synchronising call that waits; throws when nothing can complete. */
    void stepOrDeadlock(String call) {
        if (heap.size() == 0) {
            throw new IllegalStateException(call + ": waits for work that can never complete (nothing is running)");
        }
        long t = heap.nextEndNs();
        while (heap.dueBy(t)) {
            completeNext();
        }
        nowNs = Math.max(nowNs, t);
    }

    /** True when no stream has queued work. */
    boolean idle() {
        for (int i = 0, n = activeStreams.size(); i < n; i++) {
            if (!activeStreams.get(i).queue.isEmpty()) {
                return false;
            }
        }
        return true;
    }

    // ------------------------------------------------------------------ scheduling

    /** Starts the head of {@code s} if it is not started: on its engine, blocked on a wait, or zero-time. */
    private void kick(SimStream s) {
        if (s.headState != SimStream.HEAD_IDLE) {
            return;
        }
        SimOp op = s.queue.peekFirst();
        if (op == null) {
            if (s.destroyed) {
                activeStreams.remove(s);
            }
            return;
        }
        switch (op.type) {
            case OP_COPY, OP_KERNEL -> {
                Engine engine = engines[op.engine];
                if (engine.current == null) {
                    startOnEngine(engine, s, op);
                } else {
                    engine.waiting.addLast(s);
                    s.headState = SimStream.HEAD_WAITING_ENGINE;
                }
            }
            case OP_WAIT -> {
                SimStream w = op.waitStream;
                if (w == null || w.lastCompletedSeq >= op.waitSeq) {
                    startZeroTime(s, op);
                } else {
                    w.waiters.add(s);
                    s.headState = SimStream.HEAD_BLOCKED;
                }
            }
            default -> startZeroTime(s, op);
        }
    }

    private void startOnEngine(Engine engine, SimStream s, SimOp op) {
        engine.current = op;
        op.startNs = nowNs;
        op.endNs = saturatingAdd(nowNs, op.durationNs);
        s.headState = SimStream.HEAD_IN_FLIGHT;
        heap.push(s);
    }

    private void startZeroTime(SimStream s, SimOp op) {
        op.startNs = nowNs;
        op.endNs = nowNs;
        s.headState = SimStream.HEAD_IN_FLIGHT;
        heap.push(s);
    }

    /** Completes the earliest due operation and starts what it unblocks. */
    private void completeNext() {
        SimStream s = heap.pop();
        SimOp op = s.queue.pollFirst();
        nowNs = Math.max(nowNs, op.endNs);
        s.headState = SimStream.HEAD_IDLE;
        s.lastCompletedSeq = op.seq;
        counters.increment(SimCounter.OPS_COMPLETED);
        Throwable hostFuncFailure = null;
        int failCode = op.failCode;
        switch (op.type) {
            case OP_COPY -> {
                counters.decrement(SimCounter.QUEUED_COPIES);
                useAfterFree.onCopyCompleted(op, nowNs, counters.get(SimCounter.QUEUED_COPIES));
                if (moveBytes) {
                    copyBytes(op, failCode == 0 ? op.bytes : op.bytes / 2);
                }
                if (failCode == 0) {
                    counters.add(SimCounter.bytesCopied(op.direction), op.bytes);
                }
            }
            case OP_RECORD -> {
                SimEvent e = op.event;
                if (!e.destroyed && e.recordSeq == op.seq) {
                    e.completedNs = nowNs;
                    e.status = s.errorCode != 0 && op.seq <= s.errorCoversUpToSeq ? s.errorCode : 0;
                }
            }
            case OP_HOST_FUNC -> {
                inHostFunc = true;
                try {
                    op.fn.run();
                } catch (RuntimeException | Error ex) {
                    hostFuncFailure = ex;
                } finally {
                    inHostFunc = false;
                }
            }
            default -> {
                // kernels and waits have no effect beyond time
            }
        }
        if (failCode != 0) {
            counters.increment(SimCounter.OPS_FAILED);
            s.errorCode = failCode;
            s.errorCoversUpToSeq = counters.get(SimCounter.OPS_ISSUED);
            s.syncErrorCode = failCode;
        }
        SimulatedCudaRuntime.OpListener l = listener;
        if (l != null) {
            l.onComplete(op.seq, op.type, s.handle, op.startNs, op.endNs, failCode);
        }
        if (op.engine >= 0) {
            Engine engine = engines[op.engine];
            engine.current = null;
            SimStream next = engine.waiting.pollFirst();
            if (next != null) {
                startOnEngine(engine, next, next.queue.peekFirst());
            }
        }
        releaseRefs(op);
        recycle(op);
        if (failCode != 0 && CudaError.of(failCode).sticky()) {
            poison(failCode);
        } else {
            wakeWaiters(s);
            kick(s);
        }
        if (hostFuncFailure instanceof RuntimeException re) {
            throw re;
        }
        if (hostFuncFailure instanceof Error err) {
            throw err;
        }
    }

    /** Starts the blocked waits of other streams that {@code s}'s progress satisfied. */
    private void wakeWaiters(SimStream s) {
        ArrayList<SimStream> waiters = s.waiters;
        for (int i = 0; i < waiters.size(); ) {
            SimStream w = waiters.get(i);
            SimOp head = w.queue.peekFirst();
            if (s.lastCompletedSeq >= head.waitSeq) {
                int last = waiters.size() - 1;
                waiters.set(i, waiters.get(last));
                waiters.remove(last);
                startZeroTime(w, head);
            } else {
                i++;
            }
        }
    }

    /** Copies the first {@code budgetBytes} of the op's ranges, row by row, in range order. */
    private static void copyBytes(SimOp op, long budgetBytes) {
        long left = budgetBytes;
        for (int i = 0; i < op.segCount && left > 0; i++) {
            MemorySegment dst = op.dst[i].segment;
            MemorySegment src = op.src[i].segment;
            long width = op.width[i];
            long dstOff = op.dstOff[i];
            long srcOff = op.srcOff[i];
            if (width == 0) {
                continue;
            }
            if (op.height[i] == 1 || (op.dstPitch[i] == width && op.srcPitch[i] == width)) {
                long n = Math.min(left, width * op.height[i]);
                MemorySegment.copy(src, srcOff, dst, dstOff, n);
                left -= n;
                continue;
            }
            for (long row = 0; row < op.height[i] && left > 0; row++) {
                long n = Math.min(left, width);
                MemorySegment.copy(src, srcOff + row * op.srcPitch[i], dst, dstOff + row * op.dstPitch[i], n);
                left -= n;
            }
        }
    }

    private static void releaseRefs(SimOp op) {
        if (op.type == OP_COPY) {
            for (int i = 0; i < op.segCount; i++) {
                op.dst[i].pendingOps--;
                op.src[i].pendingOps--;
            }
        }
    }

    /** Poisons the context with sticky {@code code} and drops all queued work. */
    void poison(int code) {
        stickyCode = code;
        dropAllWork();
    }

    /** Drops every queued operation unfinished: no bytes move, no events complete. */
    void dropAllWork() {
        for (int i = 0, n = activeStreams.size(); i < n; i++) {
            SimStream s = activeStreams.get(i);
            SimOp op;
            while ((op = s.queue.pollFirst()) != null) {
                counters.increment(SimCounter.OPS_DROPPED);
                if (op.type == OP_COPY) {
                    counters.decrement(SimCounter.QUEUED_COPIES);
                }
                releaseRefs(op);
                recycle(op);
            }
            s.headState = SimStream.HEAD_IDLE;
            s.heapIndex = -1;
            s.waiters.clear();
        }
        for (int i = activeStreams.size() - 1; i >= 0; i--) {
            if (activeStreams.get(i).destroyed) {
                activeStreams.remove(i);
            }
        }
        for (Engine engine : engines) {
            engine.current = null;
            engine.waiting.clear();
        }
        heap.clear();
    }

    /** Forgets every stream (after {@link #dropAllWork}, at close). */
    void forgetStreams() {
        activeStreams.clear();
    }

    /** A copy engine or the compute unit: runs one operation at a time, waiting streams first come first served. */
    private static final class Engine {
        SimOp current;
        final ArrayDeque<SimStream> waiting = new ArrayDeque<>();
    }
}
