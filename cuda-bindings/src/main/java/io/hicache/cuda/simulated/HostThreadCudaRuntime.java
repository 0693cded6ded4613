package io.hicache.cuda.simulated;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaError;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaException;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import static io.hicache.cuda.simulated.CallChecks.cudaException;
import static io.hicache.cuda.simulated.CallChecks.hex;

/**
 * A {@link CudaRuntime} for CPU engines and real-thread tests: the "device" is ordinary host memory,
 * each stream is a worker thread that runs its queued work in order, events complete when their stream's
 * worker reaches them, and copies move the bytes at memory speed when the worker runs them. Nothing is
 * simulated: time is wall-clock time and work takes as long as it takes.
 *
 * <p><b>Memory.</b> {@link #deviceMalloc} and {@link #hostAlloc} allocate zeroed, 64-byte-aligned native
 * memory from a shared {@link Arena} each; {@link #hostRegister} records a caller-owned range as pinned.
 * A copy's ranges must each lie inside one live allocation of the kind its {@link CopyKind} names
 * ({@link CopyKind#DEFAULT} infers the kind); {@link #deviceMemory} gives the CPU a view of device memory,
 * as a kernel of a CPU engine would write it.
 *
 * <p><b>Streams.</b> Handle 0 is a stream like any other (it has no legacy-default-stream barrier
 * semantics). Each stream queues up to {@value #QUEUE_CAPACITY} operations; a call that finds the queue
 * full blocks until the worker frees a slot, as a CUDA launch queue does. {@link #streamWaitEvent} waits for
 * the event's latest record at the time of the call; an event never recorded is complete.
 *
 * <p><b>Threads.</b> Safe to call from any thread. Submission takes the stream's lock, which orders the
 * caller's earlier writes before the worker's copy; an event completes (a volatile store) after the work
 * before it, so a thread that sees it complete sees that work's bytes. Host functions run on the stream's
 * worker and must not call this runtime. The hot-path calls allocate nothing: operations live in a
 * preallocated ring per stream and handles index arrays.
 *
 * <p><b>Failures.</b> Bad use (an unknown or destroyed handle, a copy outside an allocation or against its
 * kind, a bad size) throws {@link IllegalArgumentException} before anything is queued. A copy that fails
 * when it runs (its memory was freed meanwhile) puts the stream in error {@link CudaError#ILLEGAL_ADDRESS}:
 * that stream's later work is skipped, events recorded after it report the code from
 * {@link #queryEventStatus}, and {@link #synchronizeStream}/{@link #synchronizeEvent} throw
 * {@link CudaException}. An exception thrown by a host function is reported the same way with
 * {@link CudaError#LAUNCH_FAILURE}. Every call after {@link #close()} throws {@link IllegalStateException}.
 */
public final class HostThreadCudaRuntime implements CudaRuntime {
    /** Operations a stream's queue holds before a submitting call blocks. */
    public static final int QUEUE_CAPACITY = 4096;
    private static final long ALIGNMENT = 64;

    private final ReentrantLock lock = new ReentrantLock();
    /** Progress of every stream: signalled after each operation while a thread waits. */
    private final Condition progressed = lock.newCondition();
    private volatile int progressWaiters;

    private final MemoryTable regions = new MemoryTable();
    private volatile Worker[] streams = new Worker[8];
    private volatile Event[] events = new Event[64];
    private long nextStream = 1;
    private long nextEvent = 1;
    private volatile boolean closed;

    /** Creates the runtime and starts the worker of stream 0. */
    public HostThreadCudaRuntime() {
        streams[0] = new Worker(0);
    }

    // ------------------------------------------------------------------ identity

    @Override
    public int runtimeVersion() {
        return 13000;
    }

    @Override
    public int driverVersion() {
        return 13000;
    }

    @Override
    public int deviceCount() {
        return 1;
    }

    @Override
    public void setDevice(int device) {
        checkOpen("cudaSetDevice");
        if (device != 0) {
            throw cudaException(CudaError.INVALID_DEVICE.code(), "cudaSetDevice(" + device + ")");
        }
    }

    @Override
    public String errorName(int code) {
        return CudaErrorTexts.name(code);
    }

    @Override
    public String errorString(int code) {
        return CudaErrorTexts.description(code);
    }

    // ------------------------------------------------------------------ streams and events

    @Override
    public CudaStream createStream(int priority) {
        lock.lock();
        try {
            checkOpen("cudaStreamCreateWithPriority");
            long h = nextStream++;
            Worker[] s = streams;
            if (h >= s.length) {
                s = Arrays.copyOf(s, s.length * 2);
            }
            s[(int) h] = new Worker(h);
            streams = s;
            return new CudaStream(h);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void destroyStream(CudaStream stream) {
        Worker w;
        lock.lock();
        try {
            checkOpen("cudaStreamDestroy");
            w = worker(stream, "cudaStreamDestroy");
            if (w.handle == 0) {
                throw CallChecks.defaultStreamNotDestroyable();
            }
            streams[(int) w.handle] = null;
        } finally {
            lock.unlock();
        }
        w.stop(); // as CUDA: queued work still completes; the worker exits after it
    }

    @Override
    public void synchronizeStream(CudaStream stream) {
        checkOpen("cudaStreamSynchronize");
        Worker w = worker(stream, "cudaStreamSynchronize");
        awaitProgress(null, 0, w, w.submitted());
        if (w.errorCode != 0) {
            throw cudaException(w.errorCode, "cudaStreamSynchronize");
        }
    }

    @Override
    public void streamWaitEvent(CudaStream stream, CudaEvent event) {
        checkOpen("cudaStreamWaitEvent");
        Worker w = worker(stream, "cudaStreamWaitEvent");
        Event e = event(event, "cudaStreamWaitEvent");
        w.submitWait(e);
    }

    @Override
    public CudaEvent createEvent(boolean disableTiming) {
        lock.lock();
        try {
            checkOpen("cudaEventCreateWithFlags");
            long h = nextEvent++;
            Event[] es = events;
            if (h >= es.length) {
                es = Arrays.copyOf(es, es.length * 2);
            }
            es[(int) h] = new Event(h, !disableTiming);
            events = es;
            return new CudaEvent(h);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void destroyEvent(CudaEvent event) {
        lock.lock();
        try {
            checkOpen("cudaEventDestroy");
            Event e = event(event, "cudaEventDestroy");
            events[(int) e.handle] = null;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void recordEvent(CudaEvent event, CudaStream stream) {
        checkOpen("cudaEventRecord");
        Worker w = worker(stream, "cudaEventRecord");
        Event e = event(event, "cudaEventRecord");
        w.submitRecord(e);
    }

    @Override
    public int queryEventStatus(CudaEvent event) {
        checkOpen("cudaEventQuery");
        Event e = event(event, "cudaEventQuery");
        long recorded = e.recordGen;
        if (e.doneGen < recorded) {
            return CudaError.NOT_READY.code();
        }
        return e.errorCode;
    }

    @Override
    public void synchronizeEvent(CudaEvent event) {
        checkOpen("cudaEventSynchronize");
        Event e = event(event, "cudaEventSynchronize");
        awaitProgress(e, e.recordGen, null, 0);
        if (e.errorCode != 0) {
            throw cudaException(e.errorCode, "cudaEventSynchronize");
        }
    }

    @Override
    public float eventElapsedMs(CudaEvent start, CudaEvent end) {
        checkOpen("cudaEventElapsedTime");
        Event a = event(start, "cudaEventElapsedTime");
        Event b = event(end, "cudaEventElapsedTime");
        if (!a.timing || !b.timing) {
            throw cudaException(CudaError.INVALID_RESOURCE_HANDLE.code(), "cudaEventElapsedTime");
        }
        if (a.recordGen == 0 || b.recordGen == 0 || a.doneGen < a.recordGen || b.doneGen < b.recordGen) {
            throw cudaException(CudaError.NOT_READY.code(), "cudaEventElapsedTime");
        }
        return (b.doneNs - a.doneNs) / 1e6f;
    }

    // ------------------------------------------------------------------ memory

    @Override
    public long deviceMalloc(long bytes) {
        return allocate(bytes, MemoryRange.DEVICE, "cudaMalloc");
    }

    @Override
    public void deviceFree(long devicePtr) {
        release(devicePtr, MemoryRange.DEVICE, "cudaFree");
    }

    @Override
    public long hostAlloc(long bytes, int flags) {
        return allocate(bytes, MemoryRange.PINNED_HOST, "cudaHostAlloc");
    }

    @Override
    public void hostFree(long hostPtr) {
        release(hostPtr, MemoryRange.PINNED_HOST, "cudaFreeHost");
    }

    @Override
    @SuppressWarnings("restricted") // reinterpret: the caller vouches for [hostPtr, hostPtr + bytes), as with cudaHostRegister
    public void hostRegister(long hostPtr, long bytes, int flags) {
        lock.lock();
        try {
            checkOpen("cudaHostRegister");
            CallChecks.requireRegisterArgs(hostPtr, bytes);
            MemoryRange r = regions.containing(hostPtr, 1);
            if (r != null && r.device()) {
                throw new IllegalArgumentException("cudaHostRegister(" + hex(hostPtr) + "): a device pointer");
            }
            if (r != null || regions.overlaps(hostPtr, bytes)) {
                throw cudaException(CudaError.HOST_MEMORY_ALREADY_REGISTERED.code(), "cudaHostRegister(" + hex(hostPtr) + ")");
            }
            regions.insert(new MemoryRange(hostPtr, bytes, MemorySegment.ofAddress(hostPtr).reinterpret(bytes), null,
                MemoryRange.REGISTERED_HOST));
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void hostUnregister(long hostPtr) {
        lock.lock();
        try {
            checkOpen("cudaHostUnregister");
            MemoryRange r = regions.startingAt(hostPtr);
            if (r == null || r.kind != MemoryRange.REGISTERED_HOST) {
                throw cudaException(CudaError.HOST_MEMORY_NOT_REGISTERED.code(), "cudaHostUnregister(" + hex(hostPtr) + ")");
            }
            regions.remove(r);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public MemorySegment hostMemory(long hostPtr, long bytes) {
        checkOpen("hostMemory");
        MemoryRange r = regions.containing(hostPtr, bytes);
        if (r == null || r.device()) {
            throw new IllegalArgumentException("hostMemory(" + hex(hostPtr) + ", " + bytes
                + "): range is not inside one live pinned host allocation");
        }
        return r.segment.asSlice(hostPtr - r.base, bytes);
    }

    /**
     * The CPU's view of {@code bytes} of device memory at {@code devicePtr}: how a CPU engine's kernels read and
     * write KV. Writes through it are not ordered with streams; finish them before the hook or event that
     * publishes them. Valid until the allocation is freed.
     *
     * @throws IllegalArgumentException when the range is not inside one live device allocation
     */
    public MemorySegment deviceMemory(long devicePtr, long bytes) {
        checkOpen("deviceMemory");
        MemoryRange r = regions.containing(devicePtr, bytes);
        if (r == null || !r.device()) {
            throw new IllegalArgumentException("deviceMemory(" + hex(devicePtr) + ", " + bytes
                + "): range is not inside one live device allocation");
        }
        return r.segment.asSlice(devicePtr - r.base, bytes);
    }

    /** What a live range of this runtime's memory is. */
    public enum MemoryKind {
        /** From {@link #deviceMalloc}. */
        DEVICE,
        /** From {@link #hostAlloc}. */
        PINNED_HOST,
        /** Registered with {@link #hostRegister}; the caller owns it. */
        REGISTERED_HOST
    }

    /** A live allocation or registered range. */
    public record Allocation(long address, long bytes, MemoryKind kind) {
    }

    /** Every live allocation and registered range, by address: for leak checks and tests. Cold path. */
    public List<Allocation> liveAllocations() {
        List<Allocation> out = new ArrayList<>();
        for (MemoryRange r : regions.snapshot()) {
            out.add(new Allocation(r.base, r.bytes, MemoryKind.values()[r.kind]));
        }
        return out;
    }

    // ------------------------------------------------------------------ copies

    @Override
    public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) {
        memcpy2DAsync(dst, bytes, src, bytes, bytes, 1, kind, stream, "cudaMemcpyAsync");
    }

    @Override
    public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                              CopyKind kind, CudaStream stream) {
        memcpy2DAsync(dst, dstPitch, src, srcPitch, widthBytes, height, kind, stream, "cudaMemcpy2DAsync");
    }

    /** False: a batch is issued as one queued copy per range, in order. */
    @Override
    public boolean supportsBatchedCopy() {
        return false;
    }

    @Override
    public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) {
        checkOpen("cudaMemcpyBatchAsync");
        CallChecks.requireBatch(dsts, srcs, sizes, count, "cudaMemcpyBatchAsync");
        Worker w = worker(stream, "cudaMemcpyBatchAsync");
        for (int i = 0; i < count; i++) { // validate all before queueing any
            checkCopy(dsts[i], sizes[i], srcs[i], sizes[i], sizes[i], 1, kind, "cudaMemcpyBatchAsync");
        }
        for (int i = 0; i < count; i++) {
            if (sizes[i] == 0) {
                continue;
            }
            MemoryRange d = regions.containing(dsts[i], sizes[i]);
            MemoryRange s = regions.containing(srcs[i], sizes[i]);
            w.submitCopy(d, dsts[i] - d.base, sizes[i], s, srcs[i] - s.base, sizes[i], sizes[i], 1);
        }
    }

    @Override
    public void launchHostFunc(CudaStream stream, Runnable fn) {
        checkOpen("cudaLaunchHostFunc");
        if (fn == null) {
            throw new IllegalArgumentException("cudaLaunchHostFunc: fn must not be null");
        }
        worker(stream, "cudaLaunchHostFunc").submitHostFn(fn);
    }

    /**
     * Stops every stream after its queued work, then frees all memory allocated through this runtime (the
     * "device" is this object's memory). Idempotent.
     */
    @Override
    public void close() {
        Worker[] ws;
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            ws = streams.clone();
        } finally {
            lock.unlock();
        }
        for (Worker w : ws) {
            if (w != null) {
                w.stop();
            }
        }
        for (Worker w : ws) {
            if (w != null) {
                w.join();
            }
        }
        lock.lock();
        try {
            for (MemoryRange r : regions.snapshot()) {
                if (r.arena != null) {
                    r.arena.close();
                }
            }
            regions.clear();
        } finally {
            lock.unlock();
        }
    }

    // ------------------------------------------------------------------ internals

    private void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                               CopyKind kind, CudaStream stream, String call) {
        checkOpen(call);
        Worker w = worker(stream, call);
        checkCopy(dst, dstPitch, src, srcPitch, widthBytes, height, kind, call);
        if (widthBytes == 0 || height == 0) {
            return;
        }
        long dstSpan = dstPitch * (height - 1) + widthBytes;
        long srcSpan = srcPitch * (height - 1) + widthBytes;
        MemoryRange d = regions.containing(dst, dstSpan);
        MemoryRange s = regions.containing(src, srcSpan);
        w.submitCopy(d, dst - d.base, dstPitch, s, src - s.base, srcPitch, widthBytes, height);
    }

    private void checkCopy(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height, CopyKind kind,
                           String call) {
        if (kind == null) {
            throw new IllegalArgumentException(call + ": kind must not be null");
        }
        if (widthBytes < 0 || height < 0 || (height > 1 && (dstPitch < widthBytes || srcPitch < widthBytes))) {
            throw new IllegalArgumentException(call + ": need widthBytes >= 0, height >= 0 and pitches >= widthBytes, was "
                + widthBytes + ", " + height + ", " + dstPitch + ", " + srcPitch);
        }
        if (widthBytes == 0 || height == 0) {
            return;
        }
        long dstSpan = CallChecks.span(dstPitch, widthBytes, height, call);
        long srcSpan = CallChecks.span(srcPitch, widthBytes, height, call);
        MemoryRange d = regions.containing(dst, dstSpan);
        if (d == null) {
            throw CallChecks.notInside(call, "destination", dst, dstSpan);
        }
        MemoryRange s = regions.containing(src, srcSpan);
        if (s == null) {
            throw CallChecks.notInside(call, "source", src, srcSpan);
        }
        CallChecks.requireKindMatches(kind, dst, d.device(), src, s.device(), call);
    }

    private long allocate(long bytes, int kind, String call) {
        CallChecks.requirePositiveBytes(bytes, call);
        lock.lock();
        try {
            checkOpen(call);
            @SuppressWarnings("MustBeClosedChecker") // owned by the region's record, closed when it is freed
            Arena arena = Arena.ofShared();
            MemorySegment seg;
            try {
                seg = arena.allocate(bytes, ALIGNMENT);
            } catch (OutOfMemoryError | IllegalArgumentException e) { // no room, or more than the address space
                arena.close();
                throw cudaException(CudaError.MEMORY_ALLOCATION.code(), call + "(" + bytes + " bytes)");
            }
            regions.insert(new MemoryRange(seg.address(), bytes, seg, arena, kind));
            return seg.address();
        } finally {
            lock.unlock();
        }
    }

    private void release(long ptr, int kind, String call) {
        lock.lock();
        try {
            checkOpen(call);
            MemoryRange r = regions.startingAt(ptr);
            if (r == null || r.kind != kind) {
                throw new IllegalArgumentException(call + "(" + hex(ptr) + "): not the start of a live "
                    + (kind == MemoryRange.DEVICE ? "device" : "host") + " allocation");
            }
            regions.remove(r);
            r.arena.close(); // a copy still queued against it fails when it runs: ILLEGAL_ADDRESS on its stream
        } finally {
            lock.unlock();
        }
    }

    private Worker worker(CudaStream stream, String call) {
        if (stream == null) {
            throw new IllegalArgumentException(call + ": stream must not be null");
        }
        Worker[] s = streams;
        long h = stream.handle();
        Worker w = h >= 0 && h < s.length ? s[(int) h] : null;
        if (w == null) {
            throw CallChecks.unknownStream(call, h);
        }
        return w;
    }

    private Event event(CudaEvent event, String call) {
        if (event == null) {
            throw new IllegalArgumentException(call + ": event must not be null");
        }
        Event[] es = events;
        long h = event.handle();
        Event e = h > 0 && h < es.length ? es[(int) h] : null;
        if (e == null) {
            throw CallChecks.unknownEvent(call, h);
        }
        return e;
    }

    private void checkOpen(String call) {
        if (closed) {
            throw CallChecks.closed(call, "HostThreadCudaRuntime");
        }
    }

    private static boolean reached(Event e, long gen, Worker w, long completed) {
        return e != null ? e.doneGen >= gen : w.completed >= completed;
    }

    /**
     * Blocks the calling thread until event {@code e} completed record {@code gen} or, with {@code e} null,
     * stream {@code w} completed {@code completed} operations; woken after each operation of any stream.
     * Allocation-free.
     */
    private void awaitProgress(Event e, long gen, Worker w, long completed) {
        if (reached(e, gen, w, completed)) {
            return;
        }
        lock.lock();
        try {
            progressWaiters++;
            while (!reached(e, gen, w, completed)) {
                // the timeout is only a backstop; completions signal
                progressed.await(1, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the device", ex);
        } finally {
            progressWaiters--;
            lock.unlock();
        }
    }

    private void signalProgress() {
        if (progressWaiters > 0) {
            lock.lock();
            try {
                progressed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** An event: records are numbered by the submitting side, completions by the workers. */
    private static final class Event {
        final long handle;
        final boolean timing;
        volatile long recordGen;
        volatile long doneGen;
        volatile long doneNs;
        volatile int errorCode;

        Event(long handle, boolean timing) {
            this.handle = handle;
            this.timing = timing;
        }
    }

    private static final int OP_COPY = 1;
    private static final int OP_RECORD = 2;
    private static final int OP_WAIT = 3;
    private static final int OP_HOST_FN = 4;

    /** One queued operation; a slot of a worker's ring, reused. */
    private static final class Op {
        int type;
        MemoryRange dst;
        long dstOff;
        long dstPitch;
        MemoryRange src;
        long srcOff;
        long srcPitch;
        long width;
        long height;
        Event event;
        long gen;
        Runnable fn;

        void clear() {
            dst = null;
            src = null;
            event = null;
            fn = null;
        }
    }

    /** A stream: a ring of operations filled by callers under its lock and run in order by its own thread. */
    private final class Worker implements Runnable {
        final long handle;
        final Op[] ring = new Op[QUEUE_CAPACITY];
        final ReentrantLock qLock = new ReentrantLock();
        final Condition notEmpty = qLock.newCondition();
        final Condition notFull = qLock.newCondition();
        final Thread thread;
        long head; // next op to run; written by the worker under qLock
        long tail; // next free slot; written by submitters under qLock
        boolean stopping;
        volatile long completed;
        volatile int errorCode;

        Worker(long handle) {
            this.handle = handle;
            for (int i = 0; i < ring.length; i++) {
                ring[i] = new Op();
            }
            this.thread = Thread.ofPlatform().daemon().name("hicache-host-stream-" + handle).start(this);
        }

        long submitted() {
            qLock.lock();
            try {
                return tail;
            } finally {
                qLock.unlock();
            }
        }

        private Op claim() {
            while (tail - head == ring.length) {
                notFull.awaitUninterruptibly();
            }
            return ring[(int) (tail % ring.length)];
        }

        private void publish() {
            tail++;
            notEmpty.signal();
        }

        void submitCopy(MemoryRange d, long dOff, long dPitch, MemoryRange s, long sOff, long sPitch, long width, long height) {
            qLock.lock();
            try {
                Op op = claim();
                op.type = OP_COPY;
                op.dst = d;
                op.dstOff = dOff;
                op.dstPitch = dPitch;
                op.src = s;
                op.srcOff = sOff;
                op.srcPitch = sPitch;
                op.width = width;
                op.height = height;
                publish();
            } finally {
                qLock.unlock();
            }
        }

        void submitRecord(Event e) {
            qLock.lock();
            try {
                Op op = claim();
                op.type = OP_RECORD;
                op.event = e;
                synchronized (e) {
                    op.gen = e.recordGen + 1;
                    e.recordGen = op.gen;
                }
                publish();
            } finally {
                qLock.unlock();
            }
        }

        void submitWait(Event e) {
            qLock.lock();
            try {
                Op op = claim();
                op.type = OP_WAIT;
                op.event = e;
                op.gen = e.recordGen;
                publish();
            } finally {
                qLock.unlock();
            }
        }

        void submitHostFn(Runnable fn) {
            qLock.lock();
            try {
                Op op = claim();
                op.type = OP_HOST_FN;
                op.fn = fn;
                publish();
            } finally {
                qLock.unlock();
            }
        }

        void stop() {
            qLock.lock();
            try {
                stopping = true;
                notEmpty.signal();
            } finally {
                qLock.unlock();
            }
        }

        void join() {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void run() {
            while (true) {
                Op op;
                qLock.lock();
                try {
                    while (head == tail && !stopping) {
                        notEmpty.awaitUninterruptibly();
                    }
                    if (head == tail) {
                        return;
                    }
                    op = ring[(int) (head % ring.length)];
                } finally {
                    qLock.unlock();
                }
                execute(op);
                qLock.lock();
                try {
                    op.clear();
                    head++;
                    completed = head;
                    notFull.signal();
                } finally {
                    qLock.unlock();
                }
                signalProgress(); // a volatile read unless someone waits
            }
        }

        private void execute(Op op) {
            switch (op.type) {
                case OP_COPY -> {
                    if (errorCode != 0) {
                        return;
                    }
                    try {
                        for (long r = 0; r < op.height; r++) {
                            MemorySegment.copy(op.src.segment, op.srcOff + r * op.srcPitch, op.dst.segment,
                                op.dstOff + r * op.dstPitch, op.width);
                        }
                    } catch (IllegalStateException | IndexOutOfBoundsException e) {
                        errorCode = CudaError.ILLEGAL_ADDRESS.code(); // the memory was freed while the copy was queued
                    }
                }
                case OP_RECORD -> {
                    Event e = op.event;
                    e.errorCode = errorCode;
                    e.doneNs = System.nanoTime();
                    synchronized (e) {
                        if (e.doneGen < op.gen) {
                            e.doneGen = op.gen;
                        }
                    }
                }
                case OP_WAIT -> {
                    awaitProgress(op.event, op.gen, null, 0);
                }
                case OP_HOST_FN -> {
                    if (errorCode != 0) {
                        return;
                    }
                    try {
                        op.fn.run();
                    } catch (RuntimeException | Error e) {
                        errorCode = CudaError.LAUNCH_FAILURE.code();
                    }
                }
                default -> throw new IllegalStateException("unknown op " + op.type);
            }
        }
    }
}
