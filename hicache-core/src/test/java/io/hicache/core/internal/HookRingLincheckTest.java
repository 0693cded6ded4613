package io.hicache.core.internal;

import io.hicache.cuda.CopyKind;
import io.hicache.cuda.CudaEvent;
import io.hicache.cuda.CudaRuntime;
import io.hicache.cuda.CudaStream;
import org.jetbrains.lincheck.datastructures.IntGen;
import org.jetbrains.lincheck.datastructures.ModelCheckingOptions;
import org.jetbrains.lincheck.datastructures.Operation;
import org.jetbrains.lincheck.datastructures.Param;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

/**
 * Lincheck model check of the hook hand-off: the real {@link ForwardHandle} on the forward thread publishes
 * (layer, event) into the controller's {@link HookRing} (a multi-producer Disruptor ring), and the submitter's side polls
 * it with {@link HookRing#poll}, as {@link SubmitterAgent#doWork()} does. The poller must see every published
 * hook exactly once, in order, with the fields the forward thread wrote (no torn or stale event).
 */
@Param(name = "layer", gen = IntGen.class, conf = "0:3")
public class HookRingLincheckTest {
    private static final int LAYERS = 4;

    private final HookRing ring = new HookRing(1, 16);
    private final ForwardSlot slot = new ForwardSlot(0, new CudaEvent[LAYERS], new CudaEvent[LAYERS],
        new CudaEvent(1), new CudaEvent(2), new CudaEvent[2 * LAYERS]);
    private final ForwardHandle handle;
    private final StringBuilder seen = new StringBuilder();
    private final HookRing.Handler onHook = e -> {
        seen.append(e.kind).append(':').append(e.layer).append(e.slotIndex == slot.index && e.generation == 7 ? "" : "!").append(' ');
        return true;
    };

    public HookRingLincheckTest() {
        slot.reset(7);
        slot.hasDraft = true;
        handle = new ForwardHandle(slot, new NoOpRuntime(), CudaStream.DEFAULT, ring, LAYERS, LAYERS);
        handle.begin(7);
    }

    @Operation(nonParallelGroup = "forward")
    public void targetLayerStored(@Param(name = "layer") int layer) {
        handle.targetLayerStored(layer);
    }

    @Operation(nonParallelGroup = "forward")
    public void draftLayerStored(@Param(name = "layer") int layer) {
        handle.draftLayerStored(layer);
    }

    @Operation(nonParallelGroup = "forward")
    public void endForward() {
        handle.endForward();
    }

    @Operation(nonParallelGroup = "submitter")
    public String poll() throws Exception {
        seen.setLength(0);
        ring.poll(onHook);
        return seen.toString();
    }

    @Test
    void modelCheck() {
        // No init or post part: the forward's hooks are the actors of one thread, as an engine calls them.
        new ModelCheckingOptions().iterations(30).invocationsPerIteration(300).threads(2).actorsPerThread(5)
            .actorsBefore(0).actorsAfter(0).check(getClass());
    }

    /** A runtime whose every call succeeds and does nothing: the hooks only record events on it. */
    static final class NoOpRuntime implements CudaRuntime {
        @Override public int runtimeVersion() { return 0; }
        @Override public int driverVersion() { return 0; }
        @Override public int deviceCount() { return 1; }
        @Override public void setDevice(int device) { }
        @Override public String errorName(int code) { return "cudaError" + code; }
        @Override public String errorString(int code) { return "error " + code; }
        @Override public CudaStream createStream(int priority) { return new CudaStream(1); }
        @Override public void destroyStream(CudaStream stream) { }
        @Override public void synchronizeStream(CudaStream stream) { }
        @Override public void streamWaitEvent(CudaStream stream, CudaEvent event) { }
        @Override public CudaEvent createEvent(boolean disableTiming) { return new CudaEvent(1); }
        @Override public void destroyEvent(CudaEvent event) { }
        @Override public void recordEvent(CudaEvent event, CudaStream stream) { }
        @Override public int queryEventStatus(CudaEvent event) { return 0; }
        @Override public void synchronizeEvent(CudaEvent event) { }
        @Override public float eventElapsedMs(CudaEvent start, CudaEvent end) { return 0f; }
        @Override public long deviceMalloc(long bytes) { return 0; }
        @Override public void deviceFree(long devicePtr) { }
        @Override public long hostAlloc(long bytes, int flags) { return 0; }
        @Override public void hostFree(long hostPtr) { }
        @Override public void hostRegister(long hostPtr, long bytes, int flags) { }
        @Override public void hostUnregister(long hostPtr) { }
        @Override public MemorySegment hostMemory(long hostPtr, long bytes) { return MemorySegment.NULL; }
        public MemorySegment deviceMemory(long devicePtr, long bytes) { return MemorySegment.NULL; }
        @Override public void memcpyAsync(long dst, long src, long bytes, CopyKind kind, CudaStream stream) { }
        @Override
        public void memcpy2DAsync(long dst, long dstPitch, long src, long srcPitch, long widthBytes, long height,
                                  CopyKind kind, CudaStream stream) { }
        @Override public boolean supportsBatchedCopy() { return false; }
        @Override public void memcpyBatchAsync(long[] dsts, long[] srcs, long[] sizes, int count, CopyKind kind, CudaStream stream) { }
        @Override public void launchHostFunc(CudaStream stream, Runnable fn) { }
        @Override public void close() { }
    }
}
